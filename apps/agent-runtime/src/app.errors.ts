import { CodedError } from '@agent/contracts';

/** Codes the HTTP layer answers by status alone: the framework's errors (guards, throttler, fastify, node). */
export const HTTP_ERROR_CODES = [
  'BAD_REQUEST',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'REQUEST_TIMEOUT',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'RATE_LIMITED',
  'HEADERS_TOO_LARGE',
  'INTERNAL_ERROR',
  'SERVICE_UNAVAILABLE',
] as const;
export type HttpErrorCode = (typeof HTTP_ERROR_CODES)[number];

export const APP_ERROR_CODES = [
  'VALIDATION_FAILED',
  'RATE_LIMIT_UNAVAILABLE',
  'AUTH_NOT_CONFIGURED',
  'DEMO_MODEL_IN_PRODUCTION',
] as const;
export type AppErrorCode = (typeof APP_ERROR_CODES)[number];

/** The `details` of a 400: every invalid field with all its problems. */
export type FieldErrors = { field: string; errors: string[] }[];

export class RequestValidationError extends CodedError<AppErrorCode> {
  constructor(fieldErrors: FieldErrors) {
    super('VALIDATION_FAILED', 'request validation failed', { details: fieldErrors });
  }
}

/** The shared rate-limit counters could not be read or written (Redis down): a 503, never an unlimited pass. */
export class RateLimitUnavailableError extends CodedError<AppErrorCode> {
  constructor(cause: unknown) {
    super(
      'RATE_LIMIT_UNAVAILABLE',
      `rate limit store unavailable: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
}

export class AuthNotConfiguredError extends CodedError<AppErrorCode> {
  constructor() {
    super(
      'AUTH_NOT_CONFIGURED',
      'NODE_ENV=production requires API keys: set CHANNEL_API_KEYS (tenant:key,...) and/or ADMIN_API_KEYS ' +
        '(key or tenant:key,...). Refusing to start with authentication off.',
    );
  }
}

export class DemoModelInProductionError extends CodedError<AppErrorCode> {
  constructor() {
    super(
      'DEMO_MODEL_IN_PRODUCTION',
      'NODE_ENV=production refuses LLM_PROVIDER=demo: the built-in demo model is for trying the service, not a ' +
        'language model. Set LLM_PROVIDER, LLM_BASE_URL and LLM_MODEL to a real model endpoint.',
    );
  }
}

/** A body the parser refuses before anything reads it (media type, charset, bytes). */
export class BodyRefusedError extends CodedError<HttpErrorCode> {}
