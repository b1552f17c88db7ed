import { isIP } from 'node:net';
import { z } from 'zod';
import { SERVICE_LANGUAGES } from './messages';

/** The providers with a preset; every one is reached through the OpenAI-compatible API. */
/** `demo`: the built-in demo model `npm start` runs when no model is configured; refused in production. */
export const LLM_PROVIDERS = ['openai', 'ollama', 'vllm', 'oci_openai', 'openai_compatible', 'demo'] as const;
export type LlmProvider = (typeof LLM_PROVIDERS)[number];

/** Boolean env values: true/false/1/0/yes/no (case-insensitive); unset or empty gives `fallback`. */
const envBoolean = <F extends boolean | undefined>(fallback: F) =>
  z
    .string()
    .optional()
    .transform((value, ctx): boolean | F => {
      if (value === undefined || value.trim() === '') return fallback;
      const normalized = value.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(normalized)) return true;
      if (['false', '0', 'no', 'off'].includes(normalized)) return false;
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected true or false, got "${value}"` });
      return z.NEVER;
    });

const envNumber = (fallback: number, opts: { min?: number; max?: number; int?: boolean } = {}) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === '') return fallback;
      const parsed = Number(value);
      const problems: string[] = [];
      if (!Number.isFinite(parsed)) problems.push('a number');
      else {
        if (opts.int && !Number.isInteger(parsed)) problems.push('an integer');
        if (opts.min !== undefined && parsed < opts.min) problems.push(`>= ${opts.min}`);
        if (opts.max !== undefined && parsed > opts.max) problems.push(`<= ${opts.max}`);
      }
      if (problems.length > 0) {
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          message: `expected ${problems.join(', ')}, got "${value}"`,
        });
        return z.NEVER;
      }
      return parsed;
    });

const envString = (fallback: string) =>
  z
    .string()
    .optional()
    .transform((value) => (value === undefined || value === '' ? fallback : value));

const optionalString = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));

const envEnum = <T extends readonly [string, ...string[]]>(values: T, fallback: T[number]) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === '') return fallback;
      const normalized = value.trim().toLowerCase();
      const allowed: readonly T[number][] = values;
      const match = allowed.find((candidate) => candidate === normalized);
      if (match === undefined) {
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          message: `expected one of ${values.join('|')}, got "${value}"`,
        });
        return z.NEVER;
      }
      return match;
    });

const httpUrl = z
  .string()
  .optional()
  .transform((value, ctx) => {
    if (value === undefined || value.trim() === '') return undefined;
    try {
      const url = new URL(value);
      if (!['http:', 'https:'].includes(url.protocol)) throw new Error('protocol');
      return value.trim().replace(/\/+$/, '');
    } catch {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected an http(s) URL, got "${value}"` });
      return z.NEVER;
    }
  });

