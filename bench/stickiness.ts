/**
 * npm run bench:stickiness — generated conversations in Portuguese, English and Spanish (bench/traffic.ts) at
 * several shares of follow-up turns, each run with stickiness off, on with every router strategy (sequential,
 * speculative, adaptive) and no speculative agent start, and on with the defaults and each agent speculation
 * policy (AGENT_SPECULATIVE_START), against the scripted model with assumed latencies and assumed prices.
 * Cancelled speculative agent calls count with their prompt tokens, priced as input.
 * Options (env): BENCH_CONVERSATIONS (110 per mix), BENCH_FOLLOWUPS (0.3,0.5,0.7; the middle one is the default
 * mix), BENCH_CONCURRENCY (conversations in flight, 16), BENCH_SCALE (latency multiplier, 1),
 * BENCH_LATENCY_<PROFILE>=median:p95 (ms), BENCH_PRICES (price file, bench/config/prices.yaml),
 * BENCH_PROMPT_CACHE (min:block tokens of the imitated prompt cache, 1024:128; `off`), BENCH_MODES (the modes to
 * run, comma-separated; all when unset, `off` always), DATABASE_URL.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import type { DataSource } from 'typeorm';
import { tokenCost } from '@agent/llm';
import { FakeLlmServer, FakePromptCache, lastUserMessage } from '../test/support/fake-llm';
import { startTestApp } from '../test/support/test-app';
import { ContinuityLabel, scriptIndex, ScriptedConversation } from './conversations';
import {
  barChartSvg,
  consoleTable,
  ensureDatabase,
  llmCalls,
  mean,
  percentile,
  pool,
  REPO_ROOT,
  round,
  runBench,
  writeReport,
} from './lib';
import { latencyProfiles, scriptFakeLlm } from './scripted-llm';
import { generateTraffic } from './traffic';

/**
 * Stickiness off; on with the router's strategy (ROUTE_STICKINESS_STRATEGY) and without a speculative agent
 * start; and on with the default strategy and each agent speculation policy (AGENT_SPECULATIVE_START), `default`
 * being the service's defaults.
 */
type ModeName = 'off' | 'sequential' | 'speculative' | 'adaptive' | 'default' | 'eager' | 'always';

const STICKY_ON = { ENABLE_ROUTE_STICKINESS: 'true' };
const MODES: { name: ModeName; env: Record<string, string> }[] = [
  { name: 'off', env: { ENABLE_ROUTE_STICKINESS: 'false' } },
  {
    name: 'sequential',
    env: { ...STICKY_ON, ROUTE_STICKINESS_STRATEGY: 'sequential', AGENT_SPECULATIVE_START: 'off' },
  },
  {
    name: 'speculative',
    env: { ...STICKY_ON, ROUTE_STICKINESS_STRATEGY: 'speculative', AGENT_SPECULATIVE_START: 'off' },
  },
  {
    name: 'adaptive',
    env: { ...STICKY_ON, ROUTE_STICKINESS_STRATEGY: 'adaptive', AGENT_SPECULATIVE_START: 'off' },
  },
  { name: 'default', env: { ...STICKY_ON, AGENT_SPECULATIVE_START: 'adaptive' } },
  // The adaptive policy content with a draft used one time in two: also on turns no keyword speaks to.
  {
    name: 'eager',
    env: { ...STICKY_ON, AGENT_SPECULATIVE_START: 'adaptive', AGENT_SPECULATIVE_MIN_CONTINUE_SHARE: '0.5' },
  },
  { name: 'always', env: { ...STICKY_ON, AGENT_SPECULATIVE_START: 'always' } },
];
const STICKY: ModeName[] = ['sequential', 'speculative', 'adaptive', 'default', 'eager', 'always'];
/** The profile whose calls stickiness can avoid (generation `llm.router`), and the classifier's (`llm.route_continuity`). */
const ROUTER = 'router';
const CLASSIFIER = 'route_continuity';
const AGENT = 'agent';
const LABELS: ContinuityLabel[] = ['ROUTE', 'CONTINUE', 'HUMAN_HANDOFF', 'END_SESSION'];

