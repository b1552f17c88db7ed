import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CheckpointErrorCode } from '@agent/checkpoint';
import type { ConfigErrorCode } from '@agent/config';
import { conversationKeyOf, isCodedError, JsonObject } from '@agent/contracts';
import { DatabaseErrorCode, isConnectionError } from '@agent/database';
import type { EventsErrorCode } from '@agent/events';
import type { GuardrailsErrorCode } from '@agent/guardrails';
import type { LlmErrorCode } from '@agent/llm';
import type { McpErrorCode } from '@agent/mcp';
import type { MemoryErrorCode } from '@agent/memory';
import { EventBusService } from '@agent/observability';
import type { RagErrorCode } from '@agent/rag';
import type { WorkflowErrorCode } from '@agent/workflow';
import { AppErrorCode, HTTP_ERROR_CODES, HttpErrorCode } from '../app.errors';

export type ErrorCode =
  | HttpErrorCode
  | AppErrorCode
  | CheckpointErrorCode
  | ConfigErrorCode
  | DatabaseErrorCode
  | EventsErrorCode
  | GuardrailsErrorCode
  | LlmErrorCode
  | McpErrorCode
  | MemoryErrorCode
  | RagErrorCode
  | WorkflowErrorCode;

export interface ErrorStatus {
  status: number;
  /** What the code tells a client: the error table of docs/api.md. */
  meaning: string;
  /** Said instead of the error's own message, which names internals (a conversation key, a driver error). */
  message?: string;
  /** Retry-After when the error does not carry its own. */
  retryAfterSeconds?: number;
}

/**
 * The HTTP answer of every error code, the one place that knows it. A 500 tells the client nothing but
 * INTERNAL_ERROR: the code is in the log line of the request.
 */
