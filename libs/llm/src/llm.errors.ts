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
  constructor(profile: string, timeoutMs: number, cause?: unknown) {
    super('timeout', `LLM profile ${profile} timed out after ${timeoutMs} ms`, undefined, { cause });
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