const priceSchema = z.object({
  model: z.string(),
  input: z.number().nonnegative(),
  cached_input: z.number().nonnegative(),
  output: z.number().nonnegative(),
});
const priceFileSchema = z.object({ tiers: z.record(priceSchema) });
type Price = z.infer<typeof priceSchema>;

interface Usage {
  prompt: number;
  cached: number;
  completion: number;
  cost: number;
}

interface TurnRecord {
  mode: ModeName;
  mix: number;
  conversation_id: string;
  index: number;
  label: ContinuityLabel;
  status: number;
  latency_ms: number;
  method: string;
  route_bypassed: boolean;
  router_calls: number;
  usage: Record<string, Usage>;
  /** The speculative agent call: none started, used by the run, or cancelled (its prompt and cost). */
  speculation: 'none' | 'used' | 'discarded';
  wasted_tokens: number;
  wasted_cost: number;
  /** From the request to the agent's answer reaching the service (no streaming: its first token); null without one. */
  agent_first_token_ms: number | null;
}

interface TurnResponseBody {
  turn?: number;
  route_bypassed?: boolean;
  route_decision?: { method?: string };
}

/** Each profile's price: its tier in the shipped profiles file, that tier's line of the price file. */
function profilePrices(pricesPath: string): Record<string, Price> {
  const prices = priceFileSchema.parse(parse(readFileSync(pricesPath, 'utf8'))).tiers;
  const shipped = z
    .object({ profiles: z.record(z.object({ tier: z.string() }).passthrough()) })
    .parse(parse(readFileSync(join(REPO_ROOT, 'config', 'llm_profiles.yaml'), 'utf8'))).profiles;
  const result: Record<string, Price> = {};
  for (const [profile, { tier }] of Object.entries(shipped)) {
    const price = prices[tier];
    if (!price) throw new Error(`${pricesPath} has no price for tier "${tier}" (profile ${profile})`);
    result[profile] = price;
  }
  return result;
}

function costOf(price: Price | undefined, prompt: number, cached: number, completion: number): number {
  return price ? tokenCost(price, { prompt, cached, completion }) : 0;
}

function promptCacheRule(value: string | undefined): FakePromptCache | null {
  if (value === 'off') return null;
  const [minTokens, blockTokens] = (value ?? '1024:128').split(':').map(Number);
  return { minTokens, blockTokens };
}

/** BENCH_MODES: the modes to run (all when unset), `off` always among them as the reference. */
function selectedModes(value: string | undefined): typeof MODES {
  if (!value) return MODES;
  const names = new Set(['off', ...value.split(',').map((name) => name.trim())]);
  const unknown = [...names].filter((name) => !MODES.some((mode) => mode.name === name));
  if (unknown.length > 0) throw new Error(`BENCH_MODES: unknown mode ${unknown.join(', ')}`);
  return MODES.filter((mode) => names.has(mode.name));
}

