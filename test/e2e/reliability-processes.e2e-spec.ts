import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { Client } from 'pg';
import { freePort, waitUntilReady } from '../support/app-process';
import { FakeLlmServer, GUARDRAILS_ALLOW, lastUserMessage } from '../support/fake-llm';
import { compiledEntry } from '../support/repo-root';
import { REPO_ROOT, TEST_LLM_PROFILES, uniqueId } from '../support/test-app';
import { waitUntil } from '../support/wait-for';

/**
 * One writer per conversation across real OS processes: two app processes (the compiled entry point) on one
 * Postgres, hammered on the same conversation at once.
 */
const databaseUrl = process.env.DATABASE_URL;
/** Without a real Postgres the tests are skipped, and the skipped-test report says why. */
const describeWithPostgres = databaseUrl
  ? describe
  : (name: string, body: () => void) => describe.skip(`${name} (needs DATABASE_URL; CI sets it)`, body);
/** The agent's answer to this message never comes in time. */
const HANGS = 'esta resposta nunca chega';

async function startProcess(port: number, fake: FakeLlmServer): Promise<ChildProcess> {
  const child = spawn(process.execPath, [compiledEntry('apps/agent-runtime/src/main.ts')], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'test',
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      CONFIG_DIR: join(REPO_ROOT, 'config'),
      LLM_PROFILES_PATH: TEST_LLM_PROFILES,
      LLM_BASE_URL: fake.baseUrl,
      LLM_API_KEY: 'test-key',
      LOG_LEVEL: 'error',
      TURN_LOCK_TIMEOUT_MS: '60000',
      RAG_INGEST_ON_START: 'false',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitUntilReady({ child, output: () => '(its stderr goes to the test output)' }, port);
  return child;
}

function stopProcess(child: ChildProcess): Promise<void> {
  // A process killed by a signal has no exit code, only the signal.
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

describeWithPostgres('two app processes on one database', () => {
  let fake: FakeLlmServer;
  let ports: number[];
  let children: ChildProcess[] = [];
  let db: Client;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    // A slow agent makes the turns overlap for real; one message hangs, for the replica killed mid-turn.
    fake.script({
      model: 'agent',
      reply: (req) => ({
        content: `ok ${req.messages.length}`,
        delayMs: lastUserMessage(req) === HANGS ? 60000 : 150,
      }),
    });
    fake.script(GUARDRAILS_ALLOW);
    fake.setFallback({
      json: { intent: 'unknown', confidence: 0, verdict: 'allow', score: 1, passed: true },
    });
    ports = [await freePort(), await freePort()];
    children = await Promise.all(ports.map((port) => startProcess(port, fake)));
    db = new Client({ connectionString: databaseUrl });
    await db.connect();
  }, 240000);

  afterAll(async () => {
    await Promise.all(children.map(stopProcess));
    await db?.end();
    await fake?.stop();
  });

  const post = (port: number, body: Record<string, unknown>) =>
    fetch(`http://127.0.0.1:${port}/v1/channels/web/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tenant_id: 'procs', agent_id: 'telecom_contas', ...body }),
    }).then(async (r) => ({
      status: r.status,
      replay: r.headers.get('idempotent-replay'),
      body: (await r.json()) as Record<string, unknown>,
    }));

  it('serializes simultaneous turns of one conversation across processes: all answered, versions contiguous, no fork', async () => {
    const sessionId = uniqueId('procs');
    const texts = Array.from({ length: 8 }, (_, i) => `mensagem ${i + 1} sobre a fatura`);
    const results = await Promise.all(
      texts.map((text, i) => post(ports[i % 2], { session_id: sessionId, text })),
    );
    expect(results.map((r) => r.status)).toEqual(texts.map(() => 200));
    const turns = results.map((r) => Number(r.body.turn)).sort((a, b) => a - b);
    expect(turns).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);

    const key = `procs:${sessionId}`;
    // Every commit is in the turn log; compaction may already have trimmed the checkpoints to the newest few,
    // each of which extends the one before it.
    const logged = await db.query<{ version: number }>(
      'SELECT version FROM turn_log WHERE conversation_key = $1 ORDER BY version',
      [key],
    );
    expect(logged.rows.map((r) => r.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const versions = await db.query<{ version: number; parent_version: number | null }>(
      'SELECT version, parent_version FROM checkpoints WHERE conversation_key = $1 ORDER BY version',
      [key],
    );
    expect(versions.rows.at(-1)?.version).toBe(8);
    for (const row of versions.rows) {
      expect(row.parent_version).toBe(row.version === 1 ? null : row.version - 1);
    }

    // The final history holds every turn once, in the order the turns were numbered.
    const head = await db.query<{ state: { history: { role: string; content: string; turn: number }[] } }>(
      'SELECT state::jsonb AS state FROM checkpoints WHERE conversation_key = $1 ORDER BY version DESC LIMIT 1',
      [key],
    );
    const userMessages = head.rows[0].state.history.filter((m) => m.role === 'user');
    expect(userMessages.map((m) => m.turn)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const textOfTurn = new Map(results.map((r, i) => [Number(r.body.turn), texts[i]]));
    expect(userMessages.map((m) => m.content)).toEqual(userMessages.map((m) => textOfTurn.get(m.turn)));
  });

  it('runs a message_id delivered to both processes at once exactly once', async () => {
    const sessionId = uniqueId('procs-dup');
    const [a, b] = await Promise.all(
      ports.map((port) =>
        post(port, { session_id: sessionId, text: 'fatura duplicada', message_id: 'dup-1' }),
      ),
    );
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body).toEqual(b.body);
    expect([a.replay, b.replay].filter((v) => v === 'true')).toHaveLength(1);
    const processed = await db.query('SELECT turn FROM processed_messages WHERE conversation_key = $1', [
      `procs:${sessionId}`,
    ]);
    expect(processed.rows).toEqual([{ turn: 1 }]);
    const checkpoints = await db.query('SELECT version FROM checkpoints WHERE conversation_key = $1', [
      `procs:${sessionId}`,
    ]);
    expect(checkpoints.rowCount).toBe(1);
  });
  it('takes over the conversations of a replica killed with kill -9 mid-turn within seconds, fenced', async () => {
    const sessionId = uniqueId('procs-kill');
    expect((await post(ports[0], { session_id: sessionId, text: 'primeira mensagem' })).status).toBe(200);
    // The second process takes the lease for a turn whose agent call hangs, and dies holding it.
    const doomed = post(ports[1], { session_id: sessionId, text: HANGS }).catch(() => null);
    await waitUntil(
      'the hanging turn to reach the agent',
      () => fake.requestsFor('agent').some((request) => lastUserMessage(request) === HANGS),
      30000,
    );
    const held = await db.query<{ lease_owner: string | null }>(
      'SELECT lease_owner FROM sessions WHERE conversation_key = $1',
      [`procs:${sessionId}`],
    );
    expect(held.rows[0].lease_owner).not.toBeNull();
    children[1].kill('SIGKILL');
    await doomed;

    const started = Date.now();
    const next = await post(ports[0], { session_id: sessionId, text: 'segunda mensagem' });
    expect(next.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(next.body.turn).toBe(2);
    // The dead turn wrote nothing: versions stay contiguous, one per answered turn.
    const versions = await db.query<{ version: number }>(
      'SELECT version FROM checkpoints WHERE conversation_key = $1 ORDER BY version',
      [`procs:${sessionId}`],
    );
    expect(versions.rows.map((row) => row.version)).toEqual([1, 2]);
  });
});
