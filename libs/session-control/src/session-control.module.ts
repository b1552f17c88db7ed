import { Module } from '@nestjs/common';
import { SessionControlService } from './session-control.service';

@Module({ providers: [SessionControlService], exports: [SessionControlService] })
export class SessionControlModule {}