async function runMode(
  mode: (typeof MODES)[number],
  mixes: Map<number, ScriptedConversation[]>,
  settings: { runTag: string; scale: number; concurrency: number; prices: Record<string, Price> },
): Promise<TurnRecord[]> {
  const fake = await FakeLlmServer.start();
  fake.promptCache = promptCacheRule(process.env.BENCH_PROMPT_CACHE);
  scriptFakeLlm(fake, scriptIndex([...mixes.values()].flat()), latencyProfiles(settings.scale));
  const app = await startTestApp({
    fakeLlm: fake,
    env: {
      ...mode.env,
      LLM_PROFILES_PATH: join(REPO_ROOT, 'bench', 'config', 'llm_profiles.yaml'),
      TURN_LOCK_TIMEOUT_MS: '60000',
      // Thousands of turns a minute from one client: the benchmark measures routing, not the rate limit.
      RATE_LIMIT_PER_MINUTE: '1000000',
    },
  });
  const records: TurnRecord[] = [];
  try {
    for (const [mix, conversations] of mixes) {
      console.log(`  mode ${mode.name}, ${Math.round(mix * 100)}% follow-ups ...`);
      const sessionOf = (id: string) => `${settings.runTag}-${mode.name}-${mix}-${id}`;
      const perConversation = await pool(conversations, settings.concurrency, async (conversation) => {
        const turns: (TurnRecord & { turn: number })[] = [];
        for (const [index, scripted] of conversation.turns.entries()) {
          const started = performance.now();
          const startedAt = Date.now();
          const res = await app.post<TurnResponseBody>('/v1/channels/web/messages', {
            tenant_id: 'bench',
            agent_id: conversation.agentId,
            session_id: sessionOf(conversation.id),
            text: scripted.text,
          });
          turns.push({
            mode: mode.name,
            mix,
            conversation_id: conversation.id,
            index,
            turn: res.body.turn ?? index + 1,
            label: scripted.label,
            status: res.status,
            latency_ms: performance.now() - started,
            method: res.body.route_decision?.method ?? '',
            route_bypassed: res.body.route_bypassed === true,
            router_calls: 0,
            usage: {},
            speculation: 'none',
            wasted_tokens: 0,
            wasted_cost: 0,
            agent_first_token_ms: firstAgentAnswer(fake, scripted.text, startedAt, Date.now()),
          });
        }
        return turns;
      });
      const keys = conversations.map((c) => `bench:${sessionOf(c.id)}`);
      const calls = await llmCalls(app.dataSource, keys);
      const marks = await speculationMarks(app.dataSource, keys);
      const byTurn = new Map<string, typeof calls>();
      for (const call of calls) {
        const key = `${call.conversation_key}#${call.turn}`;
        byTurn.set(key, [...(byTurn.get(key) ?? []), call]);
      }
      for (const record of perConversation.flat()) {
        for (const call of byTurn.get(`bench:${sessionOf(record.conversation_id)}#${record.turn}`) ?? []) {
          if (call.profile === ROUTER) record.router_calls++;
          const usage = (record.usage[call.profile] ??= { prompt: 0, cached: 0, completion: 0, cost: 0 });
          usage.prompt += call.prompt_tokens;
          usage.cached += call.cached_prompt_tokens;
          usage.completion += call.completion_tokens;
          usage.cost += costOf(
            settings.prices[call.profile],
            call.prompt_tokens,
            call.cached_prompt_tokens,
            call.completion_tokens,
          );
        }
        for (const mark of marks.get(`bench:${sessionOf(record.conversation_id)}#${record.turn}`) ?? []) {
          if (mark.state === 'used') {
            record.speculation = 'used';
            continue;
          }
          record.speculation = record.speculation === 'used' ? 'used' : 'discarded';
          record.wasted_tokens += mark.prompt_tokens;
          record.wasted_cost += costOf(settings.prices[AGENT], mark.prompt_tokens, 0, 0);
        }
        const { turn: _turn, ...kept } = record;
        records.push(kept);
      }
    }
    return records;
  } finally {
    await app.close();
    await fake.stop();
  }
}

/**
 * When the agent's answer for `text` reached the service, as the scripted model saw it: the first completed,
 * uncancelled agent request for that message inside the turn's window, from the turn's start.
 */
function firstAgentAnswer(fake: FakeLlmServer, text: string, from: number, to: number): number | null {
  const answered = fake
    .requestsFor(AGENT)
    .filter(
      (r) =>
        r.answeredAt !== undefined &&
        r.at >= from &&
        r.answeredAt <= to &&
        lastUserMessage(r) === text &&
        !fake.cancelled.includes(r),
    )
    .map((r) => (r.answeredAt ?? to) - from);
  return answered.length > 0 ? Math.min(...answered) : null;
}

/** The speculative agent calls of each turn (`speculative_agent` on its llm.call), by `key#turn`. */
async function speculationMarks(
  dataSource: DataSource,
  keys: string[],
): Promise<Map<string, { state: string; prompt_tokens: number }[]>> {
  const rows: { conversation_key: string; turn: number; state: string; prompt_tokens: number }[] =
    await dataSource.query(
      `SELECT conversation_key, turn, payload->>'speculative_agent' AS state,
              COALESCE((payload->>'prompt_tokens')::int, 0) AS prompt_tokens
         FROM session_events
        WHERE name = 'llm.call' AND payload ? 'speculative_agent' AND conversation_key = ANY($1)`,
      [keys],
    );
  const byTurn = new Map<string, { state: string; prompt_tokens: number }[]>();
  for (const row of rows) {
    const key = `${row.conversation_key}#${row.turn}`;
    byTurn.set(key, [...(byTurn.get(key) ?? []), { state: row.state, prompt_tokens: row.prompt_tokens }]);
  }
  return byTurn;
}

