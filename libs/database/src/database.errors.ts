import { CodedError } from '@agent/contracts';

export const DATABASE_ERROR_CODES = ['DATABASE_UNAVAILABLE', 'DATA_DIR_LOCKED'] as const;
export type DatabaseErrorCode = (typeof DATABASE_ERROR_CODES)[number];

/** Errors that mean "the database cannot be reached right now" (mapped to 503 by the HTTP layer). */
export class DatabaseUnavailableError extends CodedError<DatabaseErrorCode> {
  constructor(cause: unknown) {
    super(
      'DATABASE_UNAVAILABLE',
      `database unavailable: ${cause instanceof Error ? cause.message : String(cause)}`,
      {
        cause,
      },
    );
  }
}

/** Another live process holds the data directory: nothing was started, nothing was written. */
export class DataDirectoryLockedError extends CodedError<DatabaseErrorCode> {
  constructor(
    readonly dataDir: string,
    readonly holderPid: number,
  ) {
    super(
      'DATA_DIR_LOCKED',
      `the embedded database directory ${dataDir} is in use by process ${holderPid}: stop that process first ` +
        '(one process per data directory), or point DATA_DIR at another directory',
    );
  }
}
