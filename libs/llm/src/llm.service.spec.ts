import { Logger } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { z } from 'zod';
import { AppConfigModule } from '@agent/config';
import { ObservabilityModule } from '@agent/observability';
import { FakeLlmServer } from '../../../test/support/fake-llm';
import { createServer } from 'node:net';
import {
  LlmHttpError,
  LlmInvalidResponseError,
  LlmNotConfiguredError,
  LlmTimeoutError,
  LlmUnreachableError,
} from './llm.errors';
import { LlmModule } from './llm.module';
import { LlmService } from './llm.service';
import { confidenceSchema, structuredOutput } from './structured-output';

const root = join(__dirname, '..', '..', '..');

async function buildService(env: Record<string, string | undefined>) {
  const saved = { ...process.env };
  Object.assign(process.env, {
    CONFIG_DIR: join(root, 'config'),
    LLM_PROFILES_PATH: join(root, 'test/support/config/llm_profiles.yaml'),
  });
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  try {
    const moduleRef = await Test.createTestingModule({
      imports: [AppConfigModule, ObservabilityModule, LlmModule],
    }).compile();
    await moduleRef.init();
    const calls: Record<string, unknown>[] = [];
    moduleRef.get(EventEmitter2).on('llm.call', (payload: Record<string, unknown>) => calls.push(payload));
    return { llm: moduleRef.get(LlmService), calls, close: () => moduleRef.close() };
  } finally {
    process.env = saved;
  }
}