const tokensOf = (usage: Usage | undefined) => (usage ? usage.prompt + usage.completion : 0);
const totalTokens = (r: TurnRecord) =>
  Object.values(r.usage).reduce((n, u) => n + u.prompt + u.completion, 0);
const totalCost = (r: TurnRecord) => Object.values(r.usage).reduce((n, u) => n + u.cost, 0);

function distribution(values: number[]) {
  return { p50: percentile(values, 50), p95: percentile(values, 95), p99: percentile(values, 99) };
}

function latencies(records: TurnRecord[], label?: ContinuityLabel) {
  return distribution(
    records.filter((r) => label === undefined || r.label === label).map((r) => r.latency_ms),
  );
}

function summarize(records: TurnRecord[], conversations: number) {
  const cost = records.reduce((n, r) => n + totalCost(r), 0);
  const used = records.filter((r) => r.speculation === 'used').length;
  const discarded = records.filter((r) => r.speculation === 'discarded').length;
  return {
    turns: records.length,
    errors: records.filter((r) => r.status !== 200).length,
    overall: latencies(records),
    route: latencies(records, 'ROUTE'),
    continue: latencies(records, 'CONTINUE'),
    byLabel: Object.fromEntries(LABELS.map((label) => [label, latencies(records, label)])) as Record<
      ContinuityLabel,
      ReturnType<typeof distribution>
    >,
    speculated: used + discarded,
    hit_rate: used + discarded === 0 ? null : used / (used + discarded),
    wasted_tokens: mean(records.map((r) => r.wasted_tokens)),
    wasted_cost_per_1000_conversations:
      (records.reduce((n, r) => n + r.wasted_cost, 0) / conversations) * 1000,
    first_token: distribution(
      records.flatMap((r) => (r.agent_first_token_ms === null ? [] : [r.agent_first_token_ms])),
    ),
    router_calls: records.reduce((n, r) => n + r.router_calls, 0),
    bypassed: records.filter((r) => r.route_bypassed).length,
    tokens: mean(records.map(totalTokens)),
    classifier_tokens: mean(records.map((r) => tokensOf(r.usage[CLASSIFIER]))),
    router_tokens: mean(records.map((r) => tokensOf(r.usage[ROUTER]))),
    cached_tokens: mean(records.map((r) => Object.values(r.usage).reduce((n, u) => n + u.cached, 0))),
    cost_per_turn: cost / records.length,
    cost_per_1000_conversations: (cost / conversations) * 1000,
  };
}

/**
 * The saving attributed to stickiness by its rule (docs/architecture.md): only turns with route_bypassed=true and
 * no router call count, each saving what the same turn's router calls cost in the "off" run; the classifier's
 * cost on every turn is set against it.
 */
function attributed(on: TurnRecord[], off: TurnRecord[]) {
  const twins = new Map(off.map((r) => [`${r.conversation_id}#${r.index}`, r]));
  let turns = 0;
  let routerTokens = 0;
  let routerCost = 0;
  for (const record of on) {
    if (!record.route_bypassed || record.router_calls > 0) continue;
    const twin = twins.get(`${record.conversation_id}#${record.index}`);
    if (!twin) continue;
    turns++;
    routerTokens += tokensOf(twin.usage[ROUTER]);
    routerCost += twin.usage[ROUTER]?.cost ?? 0;
  }
  const classifierCost = on.reduce((n, r) => n + (r.usage[CLASSIFIER]?.cost ?? 0), 0);
  return { turns, routerTokens, routerCost, classifierCost, net: routerCost - classifierCost };
}

/** "−12%": how far `value` is below (or above) `reference`. */
function against(value: number, reference: number): string {
  if (reference === 0) return '';
  const change = Math.round(((value - reference) / reference) * 100);
  return ` (${change <= 0 ? '−' : '+'}${Math.abs(change)}%)`;
}

const dollars = (value: number, digits = 2) => `$${value.toFixed(digits)}`;