const STATUS_OF_CODE: { readonly [C in ErrorCode]: ErrorStatus } = {
  VALIDATION_FAILED: {
    status: 400,
    meaning:
      'a body, parameter or path segment is invalid; `details` lists every field error; nothing is written',
  },
  INVALID_CURSOR: { status: 400, meaning: 'a `cursor` the session list did not hand out' },
  BAD_REQUEST: {
    status: 400,
    meaning: 'a URL, request or body the server cannot read (bytes that are not UTF-8)',
  },
  UNAUTHORIZED: { status: 401, meaning: 'no key, or an unknown one (`WWW-Authenticate: Bearer`)' },
  FORBIDDEN: { status: 403, meaning: 'a key of the wrong kind, or a channel key posting for another tenant' },
  NOT_FOUND: { status: 404, meaning: 'no such route' },
  SESSION_NOT_FOUND: {
    status: 404,
    meaning: 'unknown session (or one of another tenant, indistinguishable)',
    message: 'session not found',
  },
  DEAD_LETTER_NOT_FOUND: {
    status: 404,
    meaning: 'unknown dead letter (or one of another tenant, indistinguishable)',
  },
  REQUEST_TIMEOUT: {
    status: 408,
    meaning: 'headers and body not received within `REQUEST_TIMEOUT_MS`; the connection is closed',
  },
  AGENT_MISMATCH: { status: 409, meaning: 'another `agent_id` than the one the session is bound to' },
  IDEMPOTENCY_KEY_REUSED: {
    status: 409,
    meaning:
      'a `message_id` already processed with another body (text, user, metadata, agent, channel); nothing runs',
  },
  TURN_LOCK_TIMEOUT: {
    status: 409,
    meaning: 'the conversation stayed busy with another turn (with `Retry-After`)',
  },
  CONVERSATION_MOVED_ON: {
    status: 409,
    meaning: 'another writer moved the conversation on (with `Retry-After`)',
    retryAfterSeconds: 1,
  },
  SESSION_STATE_CONFLICT: {
    status: 409,
    meaning: "an admin action the session's status does not allow; `details`: `{status}`",
  },
  HANDOFF_CLAIMED: {
    status: 409,
    meaning: 'a claim on a conversation someone else holds; `details`: `{claimed_by, claimed_at}`',
  },
  WEBHOOK_ENDPOINT_UNKNOWN: {
    status: 409,
    meaning: "a redelivery to an endpoint no longer enabled in `webhooks.yaml` for the dead letter's tenant",
  },
  REDELIVERY_IN_PROGRESS: {
    status: 409,
    meaning: 'another redelivery of the dead letter is in flight (with `Retry-After`: the endpoint timeout)',
  },
  PAYLOAD_TOO_LARGE: { status: 413, meaning: 'body above `BODY_LIMIT_BYTES`' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, meaning: 'a body that is not `application/json` in UTF-8' },
  RATE_LIMITED: {
    status: 429,
    meaning: 'rate limit of the key exceeded (with `Retry-After`)',
    retryAfterSeconds: 60,
  },
  HEADERS_TOO_LARGE: {
    status: 431,
    meaning: 'request headers above the server limit; the connection is closed',
  },
  INTERNAL_ERROR: { status: 500, meaning: 'unexpected; logged once with the request id' },
  WEBHOOK_DELIVERY_FAILED: {
    status: 502,
    meaning: 'a redelivery the endpoint refused; `details`: `{attempts, last_error}`',
  },
  SERVICE_UNAVAILABLE: {
    status: 503,
    meaning: 'a 503 of the framework (`/health/ready` answers its own report instead, naming what is down)',
  },
  RATE_LIMIT_UNAVAILABLE: {
    status: 503,
    meaning: 'the shared rate-limit store is unreachable (with `Retry-After`)',
    message: 'the rate limit store is unavailable; retry shortly',
    retryAfterSeconds: 5,
  },
  DATABASE_UNAVAILABLE: {
    status: 503,
    meaning: 'the database is unreachable (with `Retry-After`); resend with the same `message_id`',
    message: 'the database is unavailable; retry shortly',
    retryAfterSeconds: 5,
  },
  AUTH_NOT_CONFIGURED: {
    status: 500,
    meaning: 'production without API keys: the start is refused',
  },
  DEMO_MODEL_IN_PRODUCTION: {
    status: 500,
    meaning: 'production with the built-in demo model (`LLM_PROVIDER=demo`): the start is refused',
  },
  CONFIG_FILE_INVALID: { status: 500, meaning: 'a config file is missing or invalid' },
  ENV_INVALID: { status: 500, meaning: 'an environment variable is invalid' },
  DATA_DIR_LOCKED: {
    status: 500,
    meaning: 'another process holds the embedded database directory',
  },
  LLM_NOT_CONFIGURED: { status: 500, meaning: 'no model endpoint for the profile' },
  LLM_TIMEOUT: { status: 500, meaning: 'a model call timed out' },
  LLM_HTTP_ERROR: { status: 500, meaning: 'the model endpoint answered an HTTP error' },
  LLM_INVALID_RESPONSE: {
    status: 500,
    meaning: 'the model endpoint answered something unreadable',
  },
  LLM_CANCELLED: { status: 500, meaning: 'a model call cancelled by its caller' },
  LLM_ERROR: { status: 500, meaning: 'a model call failed otherwise' },
  MCP_UNAVAILABLE: { status: 500, meaning: 'an MCP server cannot be reached' },
  MCP_TIMEOUT: { status: 500, meaning: 'an MCP server did not answer in time' },
  EVENT_DESTINATION_CLOSED: { status: 500, meaning: 'an event delivery after its destination closed' },
  RAIL_VERDICT_MISSING: { status: 500, meaning: 'the guardrail model gave no usable verdict' },
  RAIL_TIMEOUT: { status: 500, meaning: 'a guardrail timed out' },
  RAIL_CANCELLED: { status: 500, meaning: "a guardrail cancelled by another's terminal result" },
  MEMORY_EXTRACTION_FAILED: {
    status: 500,
    meaning: 'the memory extraction call gave no fact list',
  },
  RAG_INVALID_CHUNKING: { status: 500, meaning: 'invalid chunk size or overlap for ingestion' },
  RAG_DIRECTORY_NOT_FOUND: { status: 500, meaning: 'the ingestion directory does not exist' },
  RAG_NOT_A_DIRECTORY: { status: 500, meaning: 'the ingestion path is not a directory' },
  RAG_INVALID_DOCUMENT: { status: 500, meaning: 'a knowledge file cannot be parsed' },
  RAG_INVALID_LANGUAGE: {
    status: 500,
    meaning: 'an unknown Postgres text search configuration',
  },
  RAG_INVALID_NAMESPACE: {
    status: 500,
    meaning: 'a knowledge namespace that is not an identifier',
  },
  RAG_SERVE_ONLY: { status: 500, meaning: 'ingestion into a knowledge base served only' },
  RAG_MISCONFIGURED: { status: 500, meaning: 'a RAG configuration that cannot work (start-up)' },
};

export const ERROR_STATUSES: ReadonlyMap<string, ErrorStatus> = new Map(Object.entries(STATUS_OF_CODE));

/** The status of a code answered outside the filter (before fastify has a route). */
export function statusOf(code: ErrorCode): number {
  return STATUS_OF_CODE[code].status;
}

/** The code of a framework error by its status (each of these statuses has one). */
const HTTP_CODE_OF_STATUS: ReadonlyMap<number, HttpErrorCode> = new Map(
  HTTP_ERROR_CODES.map((code) => [STATUS_OF_CODE[code].status, code]),
);

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown };
  request_id: string;
}

