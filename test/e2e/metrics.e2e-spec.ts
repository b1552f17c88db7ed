import { FakeLlmServer, GUARDRAILS_ALLOW } from '../support/fake-llm';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

/** One sample line of the Prometheus text format. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1]] = pair[2];
    }
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

/** Sum of every sample of `name` whose labels include `labels`. */
function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

describe('GET /metrics after a scripted conversation', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    app = await startTestApp({ fakeLlm: fake });
  });

  afterAll(async () => {
    await app.close();
    await fake.stop();
  });

  const scrape = async () => {
    const res = await app.get<string>('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    return parseMetrics(res.body);
  };

  it('moves turns, LLM calls and tokens by profile, lock waits, checkpoint writes, admin ends and HTTP latency', async () => {
    // Every stage that might call a model gets a valid answer, so each turn ends with exactly one agent call.
    fake.script({
      model: 'agent',
      reply: { content: 'Sua fatura é R$ 99,90.', usage: { prompt_tokens: 40, completion_tokens: 7 } },
    });
    fake.script(GUARDRAILS_ALLOW);
    fake.script({ model: 'judge', reply: { json: { score: 1, passed: true, reason: 'ok' } } });
    fake.setFallback({ json: { intent: 'unknown', confidence: 0, reason: 'no intent' } });

    const before = await scrape();
    const tenant = `met${Date.now().toString(36)}`;
    const sessionId = uniqueId('metrics');
    const send = (text: string, messageId: string) =>
      app.post<{ turn: number; route: string; route_decision: { method: string } }>(
        '/v1/channels/web/messages',
        {
          tenant_id: tenant,
          agent_id: 'telecom_contas',
          session_id: sessionId,
          text,
          message_id: messageId,
        },
      );
    const turns = [
      await send('Minha fatura veio alta', 'm-1'),
      await send('Quero a segunda via da fatura', 'm-2'),
      await send('E o vencimento da fatura?', 'm-3'),
    ];
    expect(turns.map((t) => t.status)).toEqual([200, 200, 200]);
    // An idempotent replay runs nothing: no turn, no LLM call, no lease.
    const replay = await send('Minha fatura veio alta', 'm-1');
    expect(replay.headers.get('idempotent-replay')).toBe('true');
    const end = await app.post<{ changed: boolean }>(
      `/v1/admin/sessions/${sessionId}/end?tenant_id=${tenant}`,
      { reason: 'metrics test' },
    );
    expect(end.body.changed).toBe(true);

    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) =>
      total(after, name, labels) - total(before, name, labels);

    expect(delta('agent_turns_total')).toBe(3);
    expect(delta('agent_turns_total', { outcome: 'ok' })).toBe(3);
    for (const turn of turns) {
      expect(
        total(after, 'agent_turns_total', {
          route: turn.body.route,
          method: turn.body.route_decision.method,
        }),
      ).toBeGreaterThan(0);
    }
    expect(delta('agent_llm_calls_total', { profile: 'agent', outcome: 'ok' })).toBe(3);
    expect(delta('agent_llm_calls_total', { profile: 'agent' })).toBe(3);
    expect(delta('agent_llm_tokens_total', { profile: 'agent', kind: 'prompt' })).toBe(120);
    expect(delta('agent_llm_tokens_total', { profile: 'agent', kind: 'completion' })).toBe(21);
    expect(delta('agent_llm_latency_seconds_count', { profile: 'agent' })).toBe(3);
    // Three turns and one admin end: each holds the conversation lease and commits once.
    expect(delta('agent_turn_lock_wait_seconds_count')).toBe(4);
    expect(delta('agent_checkpoint_write_seconds_count')).toBe(4);
    expect(delta('agent_checkpoint_size_bytes_count')).toBe(4);
    expect(delta('agent_turn_duration_seconds_count')).toBe(3);
    expect(delta('agent_sessions_ended_total', { source: 'admin' })).toBe(1);
    expect(delta('agent_sessions_ended_total', { source: 'continuity' })).toBe(0);
    expect(delta('agent_turn_lock_timeouts_total')).toBe(0);
    expect(
      delta('http_request_duration_seconds_count', {
        method: 'POST',
        route: '/v1/channels/:channel/messages',
        status: '200',
      }),
    ).toBe(4);
    expect(
      delta('http_request_duration_seconds_count', {
        method: 'POST',
        route: '/v1/admin/sessions/:session_id/end',
        status: '200',
      }),
    ).toBe(1);
    // Every turn runs the deterministic INPUT_SIZE and DLEX_OUT rails once (whatever their verdict).
    expect(delta('agent_guardrail_actions_total', { stage: 'input', code: 'INPUT_SIZE' })).toBe(3);
    expect(delta('agent_guardrail_actions_total', { stage: 'output', code: 'DLEX_OUT' })).toBe(3);
    expect(delta('agent_node_duration_seconds_count', { node: 'input_guardrails' })).toBe(3);
    expect(delta('agent_node_duration_seconds_count', { node: 'persist' })).toBe(3);

    // The next turn is rejected after the end: a blocked turn, still counted, and no agent call.
    const rejected = await send('Ainda está aí?', 'm-4');
    expect(rejected.body.turn).toBe(4);
    const last = await scrape();
    expect(
      total(last, 'agent_turns_total', { outcome: 'blocked' }) -
        total(after, 'agent_turns_total', { outcome: 'blocked' }),
    ).toBe(1);
    expect(
      total(last, 'agent_llm_calls_total', { profile: 'agent' }) -
        total(after, 'agent_llm_calls_total', { profile: 'agent' }),
    ).toBe(0);
  });

  it('declares every metric of the issue', async () => {
    const names = new Set((await scrape()).map((s) => s.name));
    const res = await app.get<string>('/metrics');
    for (const name of [
      'agent_turns_total',
      'agent_continuity_decisions_total',
      'agent_router_llm_calls_avoided_total',
      'agent_llm_calls_total',
      'agent_llm_latency_seconds',
      'agent_llm_tokens_total',
      'agent_guardrail_actions_total',
      'agent_checkpoint_write_seconds',
      'agent_checkpoint_size_bytes',
      'agent_turn_lock_wait_seconds',
      'agent_sessions_ended_total',
      'agent_sessions_handed_off_total',
      'http_request_duration_seconds',
    ]) {
      expect({ name, declared: res.body.includes(`# TYPE ${name} `) }).toEqual({ name, declared: true });
    }
    expect(names.has('process_cpu_user_seconds_total')).toBe(true);
  });
});

