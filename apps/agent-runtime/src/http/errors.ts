import {
  ArgumentsHost,
  BadRequestException,
  Catch,
  ExceptionFilter,
  HttpException,
  HttpStatus,
  Logger,
} from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  AgentMismatchError,
  CheckpointFencingError,
  InvalidCursorError,
  TurnLockTimeoutError,
} from '@agent/checkpoint';
import { DatabaseUnavailableError, isConnectionError } from '@agent/database';
import {
  DeadLetterNotFoundError,
  WebhookDeliveryFailedError,
  WebhookEndpointUnknownError,
} from '@agent/events';
import { EventBusService } from '@agent/observability';
import {
  HandoffClaimedError,
  IdempotencyKeyReusedError,
  SessionNotFoundError,
  SessionStateConflictError,
} from '@agent/workflow';
import { RateLimitUnavailableError } from '../auth/shared-rate-limit.storage';

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown };
  request_id: string;
}

/** The one shape of every error answer, also for the few written outside the filter (before fastify has a route). */
export function errorBody(code: string, message: string, requestId: string, details?: unknown): ErrorBody {
  return { error: { code, message, ...(details !== undefined ? { details } : {}) }, request_id: requestId };
}

/** Validation failures carry their field errors (`details`) to the 400 body. */
export class RequestValidationError extends BadRequestException {
  constructor(readonly fieldErrors: { field: string; errors: string[] }[]) {
    super('request validation failed');
  }
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
    const { status, code, message, details, retryAfter } = this.classify(exception);
    if (status >= 500 && status !== 503) {
      this.logger.error({ err: exception, request_id: requestId }, 'unexpected error');
    } else if (code === 'RATE_LIMIT_UNAVAILABLE') {
      this.logger.warn({ request_id: requestId, err: String(exception) }, 'rate limit store unavailable');
    } else if (status === 503) {
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

  private classify(exception: unknown): {
    status: number;
    code: string;
    message: string;
    details?: unknown;
    retryAfter?: number;
  } {
    if (exception instanceof RequestValidationError) {
      return {
        status: 400,
        code: 'VALIDATION_FAILED',
        message: 'request validation failed',
        details: exception.fieldErrors,
      };
    }
    if (exception instanceof TurnLockTimeoutError) {
      return {
        status: 409,
        code: 'TURN_LOCK_TIMEOUT',
        message: exception.message,
        retryAfter: exception.retryAfterSeconds,
      };
    }
    if (exception instanceof CheckpointFencingError) {
      return { status: 409, code: 'CONVERSATION_MOVED_ON', message: exception.message, retryAfter: 1 };
    }
    if (exception instanceof AgentMismatchError) {
      return { status: 409, code: 'AGENT_MISMATCH', message: exception.message };
    }
    if (exception instanceof IdempotencyKeyReusedError) {
      return { status: 409, code: 'IDEMPOTENCY_KEY_REUSED', message: exception.message };
    }
    if (exception instanceof SessionNotFoundError) {
      return { status: 404, code: 'SESSION_NOT_FOUND', message: 'session not found' };
    }
    if (exception instanceof SessionStateConflictError) {
      return {
        status: 409,
        code: 'SESSION_STATE_CONFLICT',
        message: exception.message,
        details: { status: exception.status },
      };
    }
    if (exception instanceof HandoffClaimedError) {
      return { status: 409, code: 'HANDOFF_CLAIMED', message: exception.message, details: exception.claim };
    }
    if (exception instanceof DeadLetterNotFoundError) {
      return { status: 404, code: 'DEAD_LETTER_NOT_FOUND', message: exception.message };
    }
    if (exception instanceof WebhookEndpointUnknownError) {
      return { status: 409, code: 'WEBHOOK_ENDPOINT_UNKNOWN', message: exception.message };
    }
    if (exception instanceof WebhookDeliveryFailedError) {
      return {
        status: 502,
        code: 'WEBHOOK_DELIVERY_FAILED',
        message: exception.message,
        details: { attempts: exception.letter.attempts, last_error: exception.letter.last_error },
      };
    }
    if (exception instanceof InvalidCursorError) {
      return { status: 400, code: 'INVALID_CURSOR', message: exception.message };
    }
    if (exception instanceof RateLimitUnavailableError) {
      return {
        status: 503,
        code: 'RATE_LIMIT_UNAVAILABLE',
        message: 'the rate limit store is unavailable; retry shortly',
        retryAfter: 5,
      };
    }
    if (exception instanceof DatabaseUnavailableError || isConnectionError(exception)) {
      return {
        status: 503,
        code: 'DATABASE_UNAVAILABLE',
        message: 'the database is unavailable; retry shortly',
        retryAfter: 5,
      };
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const response = exception.getResponse();
      const message =
        typeof response === 'object' && response !== null && 'message' in response
          ? String(response.message)
          : exception.message;
      const code = statusCode(status);
      return { status, code, message, ...(status === 429 ? { retryAfter: 60 } : {}) };
    }
    const status = (exception as { statusCode?: unknown })?.statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      // Fastify's own errors (body too large, bad JSON, unsupported media type).
      return {
        status,
        code: statusCode(status),
        message: exception instanceof Error ? exception.message : 'bad request',
      };
    }
    return { status: 500, code: 'INTERNAL_ERROR', message: 'unexpected error' };
  }
}

const STATUS_CODES: Record<number, string> = {
  [HttpStatus.BAD_REQUEST]: 'BAD_REQUEST',
  [HttpStatus.UNAUTHORIZED]: 'UNAUTHORIZED',
  [HttpStatus.FORBIDDEN]: 'FORBIDDEN',
  [HttpStatus.NOT_FOUND]: 'NOT_FOUND',
  [HttpStatus.CONFLICT]: 'CONFLICT',
  [HttpStatus.PAYLOAD_TOO_LARGE]: 'PAYLOAD_TOO_LARGE',
  [HttpStatus.UNSUPPORTED_MEDIA_TYPE]: 'UNSUPPORTED_MEDIA_TYPE',
  [HttpStatus.TOO_MANY_REQUESTS]: 'RATE_LIMITED',
  [HttpStatus.SERVICE_UNAVAILABLE]: 'SERVICE_UNAVAILABLE',
};

function statusCode(status: number): string {
  return STATUS_CODES[status] ?? (status >= 500 ? 'INTERNAL_ERROR' : 'REQUEST_FAILED');
}

/** tenant_id, session_id and conversation_key of a channel message body, when it has them. */
function conversationOf(body: unknown): Record<string, string> {
  if (typeof body !== 'object' || body === null) return {};
  const { tenant_id: tenant, session_id: session, agent_id: agent } = body as Record<string, unknown>;
  if (typeof tenant !== 'string' || typeof session !== 'string') return {};
  return {
    tenant_id: tenant,
    session_id: session,
    conversation_key: `${tenant}:${session}`,
    ...(typeof agent === 'string' ? { agent_id: agent } : {}),
  };
}