/** An optional URL with one of these schemes; the message says what was expected, never the value (it may hold a password). */
const urlWithScheme = (protocols: string[], expected: string) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === '') return undefined;
      try {
        const url = new URL(value.trim());
        if (!protocols.includes(url.protocol)) throw new Error('protocol');
        return value.trim();
      } catch {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected ${expected}` });
        return z.NEVER;
      }
    });

const postgresUrl = urlWithScheme(['postgres:', 'postgresql:'], 'a postgres:// or postgresql:// URL');

/** The shortest API key accepted, global or per tenant. */
const MIN_KEY_LENGTH = 8;

/** An API key and the tenant it serves (null: every tenant). */
interface ApiKeyEntry {
  tenant: string | null;
  key: string;
}

/** An admin key entry, with the name its holder acts as (handoff claims); null: the key's id. */
interface AdminKeyEntry extends ApiKeyEntry {
  name: string | null;
}

/** The name of an admin key: letters, digits and `_ . - @ +`, so an e-mail address fits. */
const KEY_NAME = /^[A-Za-z0-9_.@+-]{1,64}$/;

/**
 * Comma-separated entries, each parsed by `entry`, which returns the problem of a bad one as text; `whole` finds
 * a problem of the list as a whole.
 */
const keyList = <E>(
  entry: (item: string) => E | string,
  whole: (entries: E[]) => string | null = () => null,
) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      const entries: E[] = [];
      for (const raw of (value ?? '').split(',')) {
        const item = raw.trim();
        if (item === '') continue;
        const parsed = entry(item);
        if (typeof parsed === 'string') {
          ctx.addIssue({ code: z.ZodIssueCode.custom, message: parsed });
          return z.NEVER;
        }
        entries.push(parsed);
      }
      const problem = whole(entries);
      if (problem !== null) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: problem });
        return z.NEVER;
      }
      return entries;
    });

/** `tenant:key` (channel keys): a bare key is rejected. */
function channelKeyEntry(item: string): ApiKeyEntry | string {
  const separator = item.indexOf(':');
  if (separator === -1) return 'expected tenant:key pairs separated by commas';
  const tenant = item.slice(0, separator).trim();
  const key = item.slice(separator + 1).trim();
  if (tenant === '' || key.length < MIN_KEY_LENGTH) {
    return `each entry needs a tenant and a key of at least ${MIN_KEY_LENGTH} characters`;
  }
  return { tenant, key };
}

/**
 * `[name@]tenant:key`, `[name@]*:key` or a bare `key` (admin keys): `*` and a bare key serve every tenant. The
 * name is split at the last `@` before the first `:` (a tenant id has no `@`), so every list of the earlier
 * `tenant:key` / `key` form reads as before.
 */
function adminKeyEntry(item: string): AdminKeyEntry | string {
  const separator = item.indexOf(':');
  if (separator === -1) {
    if (item.length < MIN_KEY_LENGTH) return `each key needs at least ${MIN_KEY_LENGTH} characters`;
    return { tenant: null, key: item, name: null };
  }
  const head = item.slice(0, separator).trim();
  const key = item.slice(separator + 1).trim();
  const at = head.lastIndexOf('@');
  const name = at === -1 ? null : head.slice(0, at).trim();
  const scope = head.slice(at + 1).trim();
  if (scope === '' || key.length < MIN_KEY_LENGTH) {
    return `each entry needs a tenant (or *) and a key of at least ${MIN_KEY_LENGTH} characters`;
  }
  if (name !== null && !KEY_NAME.test(name)) {
    return 'a key name (before @) needs 1 to 64 letters, digits or _ . - @ +';
  }
  return { tenant: scope === '*' ? null : scope, key, name };
}

/** One key acts as one person: listed for several tenants, it carries the same name (or none) every time. */
function oneNamePerKey(entries: AdminKeyEntry[]): string | null {
  const names = new Map<string, string | null>();
  for (const { key, name } of entries) {
    const earlier = names.get(key);
    if (earlier !== undefined && earlier !== name) {
      return 'a key listed more than once needs the same name (or none) in every entry';
    }
    names.set(key, name);
  }
  return null;
}

const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** An IP address, a CIDR range (`10.0.0.0/8`), or one of the names loopback, linklocal, uniquelocal. */
function isProxyAddress(value: string): boolean {
  if (PROXY_NAMES.includes(value)) return true;
  const [address, prefix, ...rest] = value.split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return /^\d+$/.test(prefix) && bits <= (version === 4 ? 32 : 128);
}

/** TRUST_PROXY: the proxies whose X-Forwarded-For is believed, comma-separated; unset trusts none. */
const trustedProxies = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const entries = (value ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== '');
    const bad = entries.filter((entry) => !isProxyAddress(entry));
    if (bad.length > 0) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `expected IP addresses, CIDR ranges or loopback|linklocal|uniquelocal, got "${bad.join(', ')}"`,
      });
      return z.NEVER;
    }
    return entries;
  });

export const appEnvSchema = z.object({
  NODE_ENV: envEnum(['development', 'production', 'test'], 'development'),
  PORT: envNumber(3000, { min: 0, max: 65535, int: true }),
  LOG_LEVEL: envEnum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
  /** `json` lines for collectors; `pretty` (pino-pretty, a development dependency) for a terminal. */
  LOG_FORMAT: envEnum(['json', 'pretty'], 'json'),
  CONFIG_DIR: envString('config'),
  SHUTDOWN_GRACE_MS: envNumber(10000, { min: 0, int: true }),
  BODY_LIMIT_BYTES: envNumber(64 * 1024, { min: 1024, int: true }),
  /** Time to receive a request's headers and body; a slower client gets 408 and the connection is closed. */
  REQUEST_TIMEOUT_MS: envNumber(10000, { min: 100, int: true }),
  /**
   * How long /health/ready waits for each dependency it checks (Postgres, the rate-limit store); one that has not
   * answered by then is reported down. Below the probe's own timeout, so the probe gets an answer that says which.
   */
  READINESS_TIMEOUT_MS: envNumber(2000, { min: 100, int: true }),
  TRUST_PROXY: trustedProxies,
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl,
  /** Language of what the service says by itself (fallbacks, guardrail and session messages). */
  DEFAULT_LANGUAGE: envEnum(SERVICE_LANGUAGES, 'pt'),
});

export const databaseEnvSchema = z.object({
  DATABASE_URL: postgresUrl,
  DATA_DIR: envString('.data'),
  DATABASE_POOL_SIZE: envNumber(10, { min: 1, max: 200, int: true }),
  /**
   * The statements every turn and every relayed commit run are named prepared statements, parsed and planned once
   * per connection; off behind a pooler that cannot keep them across transactions (PgBouncer in transaction mode
   * before 1.21).
   */
  DATABASE_PREPARED_STATEMENTS: envBoolean(true),
  /**
   * How long a migration waits for a table lock (0: as long as it takes). A migration that needs an exclusive
   * lock behind a long query would otherwise stall every turn queued behind it; it fails the start-up instead,
   * and the replica tries again when it restarts.
   */
  DATABASE_MIGRATION_LOCK_TIMEOUT_MS: envNumber(5000, { min: 0, int: true }),
  /** Opening a connection, and waiting for a free one of the pool: a server that does not answer fails then. */
  DATABASE_CONNECT_TIMEOUT_MS: envNumber(5000, { min: 100, int: true }),
  /**
   * How long a statement of the turn path or the event relay, and the readiness probe's, waits for its answer
   * before the connection is given up as hung (a 503 for the turn). They are short statements on one row each.
   */
  DATABASE_QUERY_TIMEOUT_MS: envNumber(5000, { min: 100, int: true }),
  /** Every other statement (admin reads, memory, RAG, migrations): the server cancels it, the client stops waiting. */
  DATABASE_STATEMENT_TIMEOUT_MS: envNumber(30000, { min: 100, int: true }),
  /** The server ends a session left idle inside a transaction this long, releasing its locks (0: never). */
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: envNumber(60000, { min: 0, int: true }),
});

export const llmEnvSchema = z.object({
  /** A provider preset (endpoint, structured-output mode, default models); profiles may name their own. */
  LLM_PROVIDER: z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === '') return undefined;
      const provider = LLM_PROVIDERS.find((p) => p === value.trim().toLowerCase());
      if (!provider) {
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          message: `expected one of ${LLM_PROVIDERS.join('|')}, got "${value}"`,
        });
        return z.NEVER;
      }
      return provider;
    }),
  LLM_BASE_URL: httpUrl,
  LLM_API_KEY: optionalString,
  LLM_PROFILES_PATH: optionalString,
  /** The model of every `tier: large` profile that names none (the agents, RAG answers). */
  LLM_MODEL: optionalString,
  /** The model of every `tier: small` profile that names none (classifier, router, guardrails, judges, extraction). */
  LLM_SMALL_MODEL: optionalString,
  /** The model of every `tier: embedding` profile that names none (RAG vector search). */
  LLM_EMBEDDING_MODEL: optionalString,
});

export const continuityEnvSchema = z.object({
  /** On by default; it takes effect only when the classifier's profile has a model (see ContinuityService). */
  ENABLE_ROUTE_STICKINESS: envBoolean(true),
  ROUTE_STICKINESS_LLM_PROFILE: envString('route_continuity'),
  ROUTE_STICKINESS_CONFIDENCE_THRESHOLD: envNumber(0.9, { min: 0, max: 1 }),
  ROUTE_STICKINESS_HISTORY_TURNS: envNumber(2, { min: 0, max: 50, int: true }),
  ROUTE_STICKINESS_MAX_TOKENS: envNumber(80, { min: 1, max: 4096, int: true }),
  ROUTE_STICKINESS_STRATEGY: envEnum(['adaptive', 'sequential', 'speculative'], 'sequential'),
  ROUTE_STICKINESS_SHADOW_RATE: envNumber(0, { min: 0, max: 1 }),
  /** When the active agent's first model call starts beside the guardrail verdict and the classifier. */
  AGENT_SPECULATIVE_START: envEnum(['off', 'adaptive', 'always'], 'adaptive'),
  /** `adaptive`: the share of unsettled turns the active agent keeps at which its first call starts early. */
  AGENT_SPECULATIVE_MIN_CONTINUE_SHARE: envNumber(0.9, { min: 0, max: 1 }),
});

export const sessionControlEnvSchema = z.object({
  /** The session texts override the DEFAULT_LANGUAGE entries of the message catalogue. */
  HUMAN_HANDOFF_MESSAGE: optionalString,
  END_SESSION_MESSAGE: optionalString,
  SESSION_ALREADY_ENDED_MESSAGE: optionalString,
  HUMAN_HANDOFF_MODE: envEnum(['notify', 'hold'], 'notify'),
  HUMAN_HANDOFF_PENDING_MESSAGE: optionalString,
});

export const routingEnvSchema = z.object({
  ROUTING_MODE: z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === '') return undefined;
      const normalized = value.trim().toLowerCase();
      if (normalized !== 'router' && normalized !== 'supervisor') {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected router|supervisor, got "${value}"` });
        return z.NEVER;
      }
      return normalized;
    }),
  ENABLE_LLM_ROUTER: envBoolean(true),
});

