/**
 * npm run bench:stickiness — the same scripted conversation set with
 * stickiness off, on (sequential: classifier then router) and on (speculative: router's LLM stage in parallel).
 * Options (env): BENCH_SCALE (latency multiplier, default 1), BENCH_CONCURRENCY (conversations in flight, default 6),
 * BENCH_LATENCY_<PROFILE>=median:p95 (ms), DATABASE_URL (else embedded Postgres).
 */
import { join } from 'node:path';
import { FakeLlmServer } from '../test/support/fake-llm';
import { startTestApp } from '../test/support/test-app';
import { BENCH_CONVERSATIONS, ContinuityLabel, scriptIndex, ScriptedConversation } from './conversations';
import {
  barChartSvg,
  consoleTable,
  llmCalls,
  mean,
  percentile,
  pool,
  REPO_ROOT,
  round,
  writeReport,
} from './lib';
import { latencyProfiles, scriptFakeLlm } from './scripted-llm';

interface Mode {
  name: 'off' | 'sequential' | 'speculative' | 'adaptive';
  env: Record<string, string>;
}

const MODES: Mode[] = [
  { name: 'off', env: { ENABLE_ROUTE_STICKINESS: 'false' } },
  { name: 'sequential', env: { ENABLE_ROUTE_STICKINESS: 'true', ROUTE_STICKINESS_STRATEGY: 'sequential' } },
  { name: 'speculative', env: { ENABLE_ROUTE_STICKINESS: 'true', ROUTE_STICKINESS_STRATEGY: 'speculative' } },
  { name: 'adaptive', env: { ENABLE_ROUTE_STICKINESS: 'true', ROUTE_STICKINESS_STRATEGY: 'adaptive' } },
];

interface TurnRecord {
  mode: Mode['name'];
  conversation: string;
  conversation_id: string;
  index: number;
  turn: number;
  label: ContinuityLabel;
  status: number;
  latency_ms: number;
  route: string;
  method: string;
  route_bypassed: boolean;
  continuity_decision: string | null;
  continuity_latency_ms: number | null;
  router_calls: number;
  tokens: Record<string, number>;
}

interface TurnResponseBody {
  turn?: number;
  route?: string;
  route_bypassed?: boolean;
  route_decision?: { method?: string };
  continuity_signal?: { decision?: string; latency_ms?: number } | null;
}

async function runMode(
  mode: Mode,
  conversations: ScriptedConversation[],
  runTag: string,
  scale: number,
  concurrency: number,
) {
  const fake = await FakeLlmServer.start();
  scriptFakeLlm(fake, scriptIndex(conversations), latencyProfiles(scale));
  const app = await startTestApp({
    fakeLlm: fake,
    env: {
      ...mode.env,
      LLM_PROFILES_PATH: join(REPO_ROOT, 'bench', 'config', 'llm_profiles.yaml'),
      TURN_LOCK_TIMEOUT_MS: '60000',
    },
  });
  const started = performance.now();
  try {
    const perConversation = await pool(conversations, concurrency, async (conversation) => {
      const sessionId = `${runTag}-${mode.name}-${conversation.id}`;
      const records: TurnRecord[] = [];
      for (const [index, scripted] of conversation.turns.entries()) {
        const t0 = performance.now();
        const res = await app.post<TurnResponseBody>('/v1/channels/web/messages', {
          tenant_id: 'bench',
          agent_id: conversation.agentId,
          session_id: sessionId,
          text: scripted.text,
        });
        records.push({
          mode: mode.name,
          conversation: sessionId,
          conversation_id: conversation.id,
          index,
          turn: res.body.turn ?? index + 1,
          label: scripted.label,
          status: res.status,
          latency_ms: performance.now() - t0,
          route: res.body.route ?? '',
          method: res.body.route_decision?.method ?? '',
          route_bypassed: res.body.route_bypassed === true,
          continuity_decision: res.body.continuity_signal?.decision ?? null,
          continuity_latency_ms: res.body.continuity_signal?.latency_ms ?? null,
          router_calls: 0,
          tokens: {},
        });
      }
      return records;
    });
    const wallMs = performance.now() - started;
    const records = perConversation.flat();
    const calls = await llmCalls(
      app.dataSource,
      records.map((r) => `bench:${r.conversation}`).filter((v, i, a) => a.indexOf(v) === i),
    );
    for (const record of records) {
      for (const call of calls.filter(
        (c) => c.conversation_key === `bench:${record.conversation}` && c.turn === record.turn,
      )) {
        if (call.profile === 'router') record.router_calls++;
        record.tokens[call.profile] =
          (record.tokens[call.profile] ?? 0) + call.prompt_tokens + call.completion_tokens;
      }
    }
    return { records, wallMs };
  } finally {
    await app.close();
    await fake.stop();
  }
}

