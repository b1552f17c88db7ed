import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { FakeLlmServer, GUARDRAILS_ALLOW } from '../support/fake-llm';
import { REPO_ROOT, startTestApp, TestApp, uniqueId } from '../support/test-app';

/**
 * Judges through the whole app: sampling decides whether they run at all; an LLM judge's failing score is
 * recorded but never changes the answer, while a judge configured `enforce: true` makes supervisor_review
 * replace it.
 */

function configDirWithJudges(sampleRate: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'judges-config-'));
  cpSync(join(REPO_ROOT, 'config'), dir, { recursive: true });
  writeFileSync(
    join(dir, 'judges.yaml'),
    stringify({
      enabled: true,
      profile: 'judge',
      sample_rate: sampleRate,
      always_run_for_transactional: false,
      judges: [
        { name: 'groundedness', type: 'llm', threshold: 0.6 },
        { name: 'tone', type: 'deterministic', threshold: 0.6, enforce: true },
      ],
    }),
  );
  return dir;
}

describe('judges (e2e)', () => {
  let fake: FakeLlmServer;
  const apps: Record<'never' | 'always', TestApp | null> = { never: null, always: null };
  const dirs: string[] = [];

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    for (const [key, rate] of [
      ['never', 0],
      ['always', 1],
    ] as const) {
      const dir = configDirWithJudges(rate);
      dirs.push(dir);
      apps[key] = await startTestApp({ fakeLlm: fake, env: { CONFIG_DIR: dir } });
    }
  });

  afterAll(async () => {
    for (const app of Object.values(apps)) await app?.close();
    await fake.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    fake.reset();
    fake.script(GUARDRAILS_ALLOW);
    fake.script({ model: 'router', reply: { json: { intent: 'unknown', confidence: 0 } } });
    fake.script({
      model: 'judge',
      reply: { json: { score: 0.1, passed: false, reason: 'amount not in evidence' } },
    });
  });

  const turn = async (key: 'never' | 'always', text: string) => {
    const app = apps[key] as TestApp;
    const sessionId = uniqueId(`judge-${key}`);
    const res = await app.post('/v1/channels/web/messages', {
      tenant_id: 'acme',
      agent_id: 'telecom_contas',
      session_id: sessionId,
      text,
    });
    expect(res.status).toBe(200);
    const events = await app.dataSource.query<{ name: string; payload: Record<string, unknown> }[]>(
      'SELECT name, payload FROM session_events WHERE conversation_key = $1 ORDER BY id',
      [`acme:${sessionId}`],
    );
    return { body: res.body, events };
  };

  it('sample_rate 0: no judge runs', async () => {
    fake.script({ model: 'agent', reply: { content: 'Sua fatura de março é R$ 99,90.' } });
    const { body, events } = await turn('never', 'Quanto ficou minha fatura?');
    expect(body.answer).toBe('Sua fatura de março é R$ 99,90.');
    expect(fake.requestsFor('judge')).toHaveLength(0);
    expect(events.find((e) => e.name === 'judges.completed')?.payload).toMatchObject({
      sampled: false,
      reason: 'not_sampled',
    });
    expect(events.some((e) => /^judge\..+\.evaluated$/.test(e.name))).toBe(false);
  });

  it('sample_rate 1: the LLM judge runs, its failing score is recorded, the answer is unchanged', async () => {
    fake.script({ model: 'agent', reply: { content: 'Sua fatura de março é R$ 99,90.' } });
    const { body, events } = await turn('always', 'Quanto ficou minha fatura?');
    expect(body.answer).toBe('Sua fatura de março é R$ 99,90.');
    const judgeCalls = fake.requestsFor('judge');
    expect(judgeCalls).toHaveLength(1);
    expect(judgeCalls[0].messages.map((m) => m.content ?? '').join('\n')).toContain(
      'Sua fatura de março é R$ 99,90.',
    );
    expect(events.find((e) => e.name === 'judge.groundedness.evaluated')?.payload).toMatchObject({
      type: 'llm',
      score: 0.1,
      passed: false,
      enforce: false,
    });
    expect(events.find((e) => e.name === 'judge.tone.evaluated')?.payload).toMatchObject({ passed: true });
    expect(events.find((e) => e.name === 'judges.completed')?.payload).toMatchObject({
      sampled: true,
      failed: ['groundedness'],
      enforced_failed: [],
    });
    expect(events.find((e) => e.name === 'supervisor.review.completed')?.payload).toMatchObject({
      approved: true,
    });
  });

  it('an enforced judge that fails makes supervisor_review replace the answer', async () => {
    fake.script({
      model: 'agent',
      reply: { content: 'Como eu já disse, você deveria ter lido o contrato.' },
    });
    const { body, events } = await turn('always', 'Não entendi a multa do contrato');
    expect(body.answer).toBe(
      'Não consegui validar esta resposta com segurança. Posso reformular ou ajudar de outra forma?',
    );
    expect(events.find((e) => e.name === 'supervisor.review.completed')?.payload).toMatchObject({
      approved: false,
      violations: [{ judge: 'tone', action: 'replace' }],
    });
  });
});
