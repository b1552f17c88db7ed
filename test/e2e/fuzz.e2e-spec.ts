import fc from 'fast-check';
import { FakeLlmServer } from '../support/fake-llm';
import { scriptStages } from '../support/scripted-stages';
import { rowsForConversation, rowsForTenant } from '../support/stored-rows';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * Fuzzing the public API over HTTP against a running app (real Postgres with DATABASE_URL, else the embedded one):
 * random and mutated bodies, headers, path parameters and query strings. Seeded and bounded: FUZZ_SEED and
 * FUZZ_RUNS (runs per property, 4 properties) reproduce or widen a run. Every answer must be a documented status
 * (no 5xx but the documented 503s), in the error envelope when it is an error, with no stack trace or SQL in it,
 * and a refused request must store nothing.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20261130);
const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const TENANT = `fuzz${Date.now().toString(36)}`;
const CHANNEL_KEY = 'channel-key-fuzz-0001';
const ADMIN_KEY = 'admin-key-fuzz-00001';
const DOCUMENTED_503 = ['DATABASE_UNAVAILABLE', 'RATE_LIMIT_UNAVAILABLE'];
const LEAKS = [
  /\n\s+at \S/, // a stack frame
  /\.(ts|js):\d+/,
  /node_modules/,
  /\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM)\b/,
  /QueryFailedError|syntax error at|violates .* constraint|relation "/,
  /invalid byte sequence|Maximum call stack/,
];

interface Answer {
  status: number;
  text: string;
}

// ---- generators ----

