import { Controller, Get, Inject, Logger, Req, Res, ServiceUnavailableException } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { ApiTags } from '@nestjs/swagger';
import {
  HealthCheck,
  HealthCheckResult,
  HealthCheckService,
  HealthIndicatorResult,
  HealthIndicatorService,
} from '@nestjs/terminus';
import { appConfig, ConfigFilesService } from '@agent/config';
import { DatabaseService } from '@agent/database';
import { EventRelayService } from '@agent/events';
import { GuardrailsService } from '@agent/guardrails';
import { LlmService } from '@agent/llm';
import { McpService } from '@agent/mcp';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Access } from '../auth/access.decorator';
import { ApiKeyRegistry } from '../auth/api-keys';
import { RATE_LIMIT_STORAGE, RateLimitStorage } from '../auth/auth.module';
import { ANONYMOUS, requestKeyMatch } from '../auth/request-principal';
import { SharedRateLimitStorage } from '../auth/shared-rate-limit.storage';
import { ShutdownState } from './shutdown-state';

/** Who sees readiness details: nobody (the public probe), or an admin for these tenants (null: every tenant). */
type ReadinessView = { tenants: readonly string[] | null } | null;

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
    @Inject(RATE_LIMIT_STORAGE) private readonly rateLimit: RateLimitStorage,
    @Inject(appConfig.KEY) private readonly app: ConfigType<typeof appConfig>,
  ) {}

  private readonly logger = new Logger('Health');

  /** The process is alive; never touches dependencies. */
  @Get('live')
  @HealthCheck()
  live() {
    return this.health.check([]);
  }

  /**
   * Ready when this replica can serve a turn: accepting traffic, Postgres reachable with its migrations applied,
   * the configuration loaded, and the rate-limit store answering (with REDIS_URL every /v1 request needs it).
   * Each dependency it asks has READINESS_TIMEOUT_MS to answer, so a hung one is reported down, by name, before
   * the probe itself times out. The model, the MCP servers and the event destinations only degrade the service
   * (every model stage has a fallback, a tool failure is an answer, events wait): reported, never failing it. The
   * probe is public, so it says up, down or degraded and nothing else; with an admin key (or authentication off)
   * it also shows the configuration and each dependency's last failure, a tenant's admin only its own webhooks.
   */
  @Get('ready')
  @HealthCheck()
  async ready(
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<HealthCheckResult | string | object> {
    const admin = this.keys.enabled ? requestKeyMatch(this.keys, request)?.admin : ANONYMOUS;
    const view: ReadinessView = admin ? { tenants: admin.tenants } : null;
    const detailed = view !== null;
    try {
      const report = await this.health.check([
        () => this.acceptingTraffic(),
        () => this.bounded('database', () => this.databaseReady(detailed)),
        () => this.configLoaded(detailed),
        () => this.bounded('rate_limit', () => this.rateLimitStore(detailed)),
        () => this.llmConfiguration(detailed),
        () => this.guardrailModel(detailed),
        () => this.mcpServers(detailed),
        () => this.eventDelivery(view),
      ]);
      // Ready, and at a glance what works only in part: the dependencies whose indicator says degraded.
      const degraded = Object.entries(report.info ?? {})
        .filter(([, indicator]) => indicator?.degraded === true)
        .map(([name]) => name);
      return {
        status: report.status,
        degraded,
        info: report.info,
        error: report.error,
        details: report.details,
      };
    } catch (error) {
      // The report (terminus's exception carries it) with the failing dependency named, not the error envelope.
      if (!(error instanceof ServiceUnavailableException)) throw error;
      void reply.status(503);
      return error.getResponse();
    }
  }

  private acceptingTraffic(): HealthIndicatorResult {
    const indicator = this.indicators.check('lifecycle');
    return this.shutdown.shuttingDown ? indicator.down({ message: 'shutting down' }) : indicator.up();
  }

  /** `check`, or the dependency reported down once READINESS_TIMEOUT_MS passed without its answer. */
  private bounded(name: string, check: () => Promise<HealthIndicatorResult>): Promise<HealthIndicatorResult> {
    const ms = this.app.READINESS_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<HealthIndicatorResult>((resolve) => {
      timer = setTimeout(() => {
        this.logger.warn(`readiness: ${name} did not answer within ${ms} ms`);
        resolve(this.indicators.check(name).down({ message: `no answer within ${ms} ms` }));
      }, ms);
    });
    return Promise.race([check(), timeout]).finally(() => clearTimeout(timer));
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
      return this.unreachable(indicator, 'database', error, detailed);
    }
  }

  /** With REDIS_URL every /v1 request asks Redis first (a 503 when it cannot answer): not ready without it. */
  private async rateLimitStore(detailed: boolean): Promise<HealthIndicatorResult> {
    const indicator = this.indicators.check('rate_limit');
    if (!(this.rateLimit instanceof SharedRateLimitStorage)) {
      return indicator.up(detailed ? { store: 'local' } : {});
    }
    try {
      await this.rateLimit.ping();
      return indicator.up(detailed ? { store: 'redis' } : {});
    } catch (error) {
      return this.unreachable(indicator, 'rate_limit', error, detailed);
    }
  }

  /** The client's message may name hosts and users: the log and the admin view have it, the public answer not. */
  private unreachable(
    indicator: ReturnType<HealthIndicatorService['check']>,
    name: string,
    error: unknown,
    detailed: boolean,
  ): HealthIndicatorResult {
    const message = error instanceof Error ? error.message : String(error);
    this.logger.warn(`readiness: ${name} unreachable: ${message}`);
    return indicator.down({ message: detailed ? message : 'unreachable' });
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
    if (detailed) return indicator.up({ ...status });
    const failures = status.files.filter((file) => file.degraded).map((file) => file.last_failure);
    return indicator.up({ degraded: status.degraded, ...publicCause(failures) });
  }

  /**
   * Informational, like the model: a server that is down fails only the tool calls that need it (the agent gets
   * `{ok: false}` and answers), so it does not fail readiness. Its state is that of its last contact: the probe
   * never calls a server, which would multiply every probe by every server (and start stdio ones).
   */
  private mcpServers(detailed: boolean): HealthIndicatorResult {
    const indicator = this.indicators.check('mcp');
    const status = this.mcp.describe();
    const down = status.servers.filter((server) => server.state === 'down');
    const degraded = down.length > 0;
    if (detailed) return indicator.up({ degraded, ...status });
    return indicator.up({ degraded, ...publicCause(down.map((server) => server.last_failure)) });
  }

  /**
   * Informational: a destination that is down makes its events wait (the lag), never the turns, so it does not
   * fail readiness. Destination names and errors need the admin view; a tenant's admin sees the destinations of
   * its tenants and the shared ones (NATS), never another tenant's webhooks. The public `degraded` is about the
   * shared ones: a tenant's failing endpoint is that tenant's business.
   */
  private eventDelivery(view: ReadinessView): HealthIndicatorResult {
    const indicator = this.indicators.check('events');
    const destinations = this.relay
      .describe()
      .filter(
        ({ tenant_id }) =>
          tenant_id === null ||
          (view !== null && (view.tenants === null || view.tenants.includes(tenant_id))),
      );
    const degraded = destinations.some((d) => d.last_error !== null);
    if (view === null) return indicator.up({ degraded });
    return indicator.up({ degraded, destinations });
  }

  /**
   * Informational: a missing endpoint or a model that fails does not fail readiness (every LLM stage has a
   * fallback, and every replica shares the model). Each profile's state is that of its last real call, like the
   * MCP servers'; models and errors need the admin view.
   */
  private llmConfiguration(detailed: boolean): HealthIndicatorResult {
    const status = this.llm.describe();
    const indicator = this.indicators.check('llm');
    const down = status.profiles.filter((profile) => profile.state === 'down');
    const degraded = down.length > 0;
    if (!detailed) {
      return indicator.up({
        configured: status.configured,
        degraded,
        ...publicCause(down.map((profile) => profile.last_failure)),
      });
    }
    return indicator.up({
      configured: status.configured,
      degraded,
      ...(status.configured
        ? {}
        : { message: 'no LLM endpoint configured: LLM stages take their fallbacks' }),
      profiles: status.profiles,
    });
  }
}

/**
 * What the public probe may say of a degraded dependency: the kind of its newest failure (refused, dns, timeout,
 * http_error, ...), never the endpoint, the status, the model or the message, which the admin view has.
 */
function publicCause(failures: readonly ({ at: string; cause: string | null } | null)[]): { cause?: string } {
  const newest = failures
    .filter((failure) => failure !== null)
    .sort((a, b) => Date.parse(b.at) - Date.parse(a.at))[0];
  return newest?.cause ? { cause: newest.cause } : {};
}
