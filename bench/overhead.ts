/**
 * npm run bench:overhead — the framework's own cost per turn with an instant LLM: turns per second and p50/p99
 * per turn over HTTP, the split per node, and beside it the database floor (load plus commit of a checkpoint alone).
 * Options (env): DATABASE_URL (real Postgres; else embedded PGlite, reported as such), BENCH_TURNS (default 400),
 * BENCH_CONCURRENCY (default 8).
 */
import { join } from 'node:path';
import { CheckpointService } from '@agent/checkpoint';
import { FakeLlmServer } from '../test/support/fake-llm';
import { startTestApp } from '../test/support/test-app';
import { consoleTable, mean, percentile, pool, REPO_ROOT, round, writeReport } from './lib';

async function main(): Promise<void> {
  const turns = Number(process.env.BENCH_TURNS ?? '400');
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? '8');
  const conversations = 40;
  const database = process.env.DATABASE_URL
    ? 'Postgres (DATABASE_URL)'
    : 'embedded PGlite (set DATABASE_URL for real Postgres)';
  console.log(
    `bench:overhead — ${turns} turns, ${conversations} conversations, concurrency ${concurrency}, database: ${database}`,
  );
  console.log('The LLM is scripted and instant (test/support/fake-llm): what remains is the runtime itself.');
  const fake = await FakeLlmServer.start();
  fake.script({
    model: 'agent',
    reply: { content: 'ok', usage: { prompt_tokens: 1, completion_tokens: 1 } },
  });
  fake.script({
    model: 'router',
    reply: { json: { intent: 'billing_invoice_explanation', confidence: 0.9 } },
  });
  fake.script({
    model: 'route_continuity',
    reply: { json: { decision: 'ROUTE', confidence: 0.95, reason: 'bench' } },
  });
  fake.script({
    model: 'guardrail',
    reply: { json: { verdict: 'allow', confidence: 0.99, reason: 'bench' } },
  });
  fake.script({ model: 'judge', reply: { json: { score: 1, passed: true, reason: 'bench' } } });
  fake.setFallback({ json: {} });
  const app = await startTestApp({
    fakeLlm: fake,
    env: {
      LLM_PROFILES_PATH: join(REPO_ROOT, 'bench', 'config', 'llm_profiles.yaml'),
      TURN_LOCK_TIMEOUT_MS: '60000',
    },
  });
  const tag = `ovh${Date.now().toString(36)}`;
  try {
    // Warm-up: connections, JIT, prepared paths.
    await pool(
      Array.from({ length: 20 }, (_, i) => i),
      4,
      (i) =>
        app.post('/v1/channels/web/messages', {
          tenant_id: 'bench',
          agent_id: 'telecom_contas',
          session_id: `${tag}-warm-${i % 4}`,
          text: 'fatura',
        }),
    );
    const latencies: number[] = [];
    const started = performance.now();
    await pool(
      Array.from({ length: turns }, (_, i) => i),
      concurrency,
      async (i) => {
        const t0 = performance.now();
        const res = await app.post('/v1/channels/web/messages', {
          tenant_id: 'bench',
          agent_id: 'telecom_contas',
          session_id: `${tag}-${i % conversations}`,
          text: `minha fatura ${i}`,
        });
        if (res.status !== 200) throw new Error(`turn failed with ${res.status}`);
        latencies.push(performance.now() - t0);
      },
    );
    const seconds = (performance.now() - started) / 1000;

    const rows: { payload: { nodes?: { node: string; duration_ms: number }[] } }[] =
      await app.dataSource.query(
        `SELECT payload FROM session_events WHERE name = 'AGENT_COMPLETED' AND conversation_key LIKE $1`,
        [`bench:${tag}-%`],
      );
    const perNode = new Map<string, number[]>();
    for (const row of rows) {
      for (const n of row.payload.nodes ?? []) {
        perNode.set(n.node, [...(perNode.get(n.node) ?? []), n.duration_ms]);
      }
    }

    // Database floor: the same lease + load + atomic commit, with no graph and no HTTP.
    const checkpoints = app.app.get(CheckpointService);
    const floor: number[] = [];
    const floorIterations = Math.min(300, turns);
    for (let i = 0; i < floorIterations; i++) {
      const key = `bench:${tag}-floor-${i % 20}`;
      const t0 = performance.now();
      const lease = await checkpoints.acquire({
        conversation_key: key,
        tenant_id: 'bench',
        session_id: key.slice(6),
        agent_id: 'telecom_contas',
      });
      try {
        const loaded = await checkpoints.loadLatest(key);
        await checkpoints.commit({
          identity: {
            conversation_key: key,
            tenant_id: 'bench',
            session_id: key.slice(6),
            agent_id: 'telecom_contas',
          },
          leaseToken: lease.token,
          parentVersion: loaded?.version ?? null,
          turn: lease.session.turn_count + 1,
          state: { ...(loaded?.state ?? {}), turn: lease.session.turn_count + 1, answer: 'ok' },
          status: 'active',
          events: [],
        });
      } finally {
        await lease.release();
      }
      floor.push(performance.now() - t0);
    }

    const lines = [
      '# Overhead benchmark',
      '',
      `Run: ${new Date().toISOString()} · ${turns} turns over HTTP · ${conversations} conversations · concurrency ${concurrency} · database: ${database} · Node ${process.version} · 2 cores`,
      '',
      "The LLM is scripted and answers instantly, so this is the runtime's own cost: HTTP, validation, lease, checkpoint load, the graph, events, the atomic commit.",
      '',
      '| measure | value |',
      '|---|---|',
      `| turns per second | ${round(turns / seconds, 1)} |`,
      `| p50 per turn | ${round(percentile(latencies, 50), 1)} ms |`,
      `| p99 per turn | ${round(percentile(latencies, 99), 1)} ms |`,
      `| mean per turn | ${round(mean(latencies), 1)} ms |`,
      `| database floor p50 (lease + load + commit, no graph) | ${round(percentile(floor, 50), 1)} ms |`,
      `| database floor p99 | ${round(percentile(floor, 99), 1)} ms |`,
      '',
      '## Split per node (inside the graph; the commit happens after it)',
      '',
      '| node | calls | p50 ms | p99 ms | mean ms |',
      '|---|---|---|---|---|',
      ...[...perNode.entries()].map(
        ([node, values]) =>
          `| ${node} | ${values.length} | ${round(percentile(values, 50), 2)} | ${round(percentile(values, 99), 2)} | ${round(mean(values), 2)} |`,
      ),
      '',
      'Reproduce: `DATABASE_URL=postgres://... npm run bench:overhead`.',
      '',
    ];
    const path = writeReport('overhead.md', lines.join('\n'));
    console.log(consoleTable(lines));
    console.log(`report: ${path}`);
  } finally {
    await app.close();
    await fake.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
