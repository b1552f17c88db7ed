import { Module } from '@nestjs/common';
import { AgentsModule } from '@agent/agents';
import { CheckpointModule } from '@agent/checkpoint';
import { ContinuityModule } from '@agent/continuity';
import { EventsModule } from '@agent/events';
import { GuardrailsModule } from '@agent/guardrails';
import { JudgesModule } from '@agent/judges';
import { MemoryModule } from '@agent/memory';
import { RoutingModule } from '@agent/routing';
import { SessionControlModule } from '@agent/session-control';
import { ConversationWork } from './conversation-work';
import { SessionAdminService } from './session-admin.service';
import { SessionNodes } from './session-nodes';
import { TurnService } from './turn.service';
import { WorkflowService } from './workflow.service';

/** The only module that composes the feature modules. */
@Module({
  imports: [
    CheckpointModule,
    GuardrailsModule,
    MemoryModule,
    ContinuityModule,
    RoutingModule,
    SessionControlModule,
    AgentsModule,
    JudgesModule,
    EventsModule,
  ],
  providers: [WorkflowService, ConversationWork, TurnService, SessionAdminService, SessionNodes],
  exports: [
    WorkflowService,
    TurnService,
    SessionAdminService,
    CheckpointModule,
    SessionControlModule,
    GuardrailsModule,
    EventsModule,
  ],
})
export class WorkflowModule {}
