import { QueryRunnerAlreadyReleasedError, QueryRunnerProviderAlreadyReleasedError } from 'typeorm';
import { DatabaseUnavailableError } from './database.errors';
import { isConnectionError, isLostConnection, isTimeoutError } from './database.service';

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

describe('isTimeoutError', () => {
  it('recognises a server that did not answer: a read timeout, no connection within the connect timeout', () => {
    expect(isTimeoutError(new Error('Query read timeout'))).toBe(true);
    expect(isTimeoutError(new Error('timeout exceeded when trying to connect'))).toBe(true);
    expect(
      isTimeoutError(new Error('x', { cause: new Error('Connection terminated due to connection timeout') })),
    ).toBe(true);
    expect(isConnectionError(new Error('Query read timeout'))).toBe(true);
  });

  it('leaves failures that came fast alone', () => {
    expect(isTimeoutError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBe(false);
    expect(isTimeoutError(new Error('Connection terminated unexpectedly'))).toBe(false);
  });
});

describe('isLostConnection', () => {
  it('is a connection the server ended, or refused while starting up', () => {
    expect(isLostConnection(Object.assign(new Error('terminating connection'), { code: '57P01' }))).toBe(
      true,
    );
    expect(
      isLostConnection(Object.assign(new Error('the database system is starting up'), { code: '57P03' })),
    ).toBe(true);
    expect(isLostConnection(new QueryRunnerAlreadyReleasedError())).toBe(true);
  });

  it('is not a server nobody answers for, nor a statement error', () => {
    expect(isLostConnection(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(
      false,
    );
    expect(isLostConnection(new Error('Query read timeout'))).toBe(false);
    expect(isLostConnection(Object.assign(new Error('syntax error'), { code: '42601' }))).toBe(false);
  });
});