const redisUrl = urlWithScheme(['redis:', 'rediss:'], 'a redis:// or rediss:// URL');

export const authEnvSchema = z.object({
  CHANNEL_API_KEYS: keyList(channelKeyEntry),
  ADMIN_API_KEYS: keyList(adminKeyEntry, oneNamePerKey),
  RATE_LIMIT_PER_MINUTE: envNumber(600, { min: 1, int: true }),
  /** Rate-limit counters shared by every replica; unset: each replica counts on its own. */
  REDIS_URL: redisUrl,
  RATE_LIMIT_KEY_PREFIX: envString('agent-runtime:rate-limit:'),
  /** Opening the connection to Redis (the TCP connect). */
  REDIS_CONNECT_TIMEOUT_MS: envNumber(2000, { min: 100, int: true }),
  /**
   * How long a request waits for the rate-limit store's answer; then 503 RATE_LIMIT_UNAVAILABLE. A Redis that
   * accepts connections and never answers costs each request this, not the client's default of forever.
   */
  REDIS_COMMAND_TIMEOUT_MS: envNumber(1000, { min: 50, int: true }),
});

export const checkpointEnvSchema = z.object({
  TURN_LOCK_TIMEOUT_MS: envNumber(10000, { min: 1, int: true }),
  /** Renewed every third of it while a turn runs, so only a dead holder's lease lapses (within this time). */
  TURN_LEASE_MS: envNumber(4000, { min: 1000, int: true }),
  /** Older versions serve corrupt-head recovery only (the turn log keeps every turn): three survive two bad heads. */
  CHECKPOINT_RETENTION: envNumber(3, { min: 1, int: true }),
  CHECKPOINT_RECOVERY_SCAN_LIMIT: envNumber(25, { min: 1, int: true }),
  CHECKPOINT_RETRY_ATTEMPTS: envNumber(3, { min: 1, max: 20, int: true }),
  CHECKPOINT_RETRY_BASE_MS: envNumber(50, { min: 0, int: true }),
  CHECKPOINT_RETRY_MAX_MS: envNumber(1000, { min: 0, int: true }),
  CHECKPOINT_RETRY_JITTER_MS: envNumber(50, { min: 0, int: true }),
  MEMORY_HISTORY_LIMIT: envNumber(80, { min: 2, int: true }),
  /** Turn log rows older than this are deleted by the retention sweeper (0: kept forever). */
  TURN_LOG_RETENTION_DAYS: envNumber(30, { min: 0 }),
  /** Idempotency records older than this are deleted: a message resent later runs again (0: kept forever). */
  PROCESSED_MESSAGES_RETENTION_DAYS: envNumber(30, { min: 0 }),
  RETENTION_SWEEP_INTERVAL_MS: envNumber(600000, { min: 1000, int: true }),
});

