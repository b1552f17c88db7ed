/** A value that survives JSON.stringify unchanged: what an error may hand to a client. */
export type JsonValue = string | number | boolean | null | readonly JsonValue[] | JsonObject;

export interface JsonObject {
  readonly [key: string]: JsonValue;
}

export interface CodedErrorOptions {
  /** What a client may see besides the message (field errors are a list of objects): nothing internal. */
  details?: JsonObject | readonly JsonObject[];
  /** How long a client should wait before trying again (the Retry-After header). */
  retryAfterSeconds?: number;
  cause?: unknown;
}

/**
 * An error with a stable machine-readable `code` from its module's code list. Modules know nothing of HTTP: the
 * app maps each code to a status in one table.
 */
export abstract class CodedError<C extends string = string> extends Error {
  readonly details?: JsonObject | readonly JsonObject[];
  readonly retryAfterSeconds?: number;

  constructor(
    readonly code: C,
    message: string,
    { details, retryAfterSeconds, cause }: CodedErrorOptions = {},
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = new.target.name;
    if (details !== undefined) this.details = details;
    if (retryAfterSeconds !== undefined) this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** `instanceof CodedError` without the `any` code that narrowing a generic class gives. */
export function isCodedError(value: unknown): value is CodedError {
  return value instanceof CodedError;
}
