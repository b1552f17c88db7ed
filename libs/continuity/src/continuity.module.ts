import { Module } from '@nestjs/common';
import { ContinuityService } from './continuity.service';

@Module({ providers: [ContinuityService], exports: [ContinuityService] })
export class ContinuityModule {}
