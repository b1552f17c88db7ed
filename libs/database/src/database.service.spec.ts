import { QueryRunnerAlreadyReleasedError, QueryRunnerProviderAlreadyReleasedError } from 'typeorm';
import { DatabaseUnavailableError } from './database.errors';
import { isConnectionError } from './database.service';

describe('isConnectionError', () => {
  it('recognises a query runner TypeORM released because its connection died (at COMMIT or between statements)', () => {
    expect(isConnectionError(new QueryRunnerAlreadyReleasedError())).toBe(true);
    expect(isConnectionError(new QueryRunnerProviderAlreadyReleasedError())).toBe(true);
    expect(isConnectionError(new Error('wrapped', { cause: new QueryRunnerAlreadyReleasedError() }))).toBe(
      true,
    );
  });

  it('recognises connection codes and messages, and the outage error', () => {
    expect(isConnectionError(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe(true);
    expect(isConnectionError(Object.assign(new Error('x'), { code: '57P01' }))).toBe(true);
    expect(isConnectionError(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isConnectionError(new DatabaseUnavailableError('down'))).toBe(true);
  });

  it('leaves statement errors alone', () => {
    expect(isConnectionError(Object.assign(new Error('syntax error'), { code: '42601' }))).toBe(false);
    expect(isConnectionError(new Error('duplicate key value'))).toBe(false);
  });
});
