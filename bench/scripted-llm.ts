import { join } from 'node:path';
import { loadYamlFile, routingFileSchema } from '@agent/config';
import {
  FakeChatRequest,
  FakeLlmServer,
  FakeReply,
  guardrailVerdict,
  lastUserMessage,
  requestText,
} from '../test/support/fake-llm';
import { REPO_ROOT } from '../test/support/repo-root';
import { ScriptedTurn } from './conversations';

/** Latency assumption of one LLM profile: a log-normal distribution given by its median and p95 (ms). */
export interface LatencyProfile {
  median: number;
  p95: number;
}

/**
 * Assumed latencies of an OpenAI-compatible endpoint per profile (documented in the README as assumptions,
 * overridable with BENCH_LATENCY_<PROFILE>=median:p95).
 */
export const DEFAULT_LATENCIES: Record<string, LatencyProfile> = {
  route_continuity: { median: 180, p95: 420 },
  router: { median: 380, p95: 900 },
  agent: { median: 900, p95: 2000 },
  guardrail: { median: 160, p95: 380 },
  judge: { median: 300, p95: 700 },
  confirmation: { median: 150, p95: 350 },
  memory_extraction: { median: 250, p95: 600 },
  default: { median: 300, p95: 700 },
};

export function latencyProfiles(
  scale: number,
  env: NodeJS.ProcessEnv = process.env,
): Record<string, LatencyProfile> {
  const result: Record<string, LatencyProfile> = {};
  for (const [profile, base] of Object.entries(DEFAULT_LATENCIES)) {
    const override = env[`BENCH_LATENCY_${profile.toUpperCase()}`];
    const [median, p95] = override ? override.split(':').map(Number) : [base.median, base.p95];
    result[profile] = { median: median * scale, p95: p95 * scale };
  }
  return result;
}

/** Deterministic PRNG (mulberry32) so every mode sees the same latency sequence per profile. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function sampler(profile: LatencyProfile, seed: number): () => number {
  const random = prng(seed);
  const sigma =
    profile.p95 > profile.median && profile.median > 0 ? Math.log(profile.p95 / profile.median) / 1.645 : 0;
  return () => {
    // Box-Muller normal deviate.
    const z = Math.sqrt(-2 * Math.log(random() || 1e-9)) * Math.cos(2 * Math.PI * random());
    return Math.max(0, Math.round(profile.median * Math.exp(sigma * z)));
  };
}

function findScripted(request: FakeChatRequest, index: Map<string, ScriptedTurn>): ScriptedTurn | undefined {
  const text = requestText(request);
  let best: ScriptedTurn | undefined;
  for (const [message, turn] of index) {
    if (text.includes(message) && (!best || message.length > best.text.length)) best = turn;
  }
  return best;
}

/** The current message of a continuity request (its user message is a JSON payload). */
function continuityMessage(request: FakeChatRequest): string {
  try {
    const payload = JSON.parse(lastUserMessage(request)) as { current_message?: unknown };
    return typeof payload.current_message === 'string' ? payload.current_message : '';
  } catch {
    return '';
  }
}

/** Each enabled intent's capability as the classifier's payload shows it (its label, else its description). */
function shippedCapabilities(): Map<string, string> {
  const routing = loadYamlFile(join(REPO_ROOT, 'config', 'routing.yaml'), routingFileSchema);
  return new Map(
    routing.intents
      .filter((intent) => intent.enabled)
      .map((intent) => [intent.name, intent.label ?? intent.description]),
  );
}

/**
 * Scripts a fake LLM that answers every stage from the conversation labels, with per-profile latency.
 * It is a stand-in for a model: it says what the labels say, so the benchmark measures the runtime, not accuracy.
 * The classifier names a ROUTE turn's capability as its target, as the router names its intent.
 */
export function scriptFakeLlm(
  fake: FakeLlmServer,
  index: Map<string, ScriptedTurn>,
  latencies: Record<string, LatencyProfile>,
): void {
  const delay = Object.fromEntries(
    Object.entries(latencies).map(([profile, l], i) => [profile, sampler(l, 1000 + i)]),
  );
  const wait = (profile: string) => (delay[profile] ?? delay.default)();
  const capabilities = shippedCapabilities();
  fake.script({
    model: 'route_continuity',
    reply: (request): FakeReply => {
      const turn = index.get(continuityMessage(request));
      const decision = turn?.label ?? 'ROUTE';
      const target = decision === 'ROUTE' && turn?.intent ? capabilities.get(turn.intent) : undefined;
      return {
        json: {
          decision,
          confidence: 0.97,
          reason: `scripted label ${decision}`,
          ...(target ? { target } : {}),
        },
        delayMs: wait('route_continuity'),
      };
    },
  });
  fake.script({
    model: 'router',
    reply: (request): FakeReply => {
      const turn = findScripted(request, index);
      if (/"intents"/.test(requestText(request)) && turn?.intent) {
        return { json: { intents: [{ intent: turn.intent, confidence: 0.93 }] }, delayMs: wait('router') };
      }
      return turn?.intent
        ? {
            json: { intent: turn.intent, confidence: 0.93, reason: 'scripted intent' },
            delayMs: wait('router'),
          }
        : {
            json: { intent: 'unknown', confidence: 0.2, reason: 'no scripted intent' },
            delayMs: wait('router'),
          };
    },
  });
  fake.script({
    model: 'agent',
    reply: (request): FakeReply => ({
      content: `(resposta roteirizada) Sobre "${lastUserMessage(request).slice(0, 60)}": aqui estão as informações.`,
      delayMs: wait('agent'),
    }),
  });
  fake.script({
    model: 'guardrail',
    reply: (request): FakeReply => ({ ...guardrailVerdict(request), delayMs: wait('guardrail') }),
  });
  fake.script({
    model: 'judge',
    reply: () => ({ json: { score: 0.9, passed: true, reason: 'scripted' }, delayMs: wait('judge') }),
  });
  fake.script({
    model: 'confirmation',
    reply: () => ({ json: { decision: 'OTHER', confidence: 0.5 }, delayMs: wait('confirmation') }),
  });
  fake.script({
    model: 'memory_extraction',
    reply: () => ({ json: { facts: [] }, delayMs: wait('memory_extraction') }),
  });
  fake.setFallback({ content: 'ok' });
}
