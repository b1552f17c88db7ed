import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import {
  DataSource,
  EntityManager,
  QueryRunnerAlreadyReleasedError,
  QueryRunnerProviderAlreadyReleasedError,
} from 'typeorm';
import { DatabaseUnavailableError } from './database.errors';
import { EmbeddedPostgres } from './embedded-postgres';

const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  '53300', // too_many_connections
  '57P01', // admin_shutdown (pg_terminate_backend)
  '57P02',
  '57P03', // cannot_connect_now
  '08000',
  '08001',
  '08003',
  '08006',
]);

/** True for failures of the connection itself (as opposed to a bad query). */
export function isConnectionError(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth++) {
    if (current instanceof DatabaseUnavailableError) return true;
    // The client emitted 'error' between two statements of a transaction (or at its COMMIT), so TypeORM released
    // the query runner under it; the server rolled the transaction back.
    if (
      current instanceof QueryRunnerProviderAlreadyReleasedError ||
      current instanceof QueryRunnerAlreadyReleasedError
    ) {
      return true;
    }
    if (typeof current === 'object' && current !== null) {
      const code = (current as { code?: unknown }).code;
      if (typeof code === 'string' && (CONNECTION_ERROR_CODES.has(code) || code.startsWith('08'))) {
        return true;
      }
      const message = (current as { message?: unknown }).message;
      if (
        typeof message === 'string' &&
        /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|terminating connection|Client was closed and is not queryable/i.test(
          message,
        )
      ) {
        return true;
      }
      current = (current as { cause?: unknown }).cause ?? (current as { driverError?: unknown }).driverError;
    } else break;
  }
  return false;
}

@Injectable()
export class DatabaseService implements OnApplicationShutdown {
  private readonly logger = new Logger(DatabaseService.name);

  constructor(
    readonly dataSource: DataSource,
    private readonly embedded: EmbeddedPostgres | null,
  ) {}

  get isEmbedded(): boolean {
    return this.embedded !== null;
  }

  async ping(): Promise<void> {
    await this.dataSource.query('SELECT 1');
  }

  /** Names of migrations that exist in code but are not applied. */
  async pendingMigrations(): Promise<string[]> {
    const applied: { name: string }[] = await this.dataSource.query('SELECT name FROM typeorm_migrations');
    const appliedNames = new Set(applied.map((row) => row.name));
    return this.dataSource.migrations
      .map((m) => m.name ?? m.constructor.name)
      .filter((name) => !appliedNames.has(name));
  }

  /** Runs `work` in one transaction; connection failures surface as DatabaseUnavailableError. */
  async transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    try {
      return await this.dataSource.transaction(work);
    } catch (error) {
      if (isConnectionError(error)) throw new DatabaseUnavailableError(error);
      throw error;
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
    if (this.embedded) {
      await this.embedded.stop();
      this.logger.log('embedded Postgres stopped');
    }
  }
}