export const memoryEnvSchema = z.object({
  ENABLE_LONG_TERM_MEMORY: envBoolean(false),
  LONG_TERM_MEMORY_MAX_CONTEXT_ITEMS: envNumber(20, { min: 1, int: true }),
  LONG_TERM_MEMORY_MIN_CONFIDENCE: envNumber(0.7, { min: 0, max: 1 }),
  /** Extract facts after each turn with the memory_extraction profile (off: memory is only read). */
  LONG_TERM_MEMORY_AUTO_EXTRACT: envBoolean(true),
  LONG_TERM_MEMORY_LLM_PROFILE: envString('memory_extraction'),
});

export const guardrailsEnvSchema = z.object({
  ENABLE_OUTPUT_SUPERVISOR: envBoolean(true),
  OUTPUT_SUPERVISOR_MAX_RETRIES: envNumber(2, { min: 0, max: 10, int: true }),
  /** Longest answer kept; a longer one is cut at a sentence end before the output rails and storage. */
  AGENT_MAX_ANSWER_CHARS: envNumber(4000, { min: 200, max: 1_000_000, int: true }),
});

/** MCP_SERVER_<NAME>_URL overrides the url of server <name> (upper-cased, non-alphanumerics as `_`). */
const MCP_SERVER_URL_KEY = /^MCP_SERVER_([A-Z0-9_]+)_URL$/;

