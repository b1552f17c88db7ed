import { Global, Module } from '@nestjs/common';
import { LlmService } from './llm.service';

@Global()
@Module({ providers: [LlmService], exports: [LlmService] })
export class LlmModule {}
