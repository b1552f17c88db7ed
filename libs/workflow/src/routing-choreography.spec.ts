import type { ContinuityOutcome } from '@agent/continuity';
import { BLOCKED_ROUTE, DomainAgentNode, RouteDecision } from '@agent/contracts';
import type { InputVerdict } from '@agent/guardrails';
import { TurnContextStore } from '@agent/observability';
import type { RouteSettlement } from '@agent/routing';
import { turnContextOf, turnStateOf } from '@agent/testing/states';
import { RoutingChoreography, RoutingPorts } from './routing-choreography';

/** A promise the test settles by hand, to fix which of two concurrent stages answers first. */
function deferred<T>() {
  let resolve: (value: T) => void = () => undefined;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

function decision(route: DomainAgentNode, method: RouteDecision['method']): RouteDecision {
  return {
    route,
    agent: route,
    intent: `${route}_intent`,
    domain: null,
    mcp_tools: [],
    confidence: 0.9,
    method,
    reason: 'test',
    next_state: null,
    route_bypassed: method === 'continuity',
    metadata: {},
  };
}

function outcome(label: 'CONTINUE' | 'ROUTE', kept: RouteDecision | null): ContinuityOutcome {
  return {
    signal: {
      decision: label,
      confidence: 0.97,
      accepted: true,
      reason: 'test',
      fallback_reason: null,
      latency_ms: 1,
      profile_name: 'route_continuity',
    },
    decision: kept,
    route: null,
  };
}

const emit = (name: string, payload: Record<string, unknown> = {}) =>
  TurnContextStore.current()?.events.push({ name, payload, at: new Date().toISOString() });

/** Stages the test settles by hand; every call is logged in start order. */
function stages(strategy: string, settlement: RouteSettlement = 'model') {
  const verdict = deferred<InputVerdict>();
  const classifier = deferred<ContinuityOutcome | null>();
  const router = deferred<RouteDecision>();
  const started: string[] = [];
  const ports: RoutingPorts = {
    strategy,
    guardrails: {
      inputVerdict: () => {
        started.push('verdict');
        return verdict.promise;
      },
    },
    continuity: {
      enabled: true,
      evaluate: () => {
        started.push('classifier');
        return classifier.promise;
      },
      shouldShadow: () => false,
      runShadow: () => Promise.resolve(null),
    },
    routing: {
      settlement: () => settlement,
      route: async () => {
        started.push('router');
        const routed = await router.promise;
        emit('llm.call', { profile: 'router' });
        emit('router.decision', { route: routed.route });
        return routed;
      },
    },
  };
  return { ports, verdict, classifier, router, started };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));
const state = turnStateOf({ user_text: 'e mais?', active_agent: 'billing_agent' });

describe('RoutingChoreography', () => {
  it('starts the verdict, the classifier and the router together and discards the router on CONTINUE', async () => {
    const s = stages('speculative');
    const turn = turnContextOf();
    const patch = await TurnContextStore.run(turn, async () => {
      const deciding = new RoutingChoreography(s.ports).decide(state);
      await flush();
      expect(s.started.sort()).toEqual(['classifier', 'router', 'verdict']);
      s.classifier.resolve(outcome('CONTINUE', decision('billing_agent', 'continuity')));
      s.verdict.resolve({ blocked: false, decisions: [] });
      const result = await deciding;
      s.router.resolve(decision('product_agent', 'llm'));
      await flush();
      return result;
    });
    expect(patch).toMatchObject({ route: 'billing_agent', route_bypassed: true });
    expect(turn.events.map((e) => [e.name, e.payload.speculative])).toEqual([['llm.call', 'discarded']]);
  });

  it('takes the speculative router on ROUTE and adopts its events', async () => {
    const s = stages('speculative');
    const turn = turnContextOf();
    const patch = await TurnContextStore.run(turn, async () => {
      const deciding = new RoutingChoreography(s.ports).decide(state);
      s.router.resolve(decision('product_agent', 'llm'));
      s.classifier.resolve(outcome('ROUTE', null));
      s.verdict.resolve({ blocked: false, decisions: [] });
      return deciding;
    });
    expect(patch).toMatchObject({ route: 'product_agent', route_bypassed: false });
    expect(turn.events.map((e) => e.name)).toEqual(['llm.call', 'router.decision']);
  });

  it('runs the router only after the classifier when sequential', async () => {
    const s = stages('sequential');
    await TurnContextStore.run(turnContextOf(), async () => {
      const deciding = new RoutingChoreography(s.ports).decide(state);
      await flush();
      expect(s.started.sort()).toEqual(['classifier', 'verdict']);
      s.classifier.resolve(outcome('ROUTE', null));
      s.verdict.resolve({ blocked: false, decisions: [] });
      await flush();
      expect(s.started).toContain('router');
      s.router.resolve(decision('product_agent', 'llm'));
      return deciding;
    });
  });

  it('speculates under adaptive only when the model settles the route', async () => {
    const s = stages('adaptive', 'deterministic');
    await TurnContextStore.run(turnContextOf(), async () => {
      const deciding = new RoutingChoreography(s.ports).decide(state);
      await flush();
      expect(s.started).not.toContain('router');
      s.classifier.resolve(outcome('CONTINUE', decision('billing_agent', 'continuity')));
      s.verdict.resolve({ blocked: false, decisions: [] });
      return deciding;
    });
  });

  it('discards routing when the verdict blocks: the blocked patch, only routing costs on record', async () => {
    const s = stages('speculative');
    const turn = turnContextOf();
    const patch = await TurnContextStore.run(turn, async () => {
      const deciding = new RoutingChoreography(s.ports).decide(state);
      s.verdict.resolve({ blocked: true, decisions: [], message: 'blocked' });
      const result = await deciding;
      s.router.resolve(decision('product_agent', 'llm'));
      s.classifier.resolve(outcome('ROUTE', null));
      await flush();
      await flush();
      return result;
    });
    expect(patch).toMatchObject({ blocked: true, route: BLOCKED_ROUTE, answer: 'blocked' });
    expect(turn.events.map((e) => e.name)).toEqual(['llm.call']);
    expect(turn.events[0].payload.input_guardrail_block).toBe('discarded');
  });
});
