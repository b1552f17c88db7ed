import { Controller, Get } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  HealthCheck,
  HealthCheckService,
  HealthIndicatorResult,
  HealthIndicatorService,
} from '@nestjs/terminus';
import { ConfigFilesService } from '@agent/config';
import { DatabaseService } from '@agent/database';
import { LlmService } from '@agent/llm';
import { Access } from '../auth/access.decorator';
import { ShutdownState } from './shutdown-state';

@ApiTags('health')
@Access('public')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly database: DatabaseService,
    private readonly files: ConfigFilesService,
    private readonly llm: LlmService,
    private readonly shutdown: ShutdownState,
  ) {}

  /** The process is alive; never touches dependencies. */
  @Get('live')
  @HealthCheck()
  live() {
    return this.health.check([]);
  }

  /** Postgres reachable, migrations applied, config loaded; LLM configuration reported, never called. */
  @Get('ready')
  @HealthCheck()
  ready() {
    return this.health.check([
      () => this.acceptingTraffic(),
      () => this.databaseReady(),
      () => this.configLoaded(),
      () => this.llmConfiguration(),
    ]);
  }

  private acceptingTraffic(): HealthIndicatorResult {
    const indicator = this.indicators.check('lifecycle');
    return this.shutdown.shuttingDown ? indicator.down({ message: 'shutting down' }) : indicator.up();
  }

  private async databaseReady(): Promise<HealthIndicatorResult> {
    const indicator = this.indicators.check('database');
    try {
      await this.database.ping();
      const pending = await this.database.pendingMigrations();
      if (pending.length > 0) return indicator.down({ message: 'migrations pending', pending });
      return indicator.up({ embedded: this.database.isEmbedded, migrations: 'applied' });
    } catch (error) {
      return indicator.down({ message: error instanceof Error ? error.message : String(error) });
    }
  }

  private configLoaded(): HealthIndicatorResult {
    return this.indicators.check('config').up({
      config_dir: this.files.configDir,
      intents: this.files.routing.intents.length,
      agents: Object.keys(this.files.agents.agents),
      routing_mode: this.files.routing.router.mode,
    });
  }

  /** Informational: a missing endpoint does not fail readiness (every LLM stage has a fallback). */
  private llmConfiguration(): HealthIndicatorResult {
    const status = this.llm.describe();
    return this.indicators.check('llm').up({
      configured: status.configured,
      ...(status.configured
        ? {}
        : { message: 'no LLM endpoint configured: LLM stages take their fallbacks' }),
      profiles: status.profiles,
    });
  }
}
