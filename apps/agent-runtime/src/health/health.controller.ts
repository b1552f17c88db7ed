import { Controller, Get, Logger, Req } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  HealthCheck,
  HealthCheckService,
  HealthIndicatorResult,
  HealthIndicatorService,
} from '@nestjs/terminus';
import { ConfigFilesService } from '@agent/config';
import { DatabaseService } from '@agent/database';
import { EventRelayService } from '@agent/events';
import { GuardrailsService } from '@agent/guardrails';
import { LlmService } from '@agent/llm';
import { McpService } from '@agent/mcp';
import type { FastifyRequest } from 'fastify';
import { Access } from '../auth/access.decorator';
import { ApiKeyRegistry } from '../auth/api-keys';
import { requestKeyMatch } from '../auth/request-principal';
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
    private readonly guardrails: GuardrailsService,
    private readonly shutdown: ShutdownState,
    private readonly keys: ApiKeyRegistry,
    private readonly relay: EventRelayService,
    private readonly mcp: McpService,
  ) {}

  private readonly logger = new Logger('Health');

  /** The process is alive; never touches dependencies. */
  @Get('live')
  @HealthCheck()
  live() {
    return this.health.check([]);
  }

  /**
   * Postgres reachable, migrations applied, config loaded; LLM and MCP set-up and last contacts reported, never
   * called. The probe is public, so it says up or down and nothing else; with an admin key (or authentication
   * off) it also shows the configuration: directory, agents, each routing file with its agents and model, LLM
   * profiles with their models and states, the MCP servers of every agent.
   */
  @Get('ready')
  @HealthCheck()
  ready(@Req() request: FastifyRequest) {
    const detailed = !this.keys.enabled || Boolean(requestKeyMatch(this.keys, request)?.admin);
    return this.health.check([
      () => this.acceptingTraffic(),
      () => this.databaseReady(detailed),
      () => this.configLoaded(detailed),
      () => this.llmConfiguration(detailed),
      () => this.guardrailModel(detailed),
      () => this.mcpServers(detailed),
      () => this.eventDelivery(detailed),
    ]);
  }

  private acceptingTraffic(): HealthIndicatorResult {
    const indicator = this.indicators.check('lifecycle');
    return this.shutdown.shuttingDown ? indicator.down({ message: 'shutting down' }) : indicator.up();
  }

  private async databaseReady(detailed: boolean): Promise<HealthIndicatorResult> {
    const indicator = this.indicators.check('database');
    try {
      await this.database.ping();
      const pending = await this.database.pendingMigrations();
      if (pending.length > 0) {
        return indicator.down({ message: 'migrations pending', ...(detailed ? { pending } : {}) });
      }
      return indicator.up(detailed ? { embedded: this.database.isEmbedded, migrations: 'applied' } : {});
    } catch (error) {
      // The driver's message may name hosts and users: the log has it, the public answer does not.
      const message = error instanceof Error ? error.message : String(error);
      this.logger.warn(`readiness: database unreachable: ${message}`);
      return indicator.down({ message: detailed ? message : 'unreachable' });
    }
  }

  private configLoaded(detailed: boolean): HealthIndicatorResult {
    const indicator = this.indicators.check('config');
    if (!detailed) return indicator.up();
    return indicator.up({
      config_dir: this.files.configDir,
      intents: this.files.routing.intents.length,
      agents: Object.keys(this.files.agents.agents),
      routing_mode: this.files.routing.router.mode,
      routing: this.files.routings.users().map(({ value: { router, intents }, agents }) => {
        const profile = this.llm.resolveProfile(router.llm_profile);
        return {
          agents,
          mode: router.mode,
          intents: intents.length,
          llm_profile: router.llm_profile,
          // The profile it really calls: a name missing from llm_profiles.yaml falls back to `default`.
          resolved_profile: profile?.name ?? null,
          model: profile?.model ?? null,
        };
      }),
    });
  }

  /**
   * `degraded: true` after repeated guardrail-model failures of any guardrails file (fail-closed rails are
   * blocking messages). It does not fail readiness: every replica shares the model, and taking them all out of
   * service would turn a degraded guardrail into an outage. The failure details (which may name the endpoint)
   * need the admin view.
   */
  private guardrailModel(detailed: boolean): HealthIndicatorResult {
    const status = this.guardrails.modelStatus();
    const indicator = this.indicators.check('guardrail_model');
    return indicator.up(detailed ? { ...status } : { degraded: status.degraded });
  }

  /**
   * Informational, like the model: a server that is down fails only the tool calls that need it (the agent gets
   * `{ok: false}` and answers), so it does not fail readiness. Its state is that of its last contact: the probe
   * never calls a server, which would multiply every probe by every server (and start stdio ones).
   */
  private mcpServers(detailed: boolean): HealthIndicatorResult {
    const indicator = this.indicators.check('mcp');
    if (!detailed) return indicator.up();
    return indicator.up({ ...this.mcp.describe() });
  }

  /**
   * Informational: a destination that is down makes its events wait (the lag), never the turns, so it does not
   * fail readiness. Destination names and errors need the admin view.
   */
  private eventDelivery(detailed: boolean): HealthIndicatorResult {
    const indicator = this.indicators.check('events');
    const destinations = this.relay.describe();
    if (!detailed) return indicator.up();
    return indicator.up({ destinations });
  }

  /**
   * Informational: a missing endpoint or a model that fails does not fail readiness (every LLM stage has a
   * fallback, and every replica shares the model). Each profile's state is that of its last real call, like the
   * MCP servers'; models and errors need the admin view.
   */
  private llmConfiguration(detailed: boolean): HealthIndicatorResult {
    const status = this.llm.describe();
    const indicator = this.indicators.check('llm');
    if (!detailed) return indicator.up({ configured: status.configured });
    return indicator.up({
      configured: status.configured,
      ...(status.configured
        ? {}
        : { message: 'no LLM endpoint configured: LLM stages take their fallbacks' }),
      profiles: status.profiles,
    });
  }
}
