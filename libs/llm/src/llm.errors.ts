import { CodedError } from '@agent/contracts';

/** The code of each kind of failure; the kind names the outcome in metrics and events. */
const CODE_OF_KIND = {
  not_configured: 'LLM_NOT_CONFIGURED',
  timeout: 'LLM_TIMEOUT',
  http_error: 'LLM_HTTP_ERROR',
  invalid_response: 'LLM_INVALID_RESPONSE',
  cancelled: 'LLM_CANCELLED',
  error: 'LLM_ERROR',
} as const;
export type LlmErrorKind = keyof typeof CODE_OF_KIND;
export type LlmErrorCode = (typeof CODE_OF_KIND)[LlmErrorKind];
export const LLM_ERROR_CODES: readonly LlmErrorCode[] = Object.values(CODE_OF_KIND);

/** A failed LLM call; `kind` tells the stage which documented fallback applies. */
export class LlmError extends CodedError<LlmErrorCode> {
  constructor(
    readonly kind: LlmErrorKind,
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(CODE_OF_KIND[kind], message, options);
  }
}

export class LlmNotConfiguredError extends LlmError {
  constructor(message: string) {
    super('not_configured', message);
  }
}

export class LlmTimeoutError extends LlmError {
  constructor(profile: string, timeoutMs: number, url?: string, cause?: unknown) {
    const waitingFor = url === undefined ? '' : ` waiting for ${url}`;
    super('timeout', `LLM profile ${profile} timed out after ${timeoutMs} ms${waitingFor}`, undefined, {
      cause,
    });
  }
}

export class LlmHttpError extends LlmError {
  constructor(
    profile: string,
    readonly model: string,
    status: number,
    /** The start of the response body: what the endpoint said was wrong (an unknown model, a bad key). */
    readonly body: string,
    cause?: unknown,
  ) {
    super('http_error', `LLM profile ${profile} (model ${model}) answered HTTP ${status}: ${body}`, status, {
      cause,
    });
  }
}

export class LlmInvalidResponseError extends LlmError {
  constructor(profile: string, detail: string, cause?: unknown) {
    super('invalid_response', `LLM profile ${profile} returned an invalid response: ${detail}`, undefined, {
      cause,
    });
  }
}

/** Why a model endpoint could not be reached, from the system error under the client's "Connection error.". */
export type NetworkCause = 'refused' | 'dns' | 'tls' | 'timeout' | 'reset' | 'unreachable';

export interface NetworkFailure {
  cause: NetworkCause;
  /** The system or TLS error code (ECONNREFUSED, ENOTFOUND, DEPTH_ZERO_SELF_SIGNED_CERT, ...). */
  code: string;
  /** What the cause means, for a person reading a log line or llm:check's table. */
  description: string;
}

const CAUSE_OF_CODE: Record<string, NetworkCause> = {
  ECONNREFUSED: 'refused',
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
  EAI_FAIL: 'dns',
  EAI_NONAME: 'dns',
  ETIMEDOUT: 'timeout',
  ECONNRESET: 'reset',
  EPIPE: 'reset',
  ECONNABORTED: 'reset',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  EHOSTDOWN: 'unreachable',
  EPROTO: 'tls',
};

/** OpenSSL's certificate verification codes and Node's TLS ones. */
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH)/;

const DESCRIPTION: Record<NetworkCause, (host: string) => string> = {
  refused: () => 'connection refused',
  dns: (host) => `DNS lookup of ${host} failed`,
  tls: () => 'TLS handshake failed',
  timeout: () => 'connection timed out',
  reset: () => 'connection reset by the peer',
  unreachable: () => 'network unreachable',
};

/** The error and every error it wraps (`cause`, an AggregateError's `errors`), outermost first. */
function errorChain(error: unknown): object[] {
  const chain: object[] = [];
  const queue: unknown[] = [error];
  while (queue.length > 0 && chain.length < 10) {
    const next = queue.shift();
    if (typeof next !== 'object' || next === null || chain.includes(next)) continue;
    chain.push(next);
    if ('cause' in next) queue.push(next.cause);
    if (next instanceof AggregateError) queue.push(...(next.errors as unknown[]));
  }
  return chain;
}

/** The network cause of a failed request to `url`, or null when the failure was not a network one. */
export function networkFailure(error: unknown, url: string): NetworkFailure | null {
  for (const link of errorChain(error)) {
    const code = 'code' in link && typeof link.code === 'string' ? link.code : undefined;
    if (code === undefined) continue;
    const cause = CAUSE_OF_CODE[code] ?? (TLS_CODE.test(code) ? 'tls' : undefined);
    if (cause === undefined) continue;
    const detail = cause === 'tls' && link instanceof Error ? `: ${link.message}` : '';
    return { cause, code, description: `${DESCRIPTION[cause](new URL(url).hostname)}${detail}` };
  }
  return null;
}

/** An endpoint without its credentials, as logs and messages may show it. */
export function displayUrl(url: string): string {
  const parsed = new URL(url);
  parsed.username = '';
  parsed.password = '';
  return parsed.toString().replace(/\/$/, '');
}

/**
 * Why a call failed, as events, readiness and turn responses name it: the network cause when nothing answered
 * (refused, dns, tls, ...), else the kind (an `http_error` comes with its status).
 */
export type LlmFailureCause = Exclude<LlmErrorKind, 'cancelled' | 'not_configured'> | NetworkCause;

export function failureCauseOf(error: LlmError): LlmFailureCause | null {
  if (error instanceof LlmUnreachableError) return error.network.cause;
  return error.kind === 'cancelled' || error.kind === 'not_configured' ? null : error.kind;
}

/** The endpoint could not be reached: nothing answered, so no status and no body. */
export class LlmUnreachableError extends LlmError {
  constructor(
    profile: string,
    /** The endpoint called, without credentials. */
    readonly url: string,
    readonly network: NetworkFailure,
    cause?: unknown,
  ) {
    super(
      'error',
      `LLM profile ${profile} cannot reach ${url}: ${network.description} (${network.code})`,
      undefined,
      {
        cause,
      },
    );
  }
}