function summarize(records: TurnRecord[]) {
  const latencies = records.map((r) => r.latency_ms);
  const profiles = [...new Set(records.flatMap((r) => Object.keys(r.tokens)))].sort();
  return {
    turns: records.length,
    errors: records.filter((r) => r.status !== 200).length,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
    mean: mean(latencies),
    router_calls: records.reduce((n, r) => n + r.router_calls, 0),
    bypassed: records.filter((r) => r.route_bypassed).length,
    bypassed_without_router: records.filter((r) => r.route_bypassed && r.router_calls === 0).length,
    methods: countBy(records.map((r) => r.method || 'none')),
    tokens_per_turn: Object.fromEntries(profiles.map((p) => [p, mean(records.map((r) => r.tokens[p] ?? 0))])),
    continuity_latency_p50: percentile(
      records.flatMap((r) => (r.continuity_latency_ms === null ? [] : [r.continuity_latency_ms])),
      50,
    ),
  };
}

/** "−12%": how far `value` is below (or above) `reference`. */
function percentAgainst(value: number, reference: number): string {
  const change = Math.round(((value - reference) / reference) * 100);
  return `${change <= 0 ? '−' : '+'}${Math.abs(change)}%`;
}

function countBy(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1;
  return counts;
}

/** Savings attributed by the attribution rule (docs/architecture.md): only turns with route_bypassed=true and no llm.router call, paired with "off". */
function attributedSavings(on: TurnRecord[], off: TurnRecord[]) {
  const offByKey = new Map(off.map((r) => [`${r.conversation_id}#${r.index}`, r]));
  let turns = 0;
  let latency = 0;
  let routerTokens = 0;
  for (const record of on) {
    if (!record.route_bypassed || record.router_calls > 0) continue;
    const twin = offByKey.get(`${record.conversation_id}#${record.index}`);
    if (!twin) continue;
    turns++;
    latency += twin.latency_ms - record.latency_ms;
    routerTokens += twin.tokens.router ?? 0;
  }
  return {
    turns,
    latency_ms_total: latency,
    latency_ms_per_turn: turns ? latency / turns : 0,
    router_tokens_saved: routerTokens,
  };
}

