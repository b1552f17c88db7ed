import { connect } from 'node:net';
import { FakeLlmServer, GUARDRAILS_ALLOW } from '../support/fake-llm';
import { rowsForConversation, rowsForTenant } from '../support/stored-rows';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

const TENANT = `hostile${Date.now().toString(36)}`;
const KEYS = { channel: 'channel-key-hostile', admin: 'admin-key-hostile' };
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

interface ErrorBody {
  error: { code: string; message: string; details?: { field: string; errors: string[] }[] };
  request_id: string;
}

/** Every refused request answers 4xx in the error envelope, carries no stack or SQL, and stores nothing. */
function expectRefused(res: { status: number; body: unknown }, status = 400): void {
  expect(res.status).toBe(status);
  const body = res.body as ErrorBody;
  expect(typeof body.error.code).toBe('string');
  expect(typeof body.error.message).toBe('string');
  expect(typeof body.request_id).toBe('string');
  expect(JSON.stringify(body)).not.toMatch(/\n\s+at |invalid byte sequence|call stack|SELECT|INSERT/);
}

describe('hostile input on the channel and admin endpoints', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    fake.setFallback({ content: 'ok' });
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        CHANNEL_API_KEYS: `${TENANT}:${KEYS.channel}`,
        ADMIN_API_KEYS: `${KEYS.admin}`,
        RAG_INGEST_ON_START: 'false',
        REQUEST_TIMEOUT_MS: '1000',
      },
    });
  });

  afterAll(async () => {
    await app.close();
    await fake.stop();
  });

  function message(overrides: Record<string, unknown> = {}) {
    return {
      tenant_id: TENANT,
      agent_id: 'telecom_contas',
      session_id: uniqueId('h'),
      text: 'Minha fatura veio alta',
      ...overrides,
    };
  }

  /** Rows of every table for the conversation of that session: 0 when the refused request wrote nothing. */
  async function storedFor(sessionId: string): Promise<number> {
    const rows = await rowsForConversation(app.dataSource, `${TENANT}:${sessionId}`);
    return Object.values(rows).reduce((a, b) => a + b, 0);
  }

  it('refuses a NUL byte or another control character in any identifier field with 400 (item 1)', async () => {
    const before = await rowsForTenant(app.dataSource, TENANT);
    for (const field of ['user_id', 'session_id', 'message_id', 'agent_id', 'tenant_id']) {
      for (const bad of ['a\u0000b', 'a\u0007b', 'line\nbreak']) {
        const body = message({ [field]: field === 'tenant_id' ? `${TENANT}${bad}` : bad });
        const res = await app.post<ErrorBody>('/v1/channels/web/messages', body, bearer(KEYS.channel));
        expectRefused(res);
        expect(res.body.error.code).toBe('VALIDATION_FAILED');
        expect(res.body.error.details?.map((d) => d.field)).toContain(field);
      }
    }
    expect(await rowsForTenant(app.dataSource, TENANT)).toEqual(before);
  });

  it('refuses deeply nested metadata and arrays with 400 instead of overflowing the stack (item 2)', async () => {
    const deepObject = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`;
    const deepArray = `${'['.repeat(30000)}${']'.repeat(30000)}`;
    for (const metadata of [deepObject, deepArray]) {
      const sessionId = uniqueId('deep');
      const raw = `{"tenant_id":"${TENANT}","agent_id":"telecom_contas","session_id":"${sessionId}","text":"oi","metadata":${metadata}}`;
      const res = await app.post<ErrorBody>('/v1/channels/web/messages', raw, bearer(KEYS.channel));
      expectRefused(res);
      expect(await storedFor(sessionId)).toBe(0);
    }
    // A deep array anywhere in the body, not only in metadata.
    const res = await app.post<ErrorBody>(
      '/v1/channels/web/messages',
      `{"tenant_id":${'['.repeat(30000)}${']'.repeat(30000)}}`,
      bearer(KEYS.channel),
    );
    expectRefused(res);
  });

  it('accepts metadata of ordinary depth', async () => {
    const res = await app.post(
      '/v1/channels/web/messages',
      message({ metadata: { a: { b: { c: { d: [1, [2, [3]]] } } }, locale: 'pt-BR' } }),
      bearer(KEYS.channel),
    );
    expect(res.status).toBe(200);
  });

  it('refuses agent ids that only exist on the prototype chain (item 3)', async () => {
    for (const agentId of [
      'constructor',
      '__proto__',
      'toString',
      'hasOwnProperty',
      'valueOf',
      '__defineGetter__',
    ]) {
      const body = message({ agent_id: agentId });
      const res = await app.post<ErrorBody>('/v1/channels/web/messages', body, bearer(KEYS.channel));
      expectRefused(res);
      expect(res.body.error.details?.map((d) => d.field)).toContain('agent_id');
      expect(await storedFor(body.session_id)).toBe(0);
    }
  });

  it('reaches a session with the longest accepted id on every admin endpoint (item 5)', async () => {
    const longest = `${uniqueId('long')}-`.padEnd(128, 'x');
    const first = await app.post(
      '/v1/channels/web/messages',
      message({ session_id: longest }),
      bearer(KEYS.channel),
    );
    expect(first.status).toBe(200);
    const admin = bearer(KEYS.admin);
    const path = (suffix = '') => `/v1/admin/sessions/${longest}${suffix}?tenant_id=${TENANT}`;
    for (const [method, suffix] of [
      ['GET', ''],
      ['GET', '/events'],
      ['GET', '/checkpoints'],
      ['GET', '/timeline'],
      ['POST', '/handoff'],
      ['POST', '/claim'],
      ['POST', '/resume'],
      ['POST', '/end'],
      ['DELETE', ''],
    ]) {
      const res = await app.request(method, path(suffix), method === 'POST' ? {} : undefined, admin);
      expect({ method, suffix, status: res.status }).toEqual({ method, suffix, status: 200 });
    }
    // One character more is refused the same way by both sides: 400 in the envelope, never 414.
    const tooLong = `${longest}y`;
    const channel = await app.post<ErrorBody>(
      '/v1/channels/web/messages',
      message({ session_id: tooLong }),
      bearer(KEYS.channel),
    );
    expectRefused(channel);
    for (const url of [
      `/v1/admin/sessions/${tooLong}?tenant_id=${TENANT}`,
      `/v1/admin/sessions/${'z'.repeat(5000)}?tenant_id=${TENANT}`,
    ]) {
      const res = await app.get<ErrorBody>(url, admin);
      expectRefused(res);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
  });

  it('refuses a NUL byte in the admin reason and in query parameters with 400', async () => {
    const sessionId = uniqueId('reason');
    expect(
      (await app.post('/v1/channels/web/messages', message({ session_id: sessionId }), bearer(KEYS.channel)))
        .status,
    ).toBe(200);
    const end = await app.post<ErrorBody>(
      `/v1/admin/sessions/${sessionId}/end?tenant_id=${TENANT}`,
      { reason: 'by phone\u0000' },
      bearer(KEYS.admin),
    );
    expectRefused(end);
    const list = await app.get<ErrorBody>(
      `/v1/admin/sessions?tenant_id=${TENANT}&agent_id=a%00b`,
      bearer(KEYS.admin),
    );
    expectRefused(list);
  });

  it('takes an admin action with no body or an empty one, and still refuses a malformed body', async () => {
    const sessionId = uniqueId('nobody');
    expect(
      (await app.post('/v1/channels/web/messages', message({ session_id: sessionId }), bearer(KEYS.channel)))
        .status,
    ).toBe(200);
    const action = (name: string) =>
      `${app.baseUrl}/v1/admin/sessions/${sessionId}/${name}?tenant_id=${TENANT}`;
    const status = async () =>
      (
        await app.get<{ session: { status: string } }>(
          `/v1/admin/sessions/${sessionId}?tenant_id=${TENANT}`,
          bearer(KEYS.admin),
        )
      ).body.session.status;
    const json = { 'content-type': 'application/json', ...bearer(KEYS.admin) };
    for (const malformed of ['[]', '"end"', 'null', '{"reason":5}', '{"why":"x"}', '{']) {
      const res = await fetch(action('end'), { method: 'POST', headers: json, body: malformed });
      expectRefused({ status: res.status, body: await res.json() });
    }
    expect(await status()).toBe('active');
    // What `curl -X POST` sends: no body and no content type.
    const bare = await fetch(action('handoff'), { method: 'POST', headers: bearer(KEYS.admin) });
    expect(bare.status).toBe(200);
    expect(await status()).toBe('handoff');
    const empty = await fetch(action('end'), { method: 'POST', headers: json, body: '' });
    expect(empty.status).toBe(200);
    expect(await status()).toBe('ended');
    // A body the route needs is still required.
    const turn = await fetch(`${app.baseUrl}/v1/channels/web/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(KEYS.channel) },
      body: '',
    });
    expectRefused({ status: turn.status, body: await turn.json() });
  });

  it('refuses a forged list cursor with 400 INVALID_CURSOR, not a database error', async () => {
    const forged = [
      ['1', `${TENANT}:x`],
      ['2020-02-30T00:00:00.000Z', `${TENANT}:x`],
      ['2020-01-01T00:00:00.000Z', `${TENANT}:\u0000`],
    ];
    for (const cursor of forged) {
      const encoded = Buffer.from(JSON.stringify(cursor)).toString('base64url');
      const res = await app.get<ErrorBody>(
        `/v1/admin/sessions?tenant_id=${TENANT}&cursor=${encoded}`,
        bearer(KEYS.admin),
      );
      expectRefused(res);
      expect(res.body.error.code).toBe('INVALID_CURSOR');
    }
  });

  it('accepts only application/json bodies in UTF-8 (415 otherwise) (item 11)', async () => {
    const body = message();
    const json = JSON.stringify(body);
    const cases: { contentType: string; payload: string | Buffer }[] = [
      { contentType: 'application/x-www-form-urlencoded', payload: new URLSearchParams(body).toString() },
      { contentType: 'text/plain', payload: json },
      { contentType: 'application/json; charset=utf-16le', payload: Buffer.from(json, 'utf16le') },
      { contentType: 'application/json; charset=latin1', payload: json },
    ];
    for (const { contentType, payload } of cases) {
      const res = await fetch(`${app.baseUrl}/v1/channels/web/messages`, {
        method: 'POST',
        headers: { 'content-type': contentType, ...bearer(KEYS.channel) },
        body: payload,
      });
      const parsed = (await res.json()) as ErrorBody;
      expectRefused({ status: res.status, body: parsed }, 415);
      expect(parsed.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    }
    expect(await storedFor(body.session_id)).toBe(0);
    const utf8 = await fetch(`${app.baseUrl}/v1/channels/web/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=UTF-8', ...bearer(KEYS.channel) },
      body: json,
    });
    expect(utf8.status).toBe(200);
  });

  it('refuses invalid UTF-8 in a JSON body with 400', async () => {
    const sessionId = uniqueId('utf8');
    const raw = Buffer.concat([
      Buffer.from(
        `{"tenant_id":"${TENANT}","agent_id":"telecom_contas","session_id":"${sessionId}","text":"a`,
      ),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}'),
    ]);
    const res = await fetch(`${app.baseUrl}/v1/channels/web/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(KEYS.channel) },
      body: raw,
    });
    expectRefused({ status: res.status, body: await res.json() });
    expect(await storedFor(sessionId)).toBe(0);
  });

  it('echoes a well-formed x-request-id and replaces anything else (item 11)', async () => {
    const good = await app.get('/health/live', { 'x-request-id': 'trace-1234.abc:def' });
    expect(good.headers.get('x-request-id')).toBe('trace-1234.abc:def');
    for (const bad of ['x'.repeat(300), 'has space', '<script>', '']) {
      const res = await app.get('/health/live', { 'x-request-id': bad });
      const echoed = res.headers.get('x-request-id') ?? '';
      expect(echoed).not.toBe(bad);
      expect(echoed).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('shows no config path or model names on the public readiness probe (item 11)', async () => {
    const res = await app.get<Record<string, unknown>>('/health/ready');
    expect(res.status).toBe(200);
    const text = JSON.stringify(res.body);
    expect(text).not.toContain('/config');
    expect(text).not.toMatch(/llm_profiles|profiles_path|config_dir/);
    expect(text).not.toMatch(/"model"/);
    expect((res.body as { status: string }).status).toBe('ok');
  });

  it('shows a model the endpoint does not know as down with its 404 to admins only, and stays ready', async () => {
    const body = '{"error":{"message":"The model `agent` does not exist","code":"model_not_found"}}';
    fake.script(GUARDRAILS_ALLOW);
    fake.script({ model: 'agent', reply: { status: 404, rawBody: body } });
    const turn = await app.post('/v1/channels/web/messages', message(), bearer(KEYS.channel));
    expect(turn.status).toBe(200);
    const admin = await app.get<{ info: { llm: { profiles: { name: string }[] } } }>(
      '/health/ready',
      bearer(KEYS.admin),
    );
    expect(admin.status).toBe(200);
    const profiles = new Map(admin.body.info.llm.profiles.map((p) => [p.name, p]));
    expect(profiles.get('agent')).toMatchObject({
      model: 'agent',
      state: 'down',
      last_failure: { kind: 'http_error', status: 404, body, at: expect.any(String) },
    });
    expect(profiles.get('guardrail')).toMatchObject({ state: 'up', last_failure: null });
    const open = await app.get<Record<string, unknown>>('/health/ready');
    expect(open.status).toBe(200);
    expect(JSON.stringify(open.body)).not.toMatch(/"model"|agent|down|404|last_failure/);
  });

  /** Sends `chunks` on a raw connection and returns everything the server wrote until it closed. */
  function rawExchange(chunks: string[]): Promise<{ text: string; ms: number }> {
    const { port } = new URL(app.baseUrl);
    const started = Date.now();
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => chunks.forEach((chunk) => socket.write(chunk)));
      let text = '';
      socket.on('data', (data: Buffer) => (text += data.toString('utf8')));
      socket.on('close', () => resolve({ text, ms: Date.now() - started }));
      socket.on('error', reject);
      socket.setTimeout(10000, () => socket.destroy(new Error('the server never closed the connection')));
    });
  }

  it('answers 408 in the envelope and closes a connection whose body or headers never finish (item 11)', async () => {
    const sessionId = uniqueId('slow');
    const partialBody = await rawExchange([
      `POST /v1/channels/web/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.channel}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 500\r\n\r\n',
      `{"tenant_id":"${TENANT}","session_id":"${sessionId}",`,
    ]);
    const partialHeaders = await rawExchange(['GET /health/live HTTP/1.1\r\nHost: x\r\nX-Slow: ']);
    for (const { text, ms } of [partialBody, partialHeaders]) {
      expect(text).toMatch(/^HTTP\/1\.1 408 /);
      const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as ErrorBody;
      expect(body.error.code).toBe('REQUEST_TIMEOUT');
      expect(body.request_id).toBeTruthy();
      expect(ms).toBeGreaterThanOrEqual(900);
      expect(ms).toBeLessThan(5000);
    }
    expect(await storedFor(sessionId)).toBe(0);
  });
});