describe(LlmService.name, () => {
  let fake: FakeLlmServer;
  let service: Awaited<ReturnType<typeof buildService>>;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    service = await buildService({ LLM_BASE_URL: fake.baseUrl, LLM_API_KEY: 'k' });
  });
  afterAll(async () => {
    await service.close();
    await fake.stop();
  });
  beforeEach(() => fake.reset());

  it('sends the profile model, temperature and capped max_tokens, and records usage', async () => {
    fake.script({
      model: 'route_continuity',
      reply: { json: { ok: true }, usage: { prompt_tokens: 11, completion_tokens: 3 } },
    });
    const result = await service.llm.chat({
      profile: 'route_continuity',
      messages: [{ role: 'user', content: 'hi' }],
      maxTokens: 40,
    });
    expect(result).toMatchObject({
      content: '{"ok":true}',
      model: 'route_continuity',
      promptTokens: 11,
      completionTokens: 3,
    });
    const body = fake.requests[0].body;
    expect(body).toMatchObject({
      model: 'route_continuity',
      temperature: 0,
      max_tokens: 40,
    });
    expect(body).not.toHaveProperty('response_format');
    expect(service.calls[service.calls.length - 1]).toMatchObject({
      profile: 'route_continuity',
      model: 'route_continuity',
      prompt_tokens: 11,
      completion_tokens: 3,
      outcome: 'ok',
    });
  });

  it('records the prompt tokens the provider served from its cache', async () => {
    fake.script({
      model: 'route_continuity',
      reply: { content: 'x', usage: { prompt_tokens: 1300, completion_tokens: 3, cached_tokens: 1024 } },
    });
    const result = await service.llm.chat({
      profile: 'route_continuity',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(result).toMatchObject({ promptTokens: 1300, cachedPromptTokens: 1024 });
    expect(service.calls[service.calls.length - 1]).toMatchObject({
      prompt_tokens: 1300,
      cached_prompt_tokens: 1024,
    });
  });

  it('never asks for more tokens than the profile allows', async () => {
    fake.script({ model: 'route_continuity', reply: { content: 'x' } });
    await service.llm.chat({
      profile: 'route_continuity',
      messages: [{ role: 'user', content: 'hi' }],
      maxTokens: 5000,
    });
    expect(fake.requests[0].body.max_tokens).toBe(80);
  });

  it("prices a profile at its model's price from llm_profiles.yaml, and knows when there is none", () => {
    // Cached prompt tokens cost what input does unless the table says otherwise.
    expect(service.llm.priceOf('router')).toEqual({
      model: 'router',
      currency: 'USD',
      input: 2,
      cached_input: 2,
      output: 8,
    });
    expect(service.llm.priceOf('guardrail')).toMatchObject({ input: 0.4, cached_input: 0.1 });
    expect(service.llm.priceOf('agent')).toBeNull();
    // A profile the file lacks calls `default`, and is priced as its model.
    expect(service.llm.priceOf('no_such_profile')).toMatchObject({ model: 'default', input: 0.4 });
  });

  it('falls back to the default profile for an unknown profile name', async () => {
    fake.script({ model: 'default', reply: { content: 'from default' } });
    const result = await service.llm.chat({
      profile: 'no_such_profile',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(result.content).toBe('from default');
  });

  it('aborts the request at the profile timeout', async () => {
    fake.script({ model: 'router', reply: { content: 'late', delayMs: 2500 } });
    const started = Date.now();
    await expect(
      service.llm.chat({ profile: 'router', messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toBeInstanceOf(LlmTimeoutError);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(service.calls[service.calls.length - 1]).toMatchObject({ profile: 'router', outcome: 'timeout' });
  });

  it('maps an HTTP error status and logs it with the profile, the model, the status and the body', async () => {
    const body = '{"object":"error","message":"The model `router` does not exist.","code":404}';
    fake.script({ model: 'router', reply: { status: 404, rawBody: body } });
    const lines: string[] = [];
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => {
      lines.push(String(message));
    });
    try {
      const error = await service.llm
        .chat({ profile: 'router', messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LlmHttpError);
      expect(error).toMatchObject({ status: 404, model: 'router', body });
      expect(lines).toEqual([`LLM profile router (model router) answered HTTP 404: ${body}`]);
    } finally {
      warn.mockRestore();
    }
  });

  it('reports per profile what its last real call said: unknown, down with the HTTP status, then up', async () => {
    const fresh = await buildService({ LLM_BASE_URL: fake.baseUrl, LLM_API_KEY: 'k' });
    const health = (name: string) => fresh.llm.describe().profiles.find((p) => p.name === name);
    try {
      expect(health('router')).toMatchObject({ state: 'unknown', last_success_at: null, last_failure: null });
      const body = '{"object":"error","message":"The model `router` does not exist.","code":404}';
      fake.script({ model: 'router', reply: { status: 404, rawBody: body }, times: 1 });
      const ask = (profile: string) =>
        fresh.llm.chat({ profile, messages: [{ role: 'user', content: 'hi' }] }).catch(() => null);
      // A name missing from the file calls `default`: the state is the profile really called.
      fake.script({ model: 'default', reply: { content: 'ok' } });
      await ask('not_in_the_file');
      await ask('router');
      expect(health('router')).toMatchObject({
        state: 'down',
        model: 'router',
        last_success_at: null,
        last_failure: { kind: 'http_error', status: 404, body, at: expect.any(String) },
      });
      expect(health('default')).toMatchObject({ state: 'up', last_success_at: expect.any(String) });
      expect(health('judge')?.state).toBe('unknown');
      // A cancelled call says nothing about the model; the next answer turns it up and keeps the last failure.
      fake.script({ model: 'router', reply: { content: 'late', delayMs: 500 }, times: 1 });
      await fresh.llm
        .chat({
          profile: 'router',
          messages: [{ role: 'user', content: 'hi' }],
          signal: AbortSignal.timeout(50),
        })
        .catch(() => null);
      expect(health('router')?.state).toBe('down');
      fake.script({ model: 'router', reply: { content: 'back' } });
      await ask('router');
      expect(health('router')).toMatchObject({
        state: 'up',
        last_success_at: expect.any(String),
        last_failure: { status: 404 },
      });
    } finally {
      await fresh.close();
    }
  });

  it('maps a malformed body to an invalid response', async () => {
    fake.script({ model: 'router', reply: { rawBody: '{"choices": []}' } });
    await expect(
      service.llm.chat({ profile: 'router', messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toBeInstanceOf(LlmInvalidResponseError);
    fake.script({ model: 'judge', reply: { rawBody: 'this is not json' } });
    await expect(
      service.llm.chat({ profile: 'judge', messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toMatchObject({
      kind: expect.stringMatching(/invalid_response|error/),
    });
  });

  it('sends every call to one endpoint over one keep-alive connection', async () => {
    fake.setFallback({ json: { label: 'YES', confidence: 1 } });
    const before = fake.connections;
    for (const profile of ['router', 'judge', 'agent', 'route_continuity']) {
      await service.llm.chat({ profile, messages: [{ role: 'user', content: 'hi' }] });
      await service.llm.embed(profile, ['x']);
    }
    expect(fake.connections - before).toBeLessThanOrEqual(1);
  });

  it("stops at the caller's signal with a cancelled error, apart from timeouts, billing its prompt", async () => {
    const controller = new AbortController();
    // The provider has the request (and would answer after a second) when the caller gives up.
    fake.script({
      model: 'agent',
      reply: () => {
        controller.abort();
        return { content: 'late', delayMs: 1000 };
      },
    });
    await expect(
      service.llm.chat({
        profile: 'agent',
        messages: [{ role: 'user', content: 'x'.repeat(40) }],
        signal: controller.signal,
      }),
    ).rejects.toMatchObject({ kind: 'cancelled' });
    // The provider has the prompt: a cancelled call counts its estimated prompt tokens (characters / 4).
    expect(service.calls[service.calls.length - 1]).toMatchObject({
      profile: 'agent',
      outcome: 'cancelled',
      prompt_tokens: 10,
      completion_tokens: 0,
    });
  });

  it('returns tool calls', async () => {
    fake.script({
      model: 'agent',
      reply: { tool_calls: [{ name: 'consultar_fatura', arguments: { msisdn: '11999990000' } }] },
    });
    const result = await service.llm.chat({
      profile: 'agent',
      messages: [{ role: 'user', content: 'fatura' }],
      tools: [
        {
          type: 'function',
          function: { name: 'consultar_fatura', parameters: { type: 'object', properties: {} } },
        },
      ],
    });
    expect(result.toolCalls).toEqual([
      { id: expect.any(String), name: 'consultar_fatura', arguments: '{"msisdn":"11999990000"}' },
    ]);
  });

  it('embeds texts in input order and records the call', async () => {
    // Any defined profile can embed; the fake answers /v1/embeddings with deterministic vectors.
    const result = await service.llm.embed('router', ['roaming na Europa', 'fatura por pix']);
    expect(result).toMatchObject({ profile: 'router', model: 'router', dimensions: 64 });
    expect(result.vectors).toHaveLength(2);
    expect(result.vectors[0]).toHaveLength(64);
    expect(fake.requests[0].body).toMatchObject({
      model: 'router',
      input: ['roaming na Europa', 'fatura por pix'],
      encoding_format: 'float',
    });
    expect(service.calls[service.calls.length - 1]).toMatchObject({ profile: 'router', outcome: 'ok' });
  });

  it('refuses to embed without a defined profile (no default fallback) and validates the response', async () => {
    await expect(service.llm.embed('embedding', ['x'])).rejects.toBeInstanceOf(LlmNotConfiguredError);
    expect(service.llm.embeddingProfile('embedding')).toBeNull();
    fake.script({ model: 'router', reply: { rawBody: '{"data": [{"index": 0, "embedding": ["a"]}]}' } });
    await expect(service.llm.embed('router', ['x'])).rejects.toBeInstanceOf(LlmInvalidResponseError);
    fake.script({ model: 'judge', reply: { rawBody: '{"data": []}' } });
    await expect(service.llm.embed('judge', ['x'])).rejects.toBeInstanceOf(LlmInvalidResponseError);
    fake.script({ model: 'guardrail', reply: { status: 429 } });
    await expect(service.llm.embed('guardrail', ['x'])).rejects.toBeInstanceOf(LlmHttpError);
  });

  describe('structured calls', () => {
    const verdict = structuredOutput(
      'test_verdict',
      z.object({ label: z.enum(['YES', 'NO']), confidence: confidenceSchema }),
    );
    const ask = (profile: string) =>
      service.llm.structured({ profile, output: verdict, messages: [{ role: 'user', content: 'x' }] });
    let dir: string;
    let modes: Awaited<ReturnType<typeof buildService>>;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'llm-structured-'));
      const profile = (mode: string) =>
        `{ provider: openai_compatible, model: ${mode}, timeout_seconds: 1, structured_output: ${mode} }`;
      writeFileSync(
        join(dir, 'profiles.yaml'),
        `profiles:
  schema: ${profile('json_schema')}
  object: ${profile('json_object')}
  plain: ${profile('none')}
`,
      );
      modes = await buildService({
        LLM_BASE_URL: fake.baseUrl,
        LLM_API_KEY: 'k',
        LLM_PROFILES_PATH: join(dir, 'profiles.yaml'),
      });
    });
    afterAll(async () => {
      await modes.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('asks each profile in its structured-output mode and validates the same way in all', async () => {
      fake.setFallback({ content: 'Here: ```json\n{"label": "YES", "confidence": 0.8}\n```' });
      for (const profile of ['schema', 'object', 'plain']) {
        const result = await modes.llm.structured({
          profile,
          output: verdict,
          messages: [{ role: 'user', content: 'x' }],
        });
        expect(result).toMatchObject({ ok: true, value: { label: 'YES', confidence: 0.8 } });
      }
      const formats = fake.requests.map((r) => r.body.response_format);
      expect(formats[0]).toEqual({ type: 'json_schema', json_schema: verdict.jsonSchema });
      expect(formats[1]).toEqual({ type: 'json_object' });
      expect(formats[2]).toBeUndefined();
    });

    it.each([
      ['prose', 'yes, it is', /no JSON object/],
      [
        'two objects',
        '{"label": "YES", "confidence": 0.8} {"label": "NO", "confidence": 0.8}',
        /more than one/,
      ],
      ['a quoted confidence', '{"label": "YES", "confidence": "0.8"}', /confidence: Expected number/],
      ['an unknown label', '{"label": "MAYBE", "confidence": 0.8}', /label: Invalid enum value/],
    ])('answers invalid_output for %s, with what was wrong', async (_label, content, detail) => {
      fake.script({ model: 'judge', reply: { content } });
      expect(await ask('judge')).toMatchObject({
        ok: false,
        reason: 'invalid_output',
        detail: expect.stringMatching(detail),
      });
      // The transport call itself succeeded: usage is accounted as ok.
      expect(service.calls[service.calls.length - 1]).toMatchObject({ profile: 'judge', outcome: 'ok' });
    });

    it.each([
      ['timeout', { delayMs: 1500 }, 'timeout', undefined],
      ['HTTP 429', { status: 429 }, 'http_error', 429],
      ['a dropped connection', { hangUp: true }, 'error', undefined],
      ['an empty completion', { rawBody: '{"choices": []}' }, 'invalid_output', undefined],
    ])('answers a typed failure for a %s, never throws', async (_label, reply, reason, status) => {
      fake.script({ model: 'router', reply });
      const result = await ask('router');
      expect(result).toMatchObject({ ok: false, reason, detail: expect.any(String) });
      expect(result.ok === false && result.status).toBe(status);
    });

    it('answers not_configured without an endpoint', async () => {
      const unconfigured = await buildService({ LLM_BASE_URL: undefined, LLM_API_KEY: undefined });
      try {
        expect(
          await unconfigured.llm.structured({ profile: 'router', output: verdict, messages: [] }),
        ).toMatchObject({ ok: false, reason: 'not_configured' });
      } finally {
        await unconfigured.close();
      }
    });
  });

  it('without an endpoint, reports not configured and fails fast with a typed error', async () => {
    const unconfigured = await buildService({ LLM_BASE_URL: undefined, LLM_API_KEY: undefined });
    try {
      expect(unconfigured.llm.describe().configured).toBe(false);
      await expect(
        unconfigured.llm.chat({ profile: 'router', messages: [{ role: 'user', content: 'x' }] }),
      ).rejects.toBeInstanceOf(LlmNotConfiguredError);
    } finally {
      await unconfigured.close();
    }
  });

  it('says which endpoint it could not reach and why: refused, DNS, TLS, never with the credentials', async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    const fakePort = new URL(fake.baseUrl).port;
    const cases = [
      { base: `http://user:secret@127.0.0.1:${closedPort}/v1`, cause: 'refused', code: 'ECONNREFUSED' },
      {
        base: 'http://no-such-host.invalid/v1',
        cause: 'dns',
        code: expect.stringMatching(/^E(NOTFOUND|AI_)/),
      },
      // TLS to a plain HTTP server: the handshake fails.
      { base: `https://127.0.0.1:${fakePort}/v1`, cause: 'tls', code: expect.any(String) },
    ];
    for (const { base, cause, code } of cases) {
      const unreachable = await buildService({ LLM_BASE_URL: base, LLM_API_KEY: 'k' });
      try {
        const error = await unreachable.llm
          .chat({ profile: 'router', messages: [{ role: 'user', content: 'hi' }] })
          .catch((e: unknown) => e);
        const shown = base.replace('user:secret@', '');
        expect(error).toBeInstanceOf(LlmUnreachableError);
        expect(error).toMatchObject({ kind: 'error', url: shown, network: { cause, code } });
        expect((error as Error).message).toContain(`LLM profile router cannot reach ${shown}: `);
        expect((error as Error).message).not.toContain('secret');
        const structured = await unreachable.llm.structured({
          profile: 'router',
          output: structuredOutput('check', z.object({ ok: z.boolean() })),
          messages: [{ role: 'user', content: 'hi' }],
        });
        expect(structured).toMatchObject({ ok: false, reason: 'error', unreachable: { url: shown } });
      } finally {
        await unreachable.close();
      }
    }
  });
});
