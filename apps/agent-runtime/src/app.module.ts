import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { LoggerModule } from 'nestjs-pino';
import { AppConfigModule, appConfig } from '@agent/config';
import { DatabaseModule } from '@agent/database';
import { LlmModule } from '@agent/llm';
import { McpModule } from '@agent/mcp';
import { ObservabilityModule } from '@agent/observability';
import { WorkflowModule } from '@agent/workflow';
import { ConfigType } from '@nestjs/config';
import { AdminEventsController } from './admin/admin-events.controller';
import { AdminHandoffsController } from './admin/admin-handoffs.controller';
import { AdminKeyController } from './admin/admin-key.controller';
import { AdminMemoryController } from './admin/admin-memory.controller';
import { AdminSessionsController } from './admin/admin-sessions.controller';
import { AdminStatsController } from './admin/admin-stats.controller';
import { AuthModule } from './auth/auth.module';
import { HealthController } from './health/health.controller';
import { ShutdownState } from './health/shutdown-state';
import { ChannelMessagesController } from './http/channel-messages.controller';
import { MetricsController } from './http/metrics.controller';
import { loggerParams } from './logging';
import { ReferenceMcpCompanion } from './quick-start/reference-mcp.companion';

@Module({
  imports: [
    AppConfigModule,
    LoggerModule.forRootAsync({
      inject: [appConfig.KEY],
      useFactory: (app: ConfigType<typeof appConfig>) => loggerParams(app),
    }),
    ObservabilityModule,
    DatabaseModule,
    LlmModule,
    WorkflowModule,
    // Readiness reports the MCP servers; the same module instance the agents use.
    McpModule,
    AuthModule,
    TerminusModule.forRoot({ logger: false }),
  ],
  controllers: [
    ChannelMessagesController,
    AdminKeyController,
    AdminHandoffsController,
    AdminEventsController,
    AdminSessionsController,
    AdminMemoryController,
    AdminStatsController,
    HealthController,
    MetricsController,
  ],
  providers: [ShutdownState, ReferenceMcpCompanion],
})
export class AppModule {}
