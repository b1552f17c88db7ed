import { Module } from '@nestjs/common';
import { McpModule } from '@agent/mcp';
import { RagModule } from '@agent/rag';
import { AgentPrompts } from './agent-prompts';
import { AgentsService } from './agents.service';
import { ConfirmationClassifier } from './confirmation-classifier';
import { ParameterExtractor } from './parameter-extractor';
import { TransactionEngine } from './transaction.engine';

/** The domain agent runtime; MCP and RAG are its infrastructure, so it imports them (the workflow does not). */
@Module({
  imports: [McpModule, RagModule],
  providers: [AgentsService, AgentPrompts, TransactionEngine, ParameterExtractor, ConfirmationClassifier],
  exports: [AgentsService],
})
export class AgentsModule {}
