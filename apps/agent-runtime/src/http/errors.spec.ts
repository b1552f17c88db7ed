import { HttpException } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CHECKPOINT_ERROR_CODES,
  CheckpointFencingError,
  InvalidCursorError,
  TurnLockTimeoutError,
} from '@agent/checkpoint';
import { CONFIG_ERROR_CODES, ConfigFileError } from '@agent/config';
import { CodedError } from '@agent/contracts';
import { DATABASE_ERROR_CODES, DatabaseUnavailableError } from '@agent/database';
import {
  DeadLetter,
  DeadLetterNotFoundError,
  EVENTS_ERROR_CODES,
  WebhookDeliveryFailedError,
  RedeliveryInProgressError,
  WebhookEndpointUnknownError,
} from '@agent/events';
import { GUARDRAILS_ERROR_CODES } from '@agent/guardrails';
import { LLM_ERROR_CODES, LlmTimeoutError } from '@agent/llm';
import { MCP_ERROR_CODES } from '@agent/mcp';
import { MEMORY_ERROR_CODES } from '@agent/memory';
import { RAG_ERROR_CODES } from '@agent/rag';
import {
  HandoffClaimedError,
  SessionNotFoundError,
  SessionStateConflictError,
  WORKFLOW_ERROR_CODES,
} from '@agent/workflow';
import {
  APP_ERROR_CODES,
  BodyRefusedError,
  HTTP_ERROR_CODES,
  RateLimitUnavailableError,
  RequestValidationError,
} from '../app.errors';
import { classifyError, ERROR_STATUSES } from './errors';

const MODULE_CODES: Record<string, readonly string[]> = {
  app: APP_ERROR_CODES,
  http: HTTP_ERROR_CODES,
  checkpoint: CHECKPOINT_ERROR_CODES,
  config: CONFIG_ERROR_CODES,
  database: DATABASE_ERROR_CODES,
  events: EVENTS_ERROR_CODES,
  guardrails: GUARDRAILS_ERROR_CODES,
  llm: LLM_ERROR_CODES,
  mcp: MCP_ERROR_CODES,
  memory: MEMORY_ERROR_CODES,
  rag: RAG_ERROR_CODES,
  workflow: WORKFLOW_ERROR_CODES,
};

const INTERNAL = { status: 500, code: 'INTERNAL_ERROR', message: 'unexpected error' };

const letter: DeadLetter = {
  id: '7',
  destination: 'crm',
  tenant_id: 'acme',
  event_id: 'e-1',
  event_name: 'session.ended',
  body: { id: 'e-1', type: 'session.ended', timestamp: '2026-01-01T00:00:00.000Z', data: {} },
  attempts: 4,
  last_error: 'HTTP 500',
  created_at: '2026-01-01T00:00:00.000Z',
  redelivered_at: null,
};

describe('error table', () => {
  it.each(Object.entries(MODULE_CODES))('gives every %s error code a status', (_module, codes) => {
    expect(codes.filter((code) => !ERROR_STATUSES.has(code))).toEqual([]);
  });

  it('holds no code that no module has, and no code twice', () => {
    const all = Object.values(MODULE_CODES).flat();
    expect(new Set(all).size).toBe(all.length);
    expect([...ERROR_STATUSES.keys()].filter((code) => !all.includes(code))).toEqual([]);
  });

  it('gives each status the framework answers by exactly one code', () => {
    const statuses = HTTP_ERROR_CODES.map((code) => ERROR_STATUSES.get(code)?.status);
    expect(new Set(statuses).size).toBe(HTTP_ERROR_CODES.length);
  });
});

