import type { components } from '../../apps/console/src/api/openapi';
import { FakeLlmServer } from '../support/fake-llm';
import { scriptStages } from '../support/scripted-stages';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

// A tenant of its own, so the aggregates are exact even when other suites share the database.
const TENANT = `ast${Date.now().toString(36)}`;
const OTHER = `${TENANT}-b`;
const ADMIN = { authorization: 'Bearer admin-stats-global' };
const SCOPED = { authorization: 'Bearer admin-stats-scoped' };
const CHANNEL = { authorization: 'Bearer channel-stats' };

/** The API's answer, as the committed OpenAPI document (and the console) type it. */
type Stats = components['schemas']['StickinessStatsDto'];

/** The test profiles' prices per million tokens (test/support/config/llm_profiles.yaml); the agent's has none. */
const PRICES: Record<string, { input: number; output: number }> = {
  router: { input: 2, output: 8 },
  route_continuity: { input: 0.4, output: 1.6 },
  guardrail: { input: 0.4, output: 1.6 },
};

interface TimelineTurn {
  route_bypassed: boolean;
  model_usage: { profile: string; calls: number }[];
  latency_ms: number | null;
}

describe('GET /v1/admin/stats (stickiness and cost over a period)', () => {
  let fake: FakeLlmServer;
  let app: TestApp;
  let started: Date;
  const sessions = [uniqueId('st'), uniqueId('st')];

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    scriptStages(fake, {
      'Qual é o meu plano?': { decision: 'ROUTE', confidence: 0.98 },
      'e o que está incluso?': { decision: 'CONTINUE', confidence: 0.97 },
      'talvez a fatura': { decision: 'CONTINUE', confidence: 0.4 },
      'e depois disso?': { decision: 'CONTINUE', confidence: 0.95 },
    });
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        ENABLE_ROUTE_STICKINESS: 'true',
        // Every accepted CONTINUE is compared with the router, to measure agreement.
        ROUTE_STICKINESS_SHADOW_RATE: '1',
        CHANNEL_API_KEYS: `${TENANT}:channel-stats`,
        ADMIN_API_KEYS: `admin-stats-global,${TENANT}:admin-stats-scoped`,
      },
    });
    started = new Date(Date.now() - 1000);
    const conversations = [
      ['Qual é o meu plano?', 'e o que está incluso?', 'talvez a fatura', 'e depois disso?'],
      ['Qual é o meu plano?', 'e o que está incluso?'],
    ];
    for (const [index, texts] of conversations.entries()) {
      for (const text of texts) {
        const res = await app.post(
          '/v1/channels/web/messages',
          { tenant_id: TENANT, agent_id: 'telecom_contas', session_id: sessions[index], text },
          CHANNEL,
        );
        expect(res.status).toBe(200);
      }
    }
  }, 240_000);

  afterAll(async () => {
    await app?.close();
    await fake?.stop();
  });

  const stats = (query: string, headers = ADMIN) => app.get<Stats>(`/v1/admin/stats?${query}`, headers);

  it("adds up the tenant's turns, bypasses, avoided router calls, fallbacks, shadow agreement and usage", async () => {
    const to = new Date(Date.now() + 1000);
    const res = await stats(`tenant_id=${TENANT}&from=${started.toISOString()}&to=${to.toISOString()}`);
    expect(res.status).toBe(200);
    const body = res.body;

    // What the timelines of the same turns say, turn by turn.
    const turns: TimelineTurn[] = [];
    for (const id of sessions) {
      const timeline = await app.get<{ turns: TimelineTurn[] }>(
        `/v1/admin/sessions/${id}/timeline?tenant_id=${TENANT}`,
        ADMIN,
      );
      turns.push(...timeline.body.turns);
    }
    const routerCalls = (turn: TimelineTurn) =>
      turn.model_usage.find((usage) => usage.profile === 'router')?.calls ?? 0;
    const bypassed = turns.filter((turn) => turn.route_bypassed);
    expect(bypassed.length).toBe(3);

    expect(body).toMatchObject({
      tenant_id: TENANT,
      bucket: 'hour',
      turns: 6,
      continuity_evaluated: 6,
      bypassed_turns: 3,
      router_calls: turns.reduce((sum, turn) => sum + routerCalls(turn), 0),
      router_calls_avoided: bypassed.filter((turn) => routerCalls(turn) === 0).length,
      fallback_reasons: [{ reason: 'below_threshold', count: 1 }],
      shadow: { compared: 3 },
    });
    expect(body.bypass_rate).toBeCloseTo(0.5);
    expect(body.decisions).toEqual(
      expect.arrayContaining([
        { decision: 'ROUTE', accepted: true, count: 2 },
        { decision: 'CONTINUE', accepted: true, count: 3 },
        { decision: 'CONTINUE', accepted: false, count: 1 },
      ]),
    );
    expect(body.decisions).toHaveLength(3);
    expect(body.shadow.agreed).toBeLessThanOrEqual(3);
    expect(body.shadow.agreement_rate).toBeCloseTo(body.shadow.agreed / 3);
    expect(body.profiles.find((p) => p.profile === 'route_continuity')).toEqual(
      expect.objectContaining({ calls: 6, failures: 0, prompt_tokens: 6 * 310, completion_tokens: 6 * 14 }),
    );
    expect(body.profiles.find((p) => p.profile === 'agent')).toEqual(
      expect.objectContaining({ calls: 6, prompt_tokens: 6 * 500, completion_tokens: 6 * 40 }),
    );
    const latencies = turns.map((turn) => turn.latency_ms ?? 0);
    expect(body.turn_latency_ms.p50).toBeGreaterThanOrEqual(Math.min(...latencies));
    expect(body.turn_latency_ms.p95).toBeLessThanOrEqual(Math.max(...latencies));
    // Every hour of the period is there, zeros included, and the buckets add up to the totals.
    const hours = Math.ceil(
      (to.getTime() - Math.floor(started.getTime() / 3_600_000) * 3_600_000) / 3_600_000,
    );
    expect(body.series).toHaveLength(hours);
    expect(body.series.reduce((sum, bucket) => sum + bucket.turns, 0)).toBe(6);
    expect(body.series.reduce((sum, bucket) => sum + bucket.bypassed_turns, 0)).toBe(3);

    // Money: each profile's tokens at its model's price, the agent's unpriced; avoided router calls at the
    // average router call of the period, less the classifier.
    const costOf = (p: Stats['profiles'][number]) =>
      (p.prompt_tokens * PRICES[p.profile].input + p.completion_tokens * PRICES[p.profile].output) / 1e6;
    const priced = body.profiles.filter((p) => p.profile in PRICES);
    const router = body.profiles.find((p) => p.profile === 'router');
    const routerCall = router && router.calls > 0 ? costOf(router) / router.calls : null;
    const classifier = (6 * (310 * 0.4 + 14 * 1.6)) / 1e6;
    const saved =
      body.router_calls_avoided === 0
        ? 0
        : routerCall === null
          ? null
          : body.router_calls_avoided * routerCall;
    expect(body.cost).toEqual({
      currency: 'USD',
      total: expect.closeTo(
        priced.reduce((sum, p) => sum + costOf(p), 0),
        6,
      ),
      classifier: expect.closeTo(classifier, 6),
      router_call: routerCall === null ? null : expect.closeTo(routerCall, 6),
      saved: saved === null ? null : expect.closeTo(saved, 6),
      net_saved: saved === null ? null : expect.closeTo(saved - classifier, 6),
      unpriced_profiles: ['agent'],
    });
  });

  it('counts only the turns inside the period', async () => {
    const from = new Date(Date.now() + 60_000);
    const res = await stats(
      `tenant_id=${TENANT}&from=${from.toISOString()}&to=${new Date(from.getTime() + 3 * 86_400_000).toISOString()}`,
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      turns: 0,
      bypass_rate: null,
      decisions: [],
      profiles: [],
      bucket: 'day',
    });
    expect(res.body.shadow.agreement_rate).toBeNull();
    expect(res.body.series.every((bucket) => bucket.turns === 0)).toBe(true);
    // Without a period: the last seven days, in days.
    const recent = await stats(`tenant_id=${TENANT}`);
    expect(recent.body).toMatchObject({ turns: 6, bucket: 'day' });
    expect(Date.parse(recent.body.to) - Date.parse(recent.body.from)).toBe(7 * 86_400_000);
  });

  it("keeps a tenant key to its tenant and another tenant's figures apart", async () => {
    const own = await stats('', SCOPED);
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ tenant_id: TENANT, turns: 6 });
    const foreign = await stats(`tenant_id=${OTHER}`, SCOPED);
    expect(foreign.status).toBe(403);
    expect((await stats(`tenant_id=${OTHER}`)).body).toMatchObject({ tenant_id: OTHER, turns: 0 });
    expect((await stats('', CHANNEL)).status).toBe(403);
    expect((await stats('')).body.tenant_id).toBeNull();
  });

  it('refuses a period that is reversed, too long or malformed', async () => {
    const cases = [
      'from=2025-01-02T00:00:00Z&to=2025-01-01T00:00:00Z',
      'from=2025-01-01T00:00:00Z&to=2025-06-01T00:00:00Z',
      'from=last-week',
      'bucket=minute',
    ];
    for (const query of cases) {
      const res = await stats(`tenant_id=${TENANT}&${query}`);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: { code: 'VALIDATION_FAILED' } });
    }
  });
});
