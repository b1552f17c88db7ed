export type LlmErrorKind =
  'not_configured' | 'timeout' | 'http_error' | 'invalid_response' | 'cancelled' | 'error';

/** A failed LLM call; `kind` tells the stage which documented fallback applies. */
export class LlmError extends Error {
  constructor(
    readonly kind: LlmErrorKind,
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'LlmError';
  }
}

export class LlmNotConfiguredError extends LlmError {
  constructor(message: string) {
    super('not_configured', message);
    this.name = 'LlmNotConfiguredError';
  }
}

export class LlmTimeoutError extends LlmError {
  constructor(profile: string, timeoutMs: number, cause?: unknown) {
    super('timeout', `LLM profile ${profile} timed out after ${timeoutMs} ms`, undefined, { cause });
    this.name = 'LlmTimeoutError';
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
    this.name = 'LlmHttpError';
  }
}

export class LlmInvalidResponseError extends LlmError {
  constructor(profile: string, detail: string, cause?: unknown) {
    super('invalid_response', `LLM profile ${profile} returned an invalid response: ${detail}`, undefined, {
      cause,
    });
    this.name = 'LlmInvalidResponseError';
  }
}