describe(classifyError.name, () => {
  it('answers a busy conversation 409 with the Retry-After the error computed', () => {
    expect(classifyError(new TurnLockTimeoutError('acme:s-1', 500, 3))).toEqual({
      status: 409,
      code: 'TURN_LOCK_TIMEOUT',
      message: 'conversation acme:s-1 is busy with another turn (waited 500 ms)',
      retryAfter: 3,
    });
    expect(classifyError(new CheckpointFencingError('acme:s-1', 4))).toMatchObject({
      status: 409,
      code: 'CONVERSATION_MOVED_ON',
      retryAfter: 1,
    });
  });

  it('says the public message instead of one naming the conversation', () => {
    expect(classifyError(new SessionNotFoundError('acme:s-1'))).toEqual({
      status: 404,
      code: 'SESSION_NOT_FOUND',
      message: 'session not found',
    });
  });

  it('hands the details of an error to the client', () => {
    expect(classifyError(new WebhookDeliveryFailedError(letter))).toEqual({
      status: 502,
      code: 'WEBHOOK_DELIVERY_FAILED',
      message: 'the endpoint did not accept the event: HTTP 500',
      details: { attempts: 4, last_error: 'HTTP 500' },
    });
    expect(
      classifyError(
        new HandoffClaimedError('acme:s-1', { claimed_by: 'maria', claimed_at: '2026-01-01T00:00:00Z' }),
      ),
    ).toMatchObject({ status: 409, details: { claimed_by: 'maria', claimed_at: '2026-01-01T00:00:00Z' } });
    expect(classifyError(new SessionStateConflictError('acme:s-1', 'ended', 'the session ended'))).toEqual({
      status: 409,
      code: 'SESSION_STATE_CONFLICT',
      message: 'the session ended',
      details: { status: 'ended' },
    });
    const fields = [{ field: 'text', errors: ['must be a string'] }];
    expect(classifyError(new RequestValidationError(fields))).toEqual({
      status: 400,
      code: 'VALIDATION_FAILED',
      message: 'request validation failed',
      details: fields,
    });
  });

  it('maps the dead-letter errors to 404 and 409', () => {
    expect(classifyError(new DeadLetterNotFoundError())).toMatchObject({
      status: 404,
      code: 'DEAD_LETTER_NOT_FOUND',
    });
    expect(classifyError(new WebhookEndpointUnknownError('crm', 'acme'))).toMatchObject({
      status: 409,
      code: 'WEBHOOK_ENDPOINT_UNKNOWN',
    });
    expect(classifyError(new RedeliveryInProgressError(4500))).toEqual({
      status: 409,
      code: 'REDELIVERY_IN_PROGRESS',
      message: 'another redelivery of this dead letter is in flight',
      retryAfter: 5,
    });
  });

  it('answers unreachable stores 503 with Retry-After, a raw driver failure too', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const database = {
      status: 503,
      code: 'DATABASE_UNAVAILABLE',
      message: 'the database is unavailable; retry shortly',
      retryAfter: 5,
    };
    expect(classifyError(new DatabaseUnavailableError(refused))).toEqual(database);
    expect(classifyError(refused)).toEqual(database);
    // The Redis failure under it is a connection error too: the code decides.
    expect(classifyError(new RateLimitUnavailableError(refused))).toEqual({
      status: 503,
      code: 'RATE_LIMIT_UNAVAILABLE',
      message: 'the rate limit store is unavailable; retry shortly',
      retryAfter: 5,
    });
  });

  it('answers an internal code, and a code the table does not know, with the generic 500 only', () => {
    expect(classifyError(new LlmTimeoutError('router', 800))).toEqual(INTERNAL);
    expect(classifyError(new ConfigFileError('/x.yaml', ['bad']))).toEqual(INTERNAL);
    class StrayError extends CodedError<'STRAY'> {}
    expect(classifyError(new StrayError('STRAY', 'internal detail', { details: { secret: 1 } }))).toEqual(
      INTERNAL,
    );
    expect(classifyError(new Error('boom'))).toEqual(INTERNAL);
  });

  it('answers the framework by status, and a refused body by its code', () => {
    expect(classifyError(new HttpException('slow down', 429))).toEqual({
      status: 429,
      code: 'RATE_LIMITED',
      message: 'slow down',
      retryAfter: 60,
    });
    expect(classifyError(new HttpException('teapot', 418))).toEqual({
      status: 418,
      code: 'REQUEST_FAILED',
      message: 'teapot',
    });
    expect(classifyError(new BodyRefusedError('UNSUPPORTED_MEDIA_TYPE', 'send JSON'))).toEqual({
      status: 415,
      code: 'UNSUPPORTED_MEDIA_TYPE',
      message: 'send JSON',
    });
    expect(classifyError(new InvalidCursorError())).toMatchObject({ status: 400, code: 'INVALID_CURSOR' });
  });
});

describe('docs/api.md', () => {
  const api = readFileSync(join(__dirname, '..', '..', '..', '..', 'docs', 'api.md'), 'utf8');
  const section = api.slice(
    api.indexOf('\n## Errors\n'),
    api.indexOf('\n## ', api.indexOf('\n## Errors\n') + 1),
  );

  it('lists every code with the status and meaning of the table, in its order', () => {
    const documented = [...section.matchAll(/^\| `([A-Z_]+)` +\|(?: (\d{3}) +\|)? (.+?) +\|$/gm)].map(
      ([, code, status, meaning]) => [code, Number(status ?? 500), meaning],
    );
    const expected = [...ERROR_STATUSES].map(([code, entry]) => [code, entry.status, entry.meaning]);
    const publicFirst = [
      ...expected.filter(([code, status]) => status !== 500 || code === 'INTERNAL_ERROR'),
      ...expected.filter(([code, status]) => status === 500 && code !== 'INTERNAL_ERROR'),
    ];
    expect(documented).toEqual(publicFirst);
  });
});