async function main(): Promise<void> {
  const modes = selectedModes(process.env.BENCH_MODES);
  // Against a Postgres server when DATABASE_URL is set: its database is created when missing.
  if (process.env.DATABASE_URL) await ensureDatabase(process.env.DATABASE_URL);
  const scale = Number(process.env.BENCH_SCALE ?? '1');
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? '16');
  const count = Number(process.env.BENCH_CONVERSATIONS ?? '110');
  const shares = (process.env.BENCH_FOLLOWUPS ?? '0.3,0.5,0.7').split(',').map(Number);
  const defaultMix = shares[Math.floor(shares.length / 2)];
  const pricesPath = process.env.BENCH_PRICES ?? join(REPO_ROOT, 'bench', 'config', 'prices.yaml');
  const prices = profilePrices(pricesPath);
  const mixes = new Map(
    shares.map((share) => [share, generateTraffic({ conversations: count, followUps: share })]),
  );
  const runTag = `run${Date.now().toString(36)}`;
  console.log(
    `bench:stickiness — ${count} conversations per mix, follow-up shares ${shares.join(', ')}, latency scale ${scale}, concurrency ${concurrency}`,
  );
  const records: TurnRecord[] = [];
  for (const mode of modes) {
    records.push(...(await runMode(mode, mixes, { runTag, scale, concurrency, prices })));
  }
  const select = (mode: ModeName, mix: number) => records.filter((r) => r.mode === mode && r.mix === mix);

  const lines: string[] = [
    '# Stickiness benchmark',
    '',
    `Run: ${new Date().toISOString()} · database: ${process.env.DATABASE_URL ? 'Postgres (DATABASE_URL)' : 'embedded PGlite'} · concurrency ${concurrency} · latency scale ${scale} · prompt cache imitated: ${process.env.BENCH_PROMPT_CACHE ?? '1024:128'}`,
    '',
    `Reproduce: \`npm run bench:stickiness\` (options in \`bench/stickiness.ts\`). ${count} generated conversations per mix (bench/traffic.ts: Portuguese, English and Spanish, telecom and retail, 4 to 8 turns, one in three closing with a request for a person or an ending); the model is scripted: every stage answers from the labels after a latency drawn per profile (median / p95 ms below, assumptions), and each call is priced with \`${pricesPath.replace(`${REPO_ROOT}/`, '')}\` (per million tokens: ${Object.entries(
      priceFileSchema.parse(parse(readFileSync(pricesPath, 'utf8'))).tiers,
    )
      .map(([tier, p]) => `${tier} ${p.model} ${p.input}/${p.cached_input}/${p.output} input/cached/output`)
      .join('; ')}).`,
    '',
    `Latencies assumed: ${Object.entries(latencyProfiles(scale))
      .map(([profile, l]) => `${profile} ${round(l.median, 0)}/${round(l.p95, 0)}`)
      .join(', ')}.`,
    '',
  ];
  for (const mix of shares) {
    const conversations = mixes.get(mix) ?? [];
    const turns = conversations.reduce((n, c) => n + c.turns.length, 0);
    const labels = conversations.flatMap((c) => c.turns.map((t) => t.label));
    const share = (label: ContinuityLabel) => labels.filter((l) => l === label).length;
    const summaries = Object.fromEntries(
      modes.map((m) => [m.name, summarize(select(m.name, mix), conversations.length)]),
    ) as Record<ModeName, ReturnType<typeof summarize>>;
    const off = summaries.off;
    lines.push(
      `## ${Math.round(mix * 100)}% follow-ups${mix === defaultMix ? ' (the default mix)' : ''}`,
      '',
      `${conversations.length} conversations, ${turns} turns per mode: CONTINUE ${share('CONTINUE')}, ROUTE ${share('ROUTE')}, HUMAN_HANDOFF ${share('HUMAN_HANDOFF')}, END_SESSION ${share('END_SESSION')}.`,
      '',
      '| mode | tokens/turn | classifier (llm.route_continuity) | router (llm.router) | cached | cost/turn | cost per 1,000 conversations | p50 ms | p95 ms | ROUTE p50 / p95 ms | CONTINUE p50 / p95 ms | router calls | bypassed | errors |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
      ...modes.map(({ name }) => {
        const s = summaries[name];
        return `| ${name} | ${round(s.tokens, 0)}${against(s.tokens, off.tokens)} | ${round(s.classifier_tokens, 0)} | ${round(s.router_tokens, 0)} | ${round(s.cached_tokens, 0)} | ${dollars(s.cost_per_turn, 6)}${against(s.cost_per_turn, off.cost_per_turn)} | ${dollars(s.cost_per_1000_conversations)} | ${round(s.overall.p50, 0)}${against(s.overall.p50, off.overall.p50)} | ${round(s.overall.p95, 0)}${against(s.overall.p95, off.overall.p95)} | ${round(s.route.p50, 0)} / ${round(s.route.p95, 0)}${against(s.route.p95, off.route.p95)} | ${round(s.continue.p50, 0)} / ${round(s.continue.p95, 0)} | ${s.router_calls} | ${s.bypassed} | ${s.errors} |`;
      }),
      '',
      "Latency per turn type (p50 / p95 / p99 ms), time from the request to the agent's answer (its first token: the agent call does not stream) and the speculative agent start (hit rate: drafts the agent run used, of those started; wasted: prompt tokens of cancelled drafts per turn, priced as input):",
      '',
      `| mode | overall | ${LABELS.join(' | ')} | agent first token | drafts | hit rate | wasted tokens/turn | wasted cost per 1,000 conversations |`,
      `|---|---|${LABELS.map(() => '---').join('|')}|---|---|---|---|---|`,
      ...modes.map(({ name }) => {
        const s = summaries[name];
        const triple = (d: { p50: number; p95: number; p99: number }) =>
          `${round(d.p50, 0)} / ${round(d.p95, 0)} / ${round(d.p99, 0)}`;
        return `| ${name} | ${triple(s.overall)} | ${LABELS.map((l) => triple(s.byLabel[l])).join(' | ')} | ${triple(s.first_token)} | ${s.speculated} | ${s.hit_rate === null ? '–' : `${Math.round(s.hit_rate * 100)}%`} | ${round(s.wasted_tokens, 0)} | ${dollars(s.wasted_cost_per_1000_conversations)} |`;
      }),
      '',
      'Saving attributed to stickiness (only bypassed turns without a router call, each against the same turn with stickiness off), against what the classifier cost on every turn:',
      '',
      '| mode | eligible turns | router tokens saved | router cost saved | classifier cost | net saving per 1,000 conversations |',
      '|---|---|---|---|---|---|',
      ...STICKY.filter((name) => modes.some((m) => m.name === name)).map((name) => {
        const a = attributed(select(name, mix), select('off', mix));
        return `| ${name} | ${a.turns} | ${a.routerTokens} | ${dollars(a.routerCost, 4)} | ${dollars(a.classifierCost, 4)} | ${dollars((a.net / conversations.length) * 1000)} |`;
      }),
      '',
    );
  }
  lines.push('![tokens and p95 of ROUTE turns per mode, default mix](stickiness.svg)', '');
  const defaults = Object.fromEntries(
    modes.map((m) => [m.name, summarize(select(m.name, defaultMix), mixes.get(defaultMix)?.length ?? 1)]),
  ) as Record<ModeName, ReturnType<typeof summarize>>;
  const reportPath = writeReport('stickiness.md', lines.join('\n'));
  writeReport(
    'stickiness.svg',
    barChartSvg(
      `Default mix (${Math.round(defaultMix * 100)}% follow-ups): tokens per turn and latency`,
      modes.map((m) => m.name),
      [
        { label: 'tokens/turn', color: '#4e79a7', values: modes.map((m) => defaults[m.name].tokens) },
        { label: 'p50 ms', color: '#59a14f', values: modes.map((m) => defaults[m.name].overall.p50) },
        { label: 'ROUTE p95 ms', color: '#e15759', values: modes.map((m) => defaults[m.name].route.p95) },
      ],
      'tokens / ms',
    ),
  );
  writeReport('raw/stickiness-turns.json', JSON.stringify(records, null, 1));
  for (const mix of shares) {
    const heading = lines.find((line) => line.startsWith(`## ${Math.round(mix * 100)}% follow-ups`)) ?? '';
    console.log(`\n${heading.slice(3)}\n${consoleTable(lines, heading)}`);
  }
  console.log(`report: ${reportPath}`);
}

runBench('bench:stickiness', main);