async function main(): Promise<void> {
  const scale = Number(process.env.BENCH_SCALE ?? '1');
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? '6');
  const conversations = BENCH_CONVERSATIONS;
  const runTag = `run${Date.now().toString(36)}`;
  const totalTurns = conversations.reduce((n, c) => n + c.turns.length, 0);
  console.log(
    `bench:stickiness — ${conversations.length} conversations, ${totalTurns} turns per mode, latency scale ${scale}, concurrency ${concurrency}`,
  );
  console.log(
    'The LLM is scripted (test/support/fake-llm): it answers from the labels with the assumed latency per profile.',
  );
  const results: Record<string, { records: TurnRecord[]; wallMs: number }> = {};
  for (const mode of MODES) {
    console.log(`running mode ${mode.name} ...`);
    results[mode.name] = await runMode(mode, conversations, runTag, scale, concurrency);
  }
  const summaries = Object.fromEntries(MODES.map((m) => [m.name, summarize(results[m.name].records)]));
  const savings = {
    sequential: attributedSavings(results.sequential.records, results.off.records),
    speculative: attributedSavings(results.speculative.records, results.off.records),
    adaptive: attributedSavings(results.adaptive.records, results.off.records),
  };
  const latencies = latencyProfiles(scale);
  const lines: string[] = [
    '# Stickiness benchmark',
    '',
    `Run: ${new Date().toISOString()} · ${conversations.length} conversations · ${totalTurns} turns per mode · database: ${process.env.DATABASE_URL ? 'Postgres (DATABASE_URL)' : 'embedded PGlite'} · concurrency ${concurrency}`,
    '',
    'The LLM is **scripted** (the fake OpenAI-compatible server of `test/support/fake-llm.ts`): every stage answers from the conversation labels after a latency drawn from a log-normal distribution per profile (median / p95 below, ms; assumptions, not measurements of a real model). The numbers measure what the runtime does with those latencies: which stages run, in which order, and what that costs.',
    '',
    '| profile | median ms | p95 ms |',
    '|---|---|---|',
    ...Object.entries(latencies).map(([p, l]) => `| ${p} | ${round(l.median, 0)} | ${round(l.p95, 0)} |`),
    '',
    '## Summary per mode',
    '',
    '| mode | turns | errors | p50 ms | p95 ms | p99 ms | mean ms | router LLM calls | bypassed turns | bypassed without router call |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...MODES.map((m) => {
      const s = summaries[m.name];
      return `| ${m.name} | ${s.turns} | ${s.errors} | ${round(s.p50, 0)} | ${round(s.p95, 0)} | ${round(s.p99, 0)} | ${round(s.mean, 0)} | ${s.router_calls} | ${s.bypassed} | ${s.bypassed_without_router} |`;
    }),
    '',
    `p50 against stickiness off: sequential ${percentAgainst(summaries.sequential.p50, summaries.off.p50)}, speculative ${percentAgainst(summaries.speculative.p50, summaries.off.p50)}.`,
    '',
    `Router LLM calls avoided vs off: sequential ${summaries.off.router_calls - summaries.sequential.router_calls}, speculative ${summaries.off.router_calls - summaries.speculative.router_calls} (speculative starts the router with the classifier and discards it on CONTINUE/HANDOFF/END, so it pays the router's tokens on every turn the keyword stage does not settle).`,
    '',
    '## Tokens per turn by profile',
    '',
    `| mode | ${[...new Set(Object.values(summaries).flatMap((s) => Object.keys(s.tokens_per_turn)))].sort().join(' | ')} |`,
    `|---|${[...new Set(Object.values(summaries).flatMap((s) => Object.keys(s.tokens_per_turn)))].map(() => '---').join('|')}|`,
    ...MODES.map((m) => {
      const profiles = [
        ...new Set(Object.values(summaries).flatMap((s) => Object.keys(s.tokens_per_turn))),
      ].sort();
      return `| ${m.name} | ${profiles.map((p) => round(summaries[m.name].tokens_per_turn[p] ?? 0, 1)).join(' | ')} |`;
    }),
    '',
    '## Routing methods',
    '',
    '| mode | methods |',
    '|---|---|',
    ...MODES.map(
      (m) =>
        `| ${m.name} | ${Object.entries(summaries[m.name].methods)
          .map(([k, v]) => `${k}: ${v}`)
          .join(', ')} |`,
    ),
    '',
    '## Savings attributed to stickiness (only bypassed turns without a router call)',
    '',
    'Only turns with `route_bypassed=true` and no `llm.router` call count; each is compared with the same turn of the same conversation in the "off" run.',
    '',
    '| mode | eligible turns | latency saved per turn ms | latency saved total ms | router tokens saved |',
    '|---|---|---|---|---|',
    ...(['sequential', 'speculative', 'adaptive'] as const).map(
      (m) =>
        `| ${m} | ${savings[m].turns} | ${round(savings[m].latency_ms_per_turn, 0)} | ${round(savings[m].latency_ms_total, 0)} | ${savings[m].router_tokens_saved} |`,
    ),
    '',
    `Classifier latency p50 (continuity_signal.latency_ms): sequential ${round(summaries.sequential.continuity_latency_p50, 0)} ms, speculative ${round(summaries.speculative.continuity_latency_p50, 0)} ms.`,
    '',
    '![latency per mode](stickiness.svg)',
    '',
    'Reproduce: `npm run bench:stickiness` (set `DATABASE_URL` for real Postgres; `BENCH_SCALE=0.2` for a quick run). Raw per-turn records: `raw/stickiness-turns.json` next to the report (not committed).',
    '',
  ];
  const reportPath = writeReport('stickiness.md', lines.join('\n'));
  writeReport(
    'stickiness.svg',
    barChartSvg(
      'Turn latency by mode (scripted LLM)',
      MODES.map((m) => m.name),
      [
        { label: 'p50', color: '#4e79a7', values: MODES.map((m) => summaries[m.name].p50) },
        { label: 'p95', color: '#f28e2b', values: MODES.map((m) => summaries[m.name].p95) },
        { label: 'p99', color: '#e15759', values: MODES.map((m) => summaries[m.name].p99) },
      ],
      'ms',
    ),
  );
  writeReport(
    'raw/stickiness-turns.json',
    JSON.stringify(
      Object.values(results).flatMap((r) => r.records),
      null,
      1,
    ),
  );
  console.log(consoleTable(lines, '## Summary per mode'));
  console.log(`report: ${reportPath}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