const hostileString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\u0007',
    '\n',
    '\uD800',
    '__proto__',
    'constructor',
    'toString',
    'hasOwnProperty',
    "'; DROP TABLE sessions; --",
    '../../etc/passwd',
    '%00',
    '${jndi:x}',
    '😀'.repeat(40),
  ),
  fc.string({ minLength: 60, maxLength: 300 }),
);
const jsonLeaf = fc.oneof(hostileString, fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
const deepValue = fc.integer({ min: 1, max: 40 }).map((depth) => {
  let value: unknown = 'x';
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? { a: value } : [value];
  return value;
});
const anyValue = fc.oneof(
  { weight: 3, arbitrary: jsonLeaf },
  { weight: 1, arbitrary: fc.array(jsonLeaf, { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.dictionary(hostileString, jsonLeaf, { maxKeys: 5 }) },
  { weight: 1, arbitrary: deepValue },
);
const validId = fc.stringMatching(/^[A-Za-z0-9_.-]{1,20}$/);
/** Mostly a valid value, sometimes anything at all, sometimes absent. */
const field = <T>(valid: fc.Arbitrary<T>) =>
  fc.oneof(
    { weight: 17, arbitrary: valid },
    { weight: 2, arbitrary: anyValue },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );

const channelBody = fc.record({
  tenant_id: field(fc.constant(TENANT)),
  agent_id: field(fc.constantFrom('telecom_contas', 'retail_orders')),
  text: field(
    fc.constantFrom('Minha fatura veio alta', 'Qual é o meu plano?', 'quero falar com um atendente'),
  ),
  message_id: field(validId),
  user_id: field(validId),
  metadata: field(fc.dictionary(validId, jsonLeaf, { maxKeys: 4 })),
  extra: fc.oneof({ weight: 9, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: anyValue }),
});

/**
 * A channel message with a session id of its own (so a refusal can be checked for rows), the session id itself
 * sometimes replaced by anything, and the bytes that are sent.
 */
const channelMessage = fc
  .tuple(channelBody, fc.uuid(), fc.nat(9), fc.oneof(jsonLeaf, deepValue))
  .chain(([fields, uuid, pick, other]) => {
    const sessionId = `u${uuid}`;
    const body = { ...fields, session_id: pick === 0 ? other : sessionId };
    return serialized(body).map((text) => ({ sessionId, text }));
  });

/** Turns a body into the bytes sent: usually JSON, sometimes JSON cut, spliced or garbled. */
const serialized = (body: unknown) =>
  fc.oneof(
    { weight: 8, arbitrary: fc.constant(JSON.stringify(body)) },
    {
      weight: 2,
      arbitrary: fc.tuple(fc.nat(), fc.string({ maxLength: 5 })).map(([at, junk]) => {
        const text = JSON.stringify(body);
        const cut = at % (text.length + 1);
        return text.slice(0, cut) + junk + text.slice(cut + (at % 3));
      }),
    },
  );

const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'application/json; charset=utf-16',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/xml',
      '',
      ';;;',
    ),
  },
);
const authorization = fc.oneof(
  { weight: 8, arbitrary: fc.constant('good') },
  { weight: 2, arbitrary: fc.constantFrom('none', 'wrong-kind', 'garbage', 'basic') },
);
const extraHeaders = fc.record({
  'x-request-id': fc.option(hostileString.filter(isHeaderSafe), { nil: undefined }),
  'x-forwarded-for': fc.option(fc.ipV4(), { nil: undefined }),
  'x-api-key': fc.option(fc.constant(ADMIN_KEY), { nil: undefined }),
});
const pathSegment = fc.oneof(
  { weight: 5, arbitrary: validId },
  { weight: 1, arbitrary: fc.string({ minLength: 100, maxLength: 700 }).map(encode) },
  { weight: 2, arbitrary: hostileString.map(encode) },
  { weight: 1, arbitrary: fc.constantFrom('%', '%zz', '..', '%2e%2e', '%00', '%FF', '%ED%A0%80', ':x', '@') },
);
const queryString = fc
  .array(
    fc.tuple(
      fc.oneof(
        fc.constantFrom(
          'tenant_id',
          'agent_id',
          'status',
          'limit',
          'cursor',
          'purge_memory',
          'updated_after',
        ),
        hostileString,
      ),
      fc.oneof(fc.constant(TENANT), hostileString, fc.integer().map(String)),
    ),
    { maxLength: 4 },
  )
  .map((pairs) => pairs.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&'));

/** Percent-encodes any string (lone surrogates, which encodeURIComponent refuses, become U+FFFD). */
function encode(value: string): string {
  return encodeURIComponent(value.replace(/[\uD800-\uDFFF]/g, '\uFFFD'));
}

function isHeaderSafe(value: string): boolean {
  return /^[\x20-\x7e]*$/.test(value);
}

// ---- the suite ----

describe('fuzzing the public API', () => {
  let fake: FakeLlmServer;
  let app: TestApp;
  const accepted = new Set<string>();
  let cases = 0;
  const statuses: Record<number, number> = {};
  const knownSession = `known-${TENANT}`;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    scriptStages(fake, {});
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        CHANNEL_API_KEYS: `${TENANT}:${CHANNEL_KEY}`,
        ADMIN_API_KEYS: ADMIN_KEY,
        RATE_LIMIT_PER_MINUTE: '1000000',
        RAG_INGEST_ON_START: 'false',
      },
    });
    const first = await app.post(
      '/v1/channels/web/messages',
      { tenant_id: TENANT, agent_id: 'telecom_contas', session_id: knownSession, text: 'oi' },
      { authorization: `Bearer ${CHANNEL_KEY}` },
    );
    expect(first.status).toBe(200);
    accepted.add(knownSession);
  });

  afterAll(async () => {
    console.log(
      `fuzz: ${cases} requests, seed ${SEED}, ${RUNS} runs per property, statuses ${JSON.stringify(statuses)}`,
    );
    await app.close();
    await fake.stop();
  });

  function headersFor(kind: 'channel' | 'admin', auth: string, type: string | null, extra: object) {
    const keys = { channel: CHANNEL_KEY, admin: ADMIN_KEY };
    const other = kind === 'channel' ? ADMIN_KEY : CHANNEL_KEY;
    const headers: Record<string, string> = {};
    if (auth === 'good') headers.authorization = `Bearer ${keys[kind]}`;
    if (auth === 'wrong-kind') headers.authorization = `Bearer ${other}`;
    if (auth === 'garbage') headers.authorization = 'Bearer \u00ff\u00fe not a key';
    if (auth === 'basic') headers.authorization = `Basic ${keys[kind]}`;
    if (type !== null) headers['content-type'] = type;
    for (const [name, value] of Object.entries(extra)) if (typeof value === 'string') headers[name] = value;
    return headers;
  }

  async function send(method: string, path: string, headers: Record<string, string>, body?: string) {
    cases++;
    const res = await fetch(`${app.baseUrl}${path}`, { method, headers, body });
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    return { status: res.status, text: await res.text() } satisfies Answer;
  }

  /** The invariants every answer keeps. */
  function check(answer: Answer, what: string): void {
    const context = `${what} → ${answer.status} ${answer.text.slice(0, 300)}`;
    for (const leak of LEAKS) {
      if (leak.test(answer.text)) throw new Error(`leak ${leak}: ${context}`);
    }
    if (answer.status >= 500 && answer.status !== 503) throw new Error(`5xx: ${context}`);
    if (answer.status >= 400) {
      const body = JSON.parse(answer.text) as {
        error?: { code?: unknown; message?: unknown };
        request_id?: unknown;
      };
      if (typeof body.error?.code !== 'string' || typeof body.error.message !== 'string') {
        throw new Error(`not the error envelope: ${context}`);
      }
      if (typeof body.request_id !== 'string') throw new Error(`no request_id: ${context}`);
      if (answer.status === 503 && !DOCUMENTED_503.includes(body.error.code)) {
        throw new Error(`undocumented 503: ${context}`);
      }
    }
  }

  it('channel messages: random and mutated bodies and headers', async () => {
    await fc.assert(
      fc.asyncProperty(
        channelMessage,
        contentType,
        authorization,
        extraHeaders,
        fc.oneof({ weight: 9, arbitrary: fc.constant('web') }, { weight: 1, arbitrary: pathSegment }),
        async ({ sessionId, text }, type, auth, extra, channel) => {
          const answer = await send(
            'POST',
            `/v1/channels/${channel}/messages`,
            headersFor('channel', auth, type, extra),
            text,
          );
          check(answer, `POST ${channel} ${text.slice(0, 200)}`);
          if (answer.status === 200) accepted.add(sessionId);
          else if (answer.status >= 400 && answer.status < 500) {
            const rows = await rowsForConversation(app.dataSource, `${TENANT}:${sessionId}`);
            if (Object.keys(rows).length > 0) {
              throw new Error(`${answer.status} wrote ${JSON.stringify(rows)}: ${text.slice(0, 200)}`);
            }
          }
        },
      ),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
  });

  it('admin reads: random path parameters and query strings', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('', '/events', '/checkpoints', null),
        fc.oneof({ weight: 1, arbitrary: fc.constant(knownSession) }, { weight: 3, arbitrary: pathSegment }),
        queryString,
        authorization,
        extraHeaders,
        async (suffix, session, query, auth, extra) => {
          const path =
            suffix === null
              ? `/v1/admin/sessions?${query}`
              : `/v1/admin/sessions/${session}${suffix}?${query}`;
          check(await send('GET', path, headersFor('admin', auth, null, extra)), `GET ${path}`);
        },
      ),
      { seed: SEED + 1, numRuns: RUNS, endOnFailure: true },
    );
  });

  it('admin actions: random bodies on the known session write nothing when refused', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('POST /end', 'POST /handoff', 'POST /resume', 'DELETE '),
        fc.oneof(
          { weight: 3, arbitrary: fc.constant(`tenant_id=${TENANT}`) },
          { weight: 1, arbitrary: queryString },
        ),
        fc.oneof(
          {
            weight: 2,
            arbitrary: fc.record({ reason: field(fc.constantFrom('by phone', 'customer asked')) }),
          },
          { weight: 1, arbitrary: anyValue },
        ),
        contentType,
        fc.oneof(
          { weight: 3, arbitrary: fc.constantFrom('none', 'wrong-kind', 'garbage') },
          { weight: 1, arbitrary: fc.constant('good') },
        ),
        async (action, query, body, type, auth) => {
          const [method, suffix] = action.split(' ');
          const before = await rowsForConversation(app.dataSource, `${TENANT}:${knownSession}`);
          const path = `/v1/admin/sessions/${knownSession}${suffix}?${query}`;
          const text = method === 'DELETE' ? undefined : JSON.stringify(body);
          const answer = await send(
            method,
            path,
            headersFor('admin', auth, text === undefined ? null : type, {}),
            text,
          );
          check(answer, `${method} ${path} ${text ?? ''}`);
          if (answer.status >= 400 && answer.status < 500) {
            const after = await rowsForConversation(app.dataSource, `${TENANT}:${knownSession}`);
            if (JSON.stringify(after) !== JSON.stringify(before)) {
              throw new Error(
                `${answer.status} changed rows ${JSON.stringify(before)} → ${JSON.stringify(after)}`,
              );
            }
          }
        },
      ),
      { seed: SEED + 2, numRuns: RUNS, endOnFailure: true },
    );
  });

  it('any method on any path', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'),
        fc.array(pathSegment, { minLength: 1, maxLength: 4 }),
        queryString,
        fc.option(anyValue, { nil: undefined }),
        async (method, segments, query, body) => {
          const path = `/${['v1', ...segments].join('/')}?${query}`;
          const text =
            body === undefined || method === 'GET' || method === 'HEAD' ? undefined : JSON.stringify(body);
          const answer = await send(
            method,
            path,
            headersFor('admin', 'good', text ? 'application/json' : null, {}),
            text,
          );
          if (method !== 'HEAD') check(answer, `${method} ${path}`);
          else if (answer.status >= 500) throw new Error(`5xx: HEAD ${path}`);
        },
      ),
      { seed: SEED + 3, numRuns: RUNS, endOnFailure: true },
    );
  });

  it('stored rows only for the conversations whose messages were accepted', async () => {
    const [sessions]: [{ ids: string[] | null }] = await app.dataSource.query(
      'SELECT array_agg(session_id) AS ids FROM sessions WHERE tenant_id = $1',
      [TENANT],
    );
    const stored = (sessions.ids ?? []).filter((id) => !accepted.has(id));
    // The admin DELETE may have purged the known session; nothing else may exist.
    expect(stored).toEqual([]);
    expect(Object.keys(await rowsForTenant(app.dataSource, `${TENANT}x`))).toEqual([]);
  });
});