/** The one shape of every error answer, also for the few written outside the filter (before fastify has a route). */
export function errorBody(code: string, message: string, requestId: string, details?: unknown): ErrorBody {
  return { error: { code, message, ...(details !== undefined ? { details } : {}) }, request_id: requestId };
}

export interface ErrorAnswer {
  status: number;
  code: string;
  message: string;
  details?: JsonObject | readonly JsonObject[];
  retryAfter?: number;
}

/** The answer to a code: its status, public message and Retry-After, or the generic 500 for an unknown one. */
function answerOf(code: string, message: string, retryAfterSeconds?: number): ErrorAnswer {
  const entry = ERROR_STATUSES.get(code);
  if (entry === undefined || entry.status === 500) return INTERNAL_ANSWER;
  const retryAfter = retryAfterSeconds ?? entry.retryAfterSeconds;
  return {
    status: entry.status,
    code,
    message: entry.message ?? message,
    ...(retryAfter !== undefined ? { retryAfter } : {}),
  };
}

const INTERNAL_ANSWER: ErrorAnswer = {
  status: 500,
  code: 'INTERNAL_ERROR',
  message: 'unexpected error',
};

/** What the API answers to `exception`: the table for coded errors, the status for the framework's own. */
export function classifyError(exception: unknown): ErrorAnswer {
  if (isCodedError(exception)) {
    const answer = answerOf(exception.code, exception.message, exception.retryAfterSeconds);
    return answer.status !== 500 && exception.details !== undefined
      ? { ...answer, details: exception.details }
      : answer;
  }
  if (isConnectionError(exception)) return answerOf('DATABASE_UNAVAILABLE', '');
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const response = exception.getResponse();
    const message =
      typeof response === 'object' && response !== null && 'message' in response
        ? String(response.message)
        : exception.message;
    const code = codeOfStatus(status);
    const retryAfter = ERROR_STATUSES.get(code)?.retryAfterSeconds;
    return { status, code, message, ...(retryAfter !== undefined ? { retryAfter } : {}) };
  }
  const status = (exception as { statusCode?: unknown })?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    // Fastify's own errors (body too large, bad JSON, unsupported media type).
    return {
      status,
      code: codeOfStatus(status),
      message: exception instanceof Error ? exception.message : 'bad request',
    };
  }
  return INTERNAL_ANSWER;
}

function codeOfStatus(status: number): string {
  return HTTP_CODE_OF_STATUS.get(status) ?? (status >= 500 ? 'INTERNAL_ERROR' : 'REQUEST_FAILED');
}

/** Maps every error to `{error: {code, message, details?}, request_id}`; unexpected ones are logged once. */
@Catch()
export class HttpErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpError');

  constructor(private readonly events: EventBusService) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const request = http.getRequest<FastifyRequest>();
    const requestId = String(request.id);
    const { status, code, message, details, retryAfter } = classifyError(exception);
    if (status >= 500 && status !== 503) {
      this.logger.error({ err: exception, request_id: requestId }, 'unexpected error');
    } else if (code === 'RATE_LIMIT_UNAVAILABLE') {
      this.logger.warn({ request_id: requestId, err: String(exception) }, 'rate limit store unavailable');
    } else if (code === 'DATABASE_UNAVAILABLE') {
      // Not SERVICE_UNAVAILABLE: a failed readiness probe says why in its own report, every few seconds.
      this.logger.warn(
        { request_id: requestId, err: exception instanceof Error ? exception.message : String(exception) },
        'database unavailable',
      );
      // Outside a turn context the envelope comes from the request, so operators can correlate the failure.
      const payload = {
        error: exception instanceof Error ? exception.message : String(exception),
        exception_type: exception instanceof Error ? exception.constructor.name : typeof exception,
        request_id: requestId,
        ...conversationOf(request.body),
      };
      this.events.emit('NOC.005', payload);
    }
    const body = errorBody(code, message, requestId, details);
    // A Retry-After set on the way (the rate limiter's exact wait) beats the generic one.
    if (retryAfter !== undefined && !reply.hasHeader('retry-after')) {
      void reply.header('Retry-After', String(retryAfter));
    }
    if (status === 401) void reply.header('WWW-Authenticate', 'Bearer');
    void reply.status(status).send(body);
  }
}

/** tenant_id, session_id and conversation_key of a channel message body, when it has them. */
function conversationOf(body: unknown): Record<string, string> {
  if (typeof body !== 'object' || body === null) return {};
  const { tenant_id: tenant, session_id: session, agent_id: agent } = body as Record<string, unknown>;
  if (typeof tenant !== 'string' || typeof session !== 'string') return {};
  return {
    tenant_id: tenant,
    session_id: session,
    conversation_key: conversationKeyOf(tenant, session),
    ...(typeof agent === 'string' ? { agent_id: agent } : {}),
  };
}