export const mcpEnvSchema = z
  .object({
    MCP_TOOLS_ENABLED: envBoolean(true),
    MCP_SERVERS_PATH: optionalString,
    MCP_CALL_TIMEOUT_MS: envNumber(10000, { min: 100, int: true }),
    MCP_CONNECT_TIMEOUT_MS: envNumber(5000, { min: 100, int: true }),
    MCP_TOOLS_CACHE_TTL_MS: envNumber(300000, { min: 0, int: true }),
  })
  .passthrough()
  .transform((env, ctx) => {
    const serverUrls: Record<string, string> = {};
    for (const [key, value] of Object.entries(env)) {
      const match = MCP_SERVER_URL_KEY.exec(key);
      if (!match || typeof value !== 'string' || value.trim() === '') continue;
      const parsed = httpUrl.safeParse(value);
      if (!parsed.success || parsed.data === undefined) {
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          path: [key],
          message: `expected an http(s) URL, got "${value}"`,
        });
        continue;
      }
      serverUrls[match[1]] = parsed.data;
    }
    return {
      MCP_TOOLS_ENABLED: env.MCP_TOOLS_ENABLED,
      MCP_SERVERS_PATH: env.MCP_SERVERS_PATH,
      MCP_CALL_TIMEOUT_MS: env.MCP_CALL_TIMEOUT_MS,
      MCP_CONNECT_TIMEOUT_MS: env.MCP_CONNECT_TIMEOUT_MS,
      MCP_TOOLS_CACHE_TTL_MS: env.MCP_TOOLS_CACHE_TTL_MS,
      /** Keyed by the normalized server name (TELECOM for `telecom`). */
      MCP_SERVER_URLS: serverUrls,
    };
  });

export const ragEnvSchema = z
  .object({
    RAG_ENABLED: envBoolean(true),
    RAG_TOP_K: envNumber(5, { min: 1, max: 50, int: true }),
    RAG_CHUNK_SIZE: envNumber(1200, { min: 50, max: 100000, int: true }),
    RAG_CHUNK_OVERLAP: envNumber(200, { min: 0, int: true }),
    /** Postgres text search configuration of ingested documents (portuguese, english, simple, ...). */
    RAG_LANGUAGE: z
      .string()
      .optional()
      .transform((value, ctx) => {
        if (value === undefined || value.trim() === '') return 'portuguese';
        if (!/^[a-z_]+$/.test(value.trim())) {
          ctx.addIssue({
            code: z.ZodIssueCode.custom,
            message: `expected a text search configuration name, got "${value}"`,
          });
          return z.NEVER;
        }
        return value.trim();
      }),
    /** Ingested at start-up into each graph agent's rag_namespace; CONFIG_DIR/knowledge when unset. */
    RAG_KNOWLEDGE_DIR: optionalString,
    /** Unset: on, unless the knowledge base is served only. */
    RAG_INGEST_ON_START: envBoolean(undefined),
    /**
     * `auto`: vector search where pgvector and an embedding model exist, else full-text; `vector` requires both
     * (a start-up error otherwise); `full_text` never embeds.
     */
    RAG_SEARCH_MODE: envEnum(['auto', 'vector', 'full_text'], 'auto'),
    /** This process serves the knowledge base and never writes it: ingestion and publication are refused. */
    RAG_SERVE_ONLY: envBoolean(false),
  })
  .superRefine((env, ctx) => {
    if (env.RAG_CHUNK_OVERLAP >= env.RAG_CHUNK_SIZE) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        path: ['RAG_CHUNK_OVERLAP'],
        message: `must be smaller than RAG_CHUNK_SIZE (${env.RAG_CHUNK_SIZE}), got ${env.RAG_CHUNK_OVERLAP}`,
      });
    }
    if (env.RAG_SERVE_ONLY && env.RAG_INGEST_ON_START === true) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        path: ['RAG_INGEST_ON_START'],
        message:
          'cannot be true with RAG_SERVE_ONLY=true: a knowledge base served only is never ingested here',
      });
    }
  })
  .transform((env) => ({ ...env, RAG_INGEST_ON_START: env.RAG_INGEST_ON_START ?? !env.RAG_SERVE_ONLY }));