describe('GET /metrics with route stickiness on', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    app = await startTestApp({ fakeLlm: fake, env: { ENABLE_ROUTE_STICKINESS: 'true' } });
  });

  afterAll(async () => {
    await app.close();
    await fake.stop();
  });

  const scrape = async () => parseMetrics((await app.get<string>('/metrics')).body);

  it('counts continuity decisions by label and fallback reason, router calls avoided and admin handoffs', async () => {
    // One classifier verdict per turn, in order: ROUTE, an accepted CONTINUE, a CONTINUE below the threshold.
    fake.script({
      model: 'route_continuity',
      times: 1,
      reply: { json: { decision: 'ROUTE', confidence: 0.95, reason: 'new topic' } },
    });
    fake.script({
      model: 'route_continuity',
      times: 1,
      reply: { json: { decision: 'CONTINUE', confidence: 0.97, reason: 'same topic' } },
    });
    fake.script({
      model: 'route_continuity',
      times: 1,
      reply: { json: { decision: 'CONTINUE', confidence: 0.5, reason: 'unsure' } },
    });
    fake.script({ model: 'agent', reply: { content: 'Certo.' } });
    fake.script(GUARDRAILS_ALLOW);
    fake.script({ model: 'judge', reply: { json: { score: 1, passed: true, reason: 'ok' } } });
    fake.setFallback({ json: { intent: 'unknown', confidence: 0, reason: 'no intent' } });

    const tenant = `con${Date.now().toString(36)}`;
    const sessionId = uniqueId('sticky');
    const send = (text: string) =>
      app.post<{ route_bypassed: boolean; route_decision: { method: string } }>('/v1/channels/web/messages', {
        tenant_id: tenant,
        agent_id: 'telecom_contas',
        session_id: sessionId,
        text,
      });
    const before = await scrape();
    const first = await send('Minha fatura veio alta');
    const beforeBypass = await scrape();
    const second = await send('E quando vence?');
    const afterBypass = await scrape();
    const third = await send('E aquilo outro?');
    const handoff = await app.post<{ changed: boolean }>(
      `/v1/admin/sessions/${sessionId}/handoff?tenant_id=${tenant}`,
      {},
    );
    const after = await scrape();

    expect(first.body.route_bypassed).toBe(false);
    expect(second.body).toMatchObject({ route_bypassed: true, route_decision: { method: 'continuity' } });
    expect(third.body.route_bypassed).toBe(false);
    expect(handoff.body.changed).toBe(true);
    const delta = (name: string, labels: Record<string, string> = {}) =>
      total(after, name, labels) - total(before, name, labels);
    expect(delta('agent_continuity_decisions_total')).toBe(3);
    expect(
      delta('agent_continuity_decisions_total', {
        decision: 'ROUTE',
        accepted: 'true',
        fallback_reason: 'none',
      }),
    ).toBe(1);
    expect(
      delta('agent_continuity_decisions_total', {
        decision: 'CONTINUE',
        accepted: 'true',
        fallback_reason: 'none',
      }),
    ).toBe(1);
    expect(
      delta('agent_continuity_decisions_total', {
        decision: 'CONTINUE',
        accepted: 'false',
        fallback_reason: 'below_threshold',
      }),
    ).toBe(1);
    expect(delta('agent_router_llm_calls_avoided_total')).toBe(1);
    expect(delta('agent_turns_total', { method: 'continuity' })).toBe(1);
    expect(delta('agent_llm_calls_total', { profile: 'route_continuity' })).toBe(3);
    // The bypassed turn made no router call at all.
    expect(
      total(afterBypass, 'agent_llm_calls_total', { profile: 'router' }) -
        total(beforeBypass, 'agent_llm_calls_total', { profile: 'router' }),
    ).toBe(0);
    expect(delta('agent_sessions_handed_off_total', { source: 'admin' })).toBe(1);
  });
});
