import { ConversationLeases } from '@agent/checkpoint';
import { checkpointEnvSchema } from '@agent/config';
import { FakeChatRequest, FakeLlmServer, GUARDRAILS_ALLOW, lastUserMessage } from '../support/fake-llm';
import { TcpProxy } from '../support/tcp-proxy';
import { rowsForConversation } from '../support/stored-rows';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';
import { eventually, waitUntil } from '../support/wait-for';

/**
 * Conversation reliability over HTTP, on the embedded default or on Postgres (DATABASE_URL): corrupt checkpoints,
 * concurrent turns, idempotent delivery, a crashed lease holder, and a checkpoint size that stops growing.
 * Outage tests that need a real server (pg_terminate_backend, an unreachable database, two app instances) are in
 * reliability-outage.e2e-spec.ts.
 */
interface TurnBody {
  turn: number;
  answer: string;
  message_id: string;
  latency_ms: number;
  error?: { code: string };
}

interface HistoryRow {
  role: string;
  content: string;
  turn?: number;
}

const AGENT_ID = 'telecom_contas';
const HISTORY_LIMIT = 10;
/** The default, so recovery and compaction are tested as deployed. */
const RETENTION = checkpointEnvSchema.parse({}).CHECKPOINT_RETENTION;

describe('conversation reliability', () => {
  let fake: FakeLlmServer;
  /** Between the app and the fake LLM: holds an agent answer so a turn stays in flight as long as a test needs. */
  let llmProxy: TcpProxy;
  let app: TestApp;
  /** The app's requests for a conversation's lease. */
  let leaseRequests: jest.SpiedFunction<ConversationLeases['acquire']>;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    const proxied = await TcpProxy.forUrl(fake.baseUrl);
    llmProxy = proxied.proxy;
    app = await startTestApp({
      env: {
        LLM_BASE_URL: proxied.url,
        TURN_LOCK_TIMEOUT_MS: '3000',
        MEMORY_HISTORY_LIMIT: String(HISTORY_LIMIT),
      },
    });
    leaseRequests = jest.spyOn(app.app.get(ConversationLeases), 'acquire');
  }, 240000);

  afterAll(async () => {
    await app?.close();
    await llmProxy?.stop();
    await fake?.stop();
  });

  beforeEach(() => {
    llmProxy.release();
    fake.reset();
    fake.script(GUARDRAILS_ALLOW);
    fake.setFallback({ json: { intent: 'unknown', confidence: 0, reason: 'test fallback' } });
  });

  const answerFor = (text: string) => `resposta para: ${text}`;

  /** The agent answers every message; its first answer to `held` stays in the proxy until `llmProxy.release()`. */
  function scriptAgent(held?: string): { inFlight: Promise<void> } {
    let arrived!: () => void;
    const arrival = new Promise<void>((resolve) => (arrived = resolve));
    fake.script({
      model: 'agent',
      reply: (request: FakeChatRequest) => {
        const text = lastUserMessage(request);
        if (text === held) {
          // Only the first time: a later turn with the same text answers at once.
          held = undefined;
          llmProxy.hold();
          arrived();
        }
        return { content: answerFor(text) };
      },
    });
    return { inFlight: arrival };
  }

  /**
   * Lets the held turn of `sessionId` finish once a second turn of it has asked for the lease: asking queues it
   * behind the held one at once.
   */
  async function releaseAfterQueued(sessionId: string): Promise<void> {
    await waitUntil(
      `a second turn of ${sessionId} to queue for the lease`,
      () =>
        leaseRequests.mock.calls.filter(([identity]) => identity.conversation_key === key(sessionId))
          .length >= 2,
    );
    llmProxy.release();
  }

  function send(sessionId: string, text: string, extra: Record<string, string> = {}, tenant = 'acme') {
    return app.post<TurnBody>('/v1/channels/web/messages', {
      tenant_id: tenant,
      agent_id: AGENT_ID,
      session_id: sessionId,
      text,
      ...extra,
    });
  }

  const key = (sessionId: string) => `acme:${sessionId}`;

  async function versions(sessionId: string): Promise<[number, number | null][]> {
    const rows: { version: number; parent_version: number | null }[] = await app.dataSource.query(
      'SELECT version, parent_version FROM checkpoints WHERE conversation_key = $1 ORDER BY version',
      [key(sessionId)],
    );
    return rows.map((row) => [row.version, row.parent_version]);
  }

  async function headHistory(sessionId: string): Promise<HistoryRow[]> {
    const rows: { history: HistoryRow[] }[] = await app.dataSource.query(
      `SELECT state::jsonb->'history' AS history FROM checkpoints WHERE conversation_key = $1 ORDER BY version DESC LIMIT 1`,
      [key(sessionId)],
    );
    return rows[0]?.history ?? [];
  }

  async function eventsOfTurn(sessionId: string, turn: number) {
    const rows: { name: string; payload: Record<string, unknown> }[] = await app.dataSource.query(
      'SELECT name, payload FROM session_events WHERE conversation_key = $1 AND turn = $2 ORDER BY id',
      [key(sessionId), turn],
    );
    return rows;
  }

  function agentPromptOf(text: string): string {
    const request = fake.requestsFor('agent').find((r) => lastUserMessage(r) === text);
    return (request?.messages ?? []).map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
  }

  describe('checkpoint integrity', () => {
    it('uses the previous version when the latest row is corrupt, and records the skip', async () => {
      scriptAgent();
      const sessionId = uniqueId('corrupt');
      for (const text of ['primeira', 'segunda', 'terceira']) {
        expect((await send(sessionId, text)).status).toBe(200);
      }
      await app.dataSource.query(
        `UPDATE checkpoints SET state = jsonb_set(state::jsonb, '{final_answer}', '"adulterado"')::text
          WHERE conversation_key = $1 AND version = 3`,
        [key(sessionId)],
      );

      const res = await send(sessionId, 'quarta');
      expect(res.status).toBe(200);
      expect(res.body.turn).toBe(4);
      // Restored from version 2: the third exchange is gone, the first two are there.
      const prompt = agentPromptOf('quarta');
      expect(prompt).toContain(answerFor('segunda'));
      expect(prompt).not.toContain('terceira');
      // Version 1 may already be compacted away (RETENTION newest are kept); 4 extends the head from 2.
      expect((await versions(sessionId)).slice(-3)).toEqual([
        [2, 1],
        [3, 2],
        [4, 2],
      ]);
      const skips = (await eventsOfTurn(sessionId, 4)).filter((e) =>
        e.name.startsWith('checkpoint.recovery'),
      );
      expect(skips).toEqual([
        {
          name: 'checkpoint.recovery.skip_corrupt',
          payload: expect.objectContaining({ version: 3, reason: 'checksum mismatch', turn: 4 }),
        },
      ]);
      expect((await headHistory(sessionId)).map((m) => m.content)).toEqual([
        'primeira',
        answerFor('primeira'),
        'segunda',
        answerFor('segunda'),
        'quarta',
        answerFor('quarta'),
      ]);
    });

    it.each([
      ['a route that cannot name a node', 'route_decision,route'],
      ['a context whose agent cannot name a node', 'context,agent'],
    ])(
      'skips a stored state that passes its checksum but not the state schema (%s), like a corrupt one',
      async (_case, path) => {
        scriptAgent();
        const sessionId = uniqueId('schema');
        for (const text of ['primeira', 'segunda']) expect((await send(sessionId, text)).status).toBe(200);
        // A well-formed row whose state this release cannot read: the checksum is recomputed over the new text.
        await app.dataSource.query(
          `UPDATE checkpoints
            SET state = jsonb_set(state::jsonb, $2::text[], '"No such node!"')::text
          WHERE conversation_key = $1 AND version = 2`,
          [key(sessionId), `{${path}}`],
        );
        await app.dataSource.query(
          `UPDATE checkpoints
            SET checksum = encode(sha256(convert_to(coalesce(parent_version::text, 'null') || E'\\n' || state, 'UTF8')), 'hex')
          WHERE conversation_key = $1 AND version = 2`,
          [key(sessionId)],
        );

        const res = await send(sessionId, 'terceira');
        expect(res.status).toBe(200);
        expect(agentPromptOf('terceira')).toContain(answerFor('primeira'));
        expect(agentPromptOf('terceira')).not.toContain('segunda');
        const skips = (await eventsOfTurn(sessionId, 3)).filter((e) =>
          e.name.startsWith('checkpoint.recovery'),
        );
        expect(skips).toEqual([
          {
            name: 'checkpoint.recovery.skip_corrupt',
            payload: expect.objectContaining({
              version: 2,
              reason: expect.stringContaining(`state does not match the schema at ${path.replace(',', '.')}`),
            }),
          },
        ]);
      },
    );

    it('starts clean when every row is corrupt, and the events say so', async () => {
      scriptAgent();
      const sessionId = uniqueId('allcorrupt');
      for (const text of ['um', 'dois']) expect((await send(sessionId, text)).status).toBe(200);
      await app.dataSource.query(
        `UPDATE checkpoints SET checksum = md5(checksum) WHERE conversation_key = $1`,
        [key(sessionId)],
      );

      const res = await send(sessionId, 'três');
      expect(res.status).toBe(200);
      expect(res.body.turn).toBe(3);
      expect(agentPromptOf('três')).not.toContain(answerFor('um'));
      const recovery = (await eventsOfTurn(sessionId, 3))
        .filter((e) => e.name.startsWith('checkpoint.recovery'))
        .map((e) => [e.name, e.payload.version ?? e.payload.skipped]);
      expect(recovery).toEqual([
        ['checkpoint.recovery.skip_corrupt', 2],
        ['checkpoint.recovery.skip_corrupt', 1],
        ['checkpoint.recovery.clean_start', 2],
      ]);
      expect((await versions(sessionId)).map(([version]) => version)).toEqual([1, 2, 3]);
      expect((await headHistory(sessionId)).map((m) => m.content)).toEqual(['três', answerFor('três')]);
    });
  });

  describe('two turns at once on one conversation', () => {
    it('answers both, in arrival order, with contiguous versions', async () => {
      const { inFlight: firstInFlight } = scriptAgent('chegou primeiro');
      const sessionId = uniqueId('concurrent');
      const first = send(sessionId, 'chegou primeiro');
      await firstInFlight;
      const second = send(sessionId, 'chegou depois');
      await releaseAfterQueued(sessionId);
      const [a, b] = await Promise.all([first, second]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect([a.body.turn, b.body.turn]).toEqual([1, 2]);
      expect(agentPromptOf('chegou depois')).toContain(answerFor('chegou primeiro'));
      expect(await versions(sessionId)).toEqual([
        [1, null],
        [2, 1],
      ]);
      expect((await headHistory(sessionId)).map((m) => m.content)).toEqual([
        'chegou primeiro',
        answerFor('chegou primeiro'),
        'chegou depois',
        answerFor('chegou depois'),
      ]);
    });

    it('serializes a burst: every turn answered, numbered once, history in turn order', async () => {
      scriptAgent();
      const sessionId = uniqueId('burst');
      const texts = ['m1', 'm2', 'm3', 'm4', 'm5'];
      const results = await Promise.all(texts.map((text) => send(sessionId, text)));
      expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      const byTurn = [...results].sort((x, y) => x.body.turn - y.body.turn);
      expect(byTurn.map((r) => r.body.turn)).toEqual([1, 2, 3, 4, 5]);
      // Every commit wrote one version (the turn log keeps them all; compaction may already have trimmed the
      // checkpoints to the newest RETENTION).
      const logged: { version: number }[] = await app.dataSource.query(
        'SELECT version FROM turn_log WHERE conversation_key = $1 ORDER BY version',
        [key(sessionId)],
      );
      expect(logged.map(({ version }) => version)).toEqual([1, 2, 3, 4, 5]);
      const kept = (await versions(sessionId)).map(([version]) => version);
      expect(kept).toEqual([1, 2, 3, 4, 5].slice(-kept.length));
      expect(kept.length).toBeGreaterThanOrEqual(RETENTION);
      const history = await headHistory(sessionId);
      expect(history.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(
        byTurn.map((r) => texts[results.indexOf(r)]),
      );
      expect(history.filter((m) => m.role === 'user').map((m) => m.turn)).toEqual([1, 2, 3, 4, 5]);
    });
  });

  describe('idempotent delivery', () => {
    it('replays the stored response for a repeated message_id and runs nothing', async () => {
      scriptAgent();
      const sessionId = uniqueId('idem');
      const first = await send(sessionId, 'uma vez', { message_id: 'msg-1' });
      const again = await send(sessionId, 'uma vez', { message_id: 'msg-1' });
      expect(first.status).toBe(200);
      expect(again.status).toBe(200);
      expect(first.headers.get('idempotent-replay')).toBeNull();
      expect(again.headers.get('idempotent-replay')).toBe('true');
      expect(again.body).toEqual(first.body);
      expect(fake.requestsFor('agent')).toHaveLength(1);
      expect(await versions(sessionId)).toEqual([[1, null]]);
      const next = await send(sessionId, 'outra', { message_id: 'msg-2' });
      expect(next.body.turn).toBe(2);
    });

    it('refuses a message_id reused with another body: 409 IDEMPOTENCY_KEY_REUSED, nothing run or stored', async () => {
      scriptAgent();
      const sessionId = uniqueId('reuse');
      const first = await send(sessionId, 'minha fatura', { message_id: 'msg-r' });
      expect(first.status).toBe(200);
      const before = await rowsForConversation(app.dataSource, key(sessionId));
      const reuses: [string, Record<string, string>][] = [
        ['outra coisa', { message_id: 'msg-r' }],
        ['minha fatura', { message_id: 'msg-r', user_id: 'someone-else' }],
      ];
      for (const [text, extra] of reuses) {
        const reused = await send(sessionId, text, extra);
        expect(reused.status).toBe(409);
        expect(reused.body.error?.code).toBe('IDEMPOTENCY_KEY_REUSED');
      }
      expect(fake.requestsFor('agent')).toHaveLength(1);
      expect(await rowsForConversation(app.dataSource, key(sessionId))).toEqual(before);
      // The same body is still a replay.
      const again = await send(sessionId, 'minha fatura', { message_id: 'msg-r' });
      expect(again.headers.get('idempotent-replay')).toBe('true');
      expect(again.body).toEqual(first.body);
    });

    it('makes a duplicate that arrives while the first is in flight wait, and get the same response', async () => {
      const { inFlight: firstInFlight } = scriptAgent('entrega dupla');
      const sessionId = uniqueId('idemconc');
      const first = send(sessionId, 'entrega dupla', { message_id: 'dup-1' });
      await firstInFlight;
      const duplicate = send(sessionId, 'entrega dupla', { message_id: 'dup-1' });
      await releaseAfterQueued(sessionId);
      const [a, b] = await Promise.all([first, duplicate]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(b.body).toEqual(a.body);
      expect(a.headers.get('idempotent-replay')).toBeNull();
      expect(b.headers.get('idempotent-replay')).toBe('true');
      expect(fake.requestsFor('agent')).toHaveLength(1);
      const processed: { n: string }[] = await app.dataSource.query(
        'SELECT count(*) AS n FROM processed_messages WHERE conversation_key = $1',
        [key(sessionId)],
      );
      expect(Number(processed[0].n)).toBe(1);
      expect(await versions(sessionId)).toEqual([[1, null]]);
    });

    it('runs a burst of the same message_id once', async () => {
      scriptAgent();
      const sessionId = uniqueId('idemburst');
      const results = await Promise.all(
        [1, 2, 3, 4].map(() => send(sessionId, 'rajada', { message_id: 'same' })),
      );
      expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      for (const result of results) expect(result.body).toEqual(results[0].body);
      expect(results.filter((r) => r.headers.get('idempotent-replay') === 'true')).toHaveLength(3);
      expect(fake.requestsFor('agent')).toHaveLength(1);
    });
  });

  describe('a crashed lease holder', () => {
    async function leaseHeldByDeadProcess(sessionId: string, leaseMs: number) {
      await app.dataSource.query(
        `INSERT INTO sessions (conversation_key, tenant_id, session_id, agent_id, lease_owner, lease_expires_at)
         VALUES ($1, 'acme', $2, $3, 'dead-pod:turn-1', now() + ($4::text || ' milliseconds')::interval)`,
        [key(sessionId), sessionId, AGENT_ID, String(leaseMs)],
      );
    }

    it('blocks the conversation for at most its lease', async () => {
      scriptAgent();
      const sessionId = uniqueId('deadholder');
      await leaseHeldByDeadProcess(sessionId, 1500);
      const started = Date.now();
      const res = await send(sessionId, 'depois do crash');
      expect(res.status).toBe(200);
      expect(res.body.turn).toBe(1);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    });

    it('answers 409 with Retry-After when the lease outlasts TURN_LOCK_TIMEOUT_MS', async () => {
      scriptAgent();
      const sessionId = uniqueId('busy');
      await leaseHeldByDeadProcess(sessionId, 60000);
      const res = await send(sessionId, 'ocupado');
      expect(res.status).toBe(409);
      expect(res.body.error?.code).toBe('TURN_LOCK_TIMEOUT');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(fake.requestsFor('agent')).toHaveLength(0);
    });
  });

  it('keeps the checkpoint size and the number of versions flat over a long conversation', async () => {
    scriptAgent();
    const sessionId = uniqueId('long');
    const sizes: number[] = [];
    for (let turn = 1; turn <= 40; turn++) {
      const res = await send(sessionId, `mensagem número ${turn % 10} sobre a fatura`);
      expect(res.status).toBe(200);
      // Compaction runs in batches off the turn path: it catches up within a few intervals.
      const rows = await eventually(`at most ${RETENTION} checkpoints after turn ${turn}`, async () => {
        const stored: { size_bytes: number }[] = await app.dataSource.query(
          'SELECT size_bytes FROM checkpoints WHERE conversation_key = $1 ORDER BY version DESC',
          [key(sessionId)],
        );
        return stored.length <= RETENTION ? stored : undefined;
      });
      sizes.push(rows[0].size_bytes);
    }
    expect((await headHistory(sessionId)).length).toBe(HISTORY_LIMIT);
    // Full history after HISTORY_LIMIT / 2 turns; later sizes differ only by digits (latencies, timestamps).
    const plateau = sizes[14];
    for (const size of sizes.slice(15)) expect(Math.abs(size - plateau) / plateau).toBeLessThan(0.05);
  }, 180000);
});
