import { randomBytes } from 'node:crypto';
import { backoffDelay } from './webhook.destination';
import { acceptsEvent, secretProblem, webhooksFileSchema } from './webhooks.config';

describe('webhooks.yaml', () => {
  const endpoint = {
    id: 'acme-crm',
    tenant_id: 'acme',
    url: 'https://crm.example.com/hooks',
    secret_env: 'ACME_CRM_WEBHOOK_SECRET',
  };

  it('fills the defaults: every event, enabled', () => {
    expect(webhooksFileSchema.parse({ endpoints: [endpoint] }).endpoints[0]).toMatchObject({
      events: ['*'],
      enabled: true,
    });
    expect(webhooksFileSchema.parse({}).endpoints).toEqual([]);
  });

  it('refuses unknown keys, duplicate ids, bad URLs, secrets written in the file and bad filters', () => {
    const issues = (file: unknown) =>
      webhooksFileSchema
        .safeParse(file)
        .error?.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    expect(issues({ endpoints: [{ ...endpoint, secret: 'x' }] })).toEqual([
      expect.stringContaining('Unrecognized key'),
    ]);
    expect(issues({ endpoints: [endpoint, endpoint] })).toEqual(['endpoints.1.id: duplicate id']);
    expect(issues({ endpoints: [{ ...endpoint, url: 'ftp://x' }] })).toEqual([
      'endpoints.0.url: expected an http(s) URL',
    ]);
    expect(issues({ endpoints: [{ ...endpoint, secret_env: 'whsec_abc' }] })).toEqual([
      'endpoints.0.secret_env: expected an environment variable name',
    ]);
    expect(issues({ endpoints: [{ ...endpoint, events: ['session.*.x'] }] })).toEqual([
      'endpoints.0.events.0: expected an event name, or a prefix ending in *',
    ]);
  });

  it('accepts Standard Webhooks secrets of enough bytes only', () => {
    expect(secretProblem(`whsec_${randomBytes(32).toString('base64')}`)).toBeNull();
    expect(secretProblem(randomBytes(24).toString('base64'))).toBeNull();
    expect(secretProblem(undefined)).toBe('is not set');
    expect(secretProblem('whsec_not base64!')).toBe('is not base64 (optionally prefixed whsec_)');
    expect(secretProblem(`whsec_${randomBytes(8).toString('base64')}`)).toBe('holds fewer than 24 bytes');
  });

  it('filters by exact name or prefix', () => {
    expect(acceptsEvent(['*'], 'NOC.001')).toBe(true);
    expect(acceptsEvent(['session.*'], 'session.resumed')).toBe(true);
    expect(acceptsEvent(['session.*'], 'sessions.x')).toBe(false);
    expect(acceptsEvent(['AGENT_COMPLETED'], 'AGENT_COMPLETED')).toBe(true);
    expect(acceptsEvent(['AGENT_COMPLETED'], 'AGENT_STARTED')).toBe(false);
  });
});

describe('webhook retry backoff', () => {
  it('doubles up to the cap, with half of each wait random', () => {
    expect([1, 2, 3, 4, 5].map((attempt) => backoffDelay(attempt, 1000, 5000, () => 0))).toEqual([
      500, 1000, 2000, 2500, 2500,
    ]);
    expect([1, 2, 3, 4, 5].map((attempt) => backoffDelay(attempt, 1000, 5000, () => 1))).toEqual([
      1000, 2000, 4000, 5000, 5000,
    ]);
  });
});