/** A NATS stream name or subject token: letters, digits, `_ -`. */
const NATS_TOKEN = /^[A-Za-z0-9_-]+$/;

const natsName = (fallback: string, dotted: boolean) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === '') return fallback;
      const trimmed = value.trim();
      const tokens = dotted ? trimmed.split('.') : [trimmed];
      if (!tokens.every((token) => NATS_TOKEN.test(token))) {
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          message: dotted
            ? `expected dot-separated tokens of letters, digits, _ -, got "${value}"`
            : `expected letters, digits, _ -, got "${value}"`,
        });
        return z.NEVER;
      }
      return trimmed;
    });

export const eventsEnvSchema = z.object({
  /** The NATS JetStream destination; unset: no event goes to NATS. */
  EVENTS_NATS_URL: urlWithScheme(['nats:', 'tls:'], 'a nats:// or tls:// URL'),
  EVENTS_NATS_STREAM: natsName('AGENT_EVENTS', false),
  EVENTS_NATS_SUBJECT_PREFIX: natsName('agent.events', true),
  EVENTS_NATS_RETENTION: envEnum(['limits', 'interest', 'workqueue'], 'limits'),
  /** How long the stream keeps a message (0: until the other limits discard it). */
  EVENTS_NATS_MAX_AGE_HOURS: envNumber(168, { min: 0 }),
  /** The window in which the stream drops a second message with the same event id. */
  EVENTS_NATS_DUPLICATE_WINDOW_SECONDS: envNumber(120, { min: 1, int: true }),
  /** The webhook endpoints per tenant; CONFIG_DIR/webhooks.yaml when unset. */
  EVENTS_WEBHOOKS_PATH: optionalString,
  EVENTS_WEBHOOK_TIMEOUT_MS: envNumber(5000, { min: 100, int: true }),
  EVENTS_WEBHOOK_MAX_ATTEMPTS: envNumber(6, { min: 1, max: 50, int: true }),
  EVENTS_WEBHOOK_BACKOFF_BASE_MS: envNumber(1000, { min: 1, int: true }),
  EVENTS_WEBHOOK_BACKOFF_MAX_MS: envNumber(60000, { min: 1, int: true }),
  /** How often each destination looks for committed events it has not delivered yet. */
  EVENTS_RELAY_POLL_MS: envNumber(250, { min: 10, int: true }),
  EVENTS_RELAY_BATCH_SIZE: envNumber(200, { min: 1, max: 10000, int: true }),
  /** A relaying replica's claim on a conversation lapses this long after it stopped renewing it. */
  EVENTS_RELAY_LEASE_MS: envNumber(15000, { min: 500, int: true }),
});

export const ENV_SCHEMAS = {
  app: appEnvSchema,
  database: databaseEnvSchema,
  llm: llmEnvSchema,
  continuity: continuityEnvSchema,
  sessionControl: sessionControlEnvSchema,
  routing: routingEnvSchema,
  auth: authEnvSchema,
  checkpoint: checkpointEnvSchema,
  memory: memoryEnvSchema,
  guardrails: guardrailsEnvSchema,
  mcp: mcpEnvSchema,
  rag: ragEnvSchema,
  events: eventsEnvSchema,
} as const;

export type EnvNamespace = keyof typeof ENV_SCHEMAS;
export type EnvOf<N extends EnvNamespace> = z.output<(typeof ENV_SCHEMAS)[N]>;

export type AppEnv = EnvOf<'app'>;
export type DatabaseEnv = EnvOf<'database'>;
export type LlmEnv = EnvOf<'llm'>;
export type ContinuityEnv = EnvOf<'continuity'>;
export type SessionControlEnv = EnvOf<'sessionControl'>;
export type RoutingEnv = EnvOf<'routing'>;
export type AuthEnv = EnvOf<'auth'>;
export type CheckpointEnv = EnvOf<'checkpoint'>;
export type MemoryEnv = EnvOf<'memory'>;
export type GuardrailsEnv = EnvOf<'guardrails'>;
export type McpEnv = EnvOf<'mcp'>;
export type RagEnv = EnvOf<'rag'>;
export type EventsEnv = EnvOf<'events'>;
