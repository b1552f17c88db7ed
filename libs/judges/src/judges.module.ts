import { Module } from '@nestjs/common';
import { JudgesService } from './judges.service';

@Module({ providers: [JudgesService], exports: [JudgesService] })
export class JudgesModule {}
