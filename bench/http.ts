/**
 * npm run bench:http — the CPU the HTTP layer costs per request (parsing, helmet, logging, rate limit, auth,
 * validation, serialization, the error filter), measured with `process.cpuUsage()` of the server process while a
 * load generator in a child process sends the requests:
 *   - floor: a bare fastify server in the same process answering the same body (what any Node HTTP server pays);
 *   - refused: the channel endpoint answering 400 for an unknown agent_id: every layer, no workflow, no database;
 *   - turn: a whole turn over HTTP against the same turn called in-process (TurnService.handle); the difference is
 *     what the HTTP layer adds to a turn.
 * Options (env): DATABASE_URL (else embedded PGlite), BENCH_REQUESTS (default 4000), BENCH_TURNS (default 400),
 * BENCH_CONCURRENCY (default 8), BENCH_LOG_LEVEL (default silent: logging off).
 */
import { fork } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import fastify from 'fastify';
import { TurnService } from '@agent/workflow';
import { FakeLlmServer } from '../test/support/fake-llm';
import { scriptStages } from '../test/support/scripted-stages';
import { startTestApp } from '../test/support/test-app';
import type { LoadJob, LoadResult } from './http-load';
import {
  consoleTable,
  ensureDatabase,
  mean,
  percentile,
  pool,
  REPO_ROOT,
  round,
  runBench,
  writeReport,
} from './lib';

interface Measured {
  cpuMsPerRequest: number;
  perSecond: number;
  p50: number;
  p99: number;
  statuses: Record<string, number>;
  latenciesMs: number[];
  seconds: number;
}

/** Runs a load job from a child process and returns the server-side CPU per request (user + system). */
async function measure(job: LoadJob): Promise<Measured> {
  const child = fork(join(__dirname, 'http-load.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    await new Promise<void>((resolve) => {
      child.once('message', () => resolve());
      child.send({ job });
    });
    const before = process.cpuUsage();
    const result = await new Promise<LoadResult>((resolve, reject) => {
      child.once('message', (message: { result?: LoadResult; error?: string }) =>
        message.result ? resolve(message.result) : reject(new Error(message.error)),
      );
      child.send({ go: true });
    });
    const used = process.cpuUsage(before);
    return {
      cpuMsPerRequest: (used.user + used.system) / 1000 / job.count,
      perSecond: job.count / result.seconds,
      p50: percentile(result.latenciesMs, 50),
      p99: percentile(result.latenciesMs, 99),
      statuses: result.statuses,
      latenciesMs: result.latenciesMs,
      seconds: result.seconds,
    };
  } finally {
    child.kill();
  }
}

/** The same in-process work at the same concurrency: CPU per call. */
async function measureInProcess(count: number, concurrency: number, work: (i: number) => Promise<unknown>) {
  const before = process.cpuUsage();
  await pool(
    Array.from({ length: count }, (_, i) => i),
    concurrency,
    work,
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / count;
}

async function main(): Promise<void> {
  // Against a Postgres server when DATABASE_URL is set: its database is created when missing.
  if (process.env.DATABASE_URL) await ensureDatabase(process.env.DATABASE_URL);
  const requests = Number(process.env.BENCH_REQUESTS ?? '4000');
  const turns = Number(process.env.BENCH_TURNS ?? '400');
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? '8');
  const logLevel = process.env.BENCH_LOG_LEVEL ?? 'silent';
  const database = process.env.DATABASE_URL ? 'Postgres (DATABASE_URL)' : 'embedded PGlite';
  console.log(
    `bench:http — ${requests} requests, ${turns} turns, concurrency ${concurrency}, LOG_LEVEL=${logLevel}, database: ${database}`,
  );

  const channelKey = 'bench-channel-key-0001';
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${channelKey}` };
  const refusedBody = JSON.stringify({
    tenant_id: 'bench',
    agent_id: 'no_such_agent',
    session_id: 'bench-refused',
    text: 'minha fatura veio alta',
    metadata: { channel: 'web', locale: 'pt-BR' },
  });

  // Floor: fastify with its defaults, parsing the body and answering a small JSON.
  const floorServer = fastify();
  floorServer.post('/v1/channels/:channel/messages', (request, reply) =>
    reply.code(400).send({ error: { code: 'X', message: 'x' }, request_id: String(request.id) }),
  );
  await floorServer.listen({ port: 0, host: '127.0.0.1' });
  const floorAddress = floorServer.server.address();
  const floorPort = typeof floorAddress === 'object' && floorAddress ? floorAddress.port : 0;

  const fake = await FakeLlmServer.start();
  scriptStages(fake, {});
  const app = await startTestApp({
    fakeLlm: fake,
    env: {
      NODE_ENV: 'production',
      LOG_LEVEL: logLevel,
      CHANNEL_API_KEYS: `bench:${channelKey}`,
      RATE_LIMIT_PER_MINUTE: '1000000',
      LLM_PROFILES_PATH: join(REPO_ROOT, 'bench', 'config', 'llm_profiles.yaml'),
      TURN_LOCK_TIMEOUT_MS: '60000',
      RAG_INGEST_ON_START: 'false',
    },
  });
  const tag = `http${Date.now().toString(36)}`;
  // Over HTTP and in-process each run on their own 40 conversations, so both see the same history lengths.
  const turnBody = (set: string, i: number) => ({
    tenant_id: 'bench',
    agent_id: 'telecom_contas',
    session_id: `${tag}-${set}-${i % 40}`,
    text: `minha fatura ${i}`,
  });
  try {
    const job = (url: string, bodies: string[], count: number): LoadJob => ({
      url,
      method: 'POST',
      headers,
      bodies,
      count,
      concurrency,
    });
    const warm = Math.min(500, requests);
    await measure(job(`http://127.0.0.1:${floorPort}/v1/channels/web/messages`, [refusedBody], warm));
    const floor = await measure(
      job(`http://127.0.0.1:${floorPort}/v1/channels/web/messages`, [refusedBody], requests),
    );
    await measure(job(`${app.baseUrl}/v1/channels/web/messages`, [refusedBody], warm));
    const refused = await measure(job(`${app.baseUrl}/v1/channels/web/messages`, [refusedBody], requests));

    // Turns: warm both paths, then alternate rounds over HTTP and in-process, so both see the same conditions
    // (history lengths, JIT, garbage collection, the machine's load) and only the HTTP layer differs.
    const service = app.app.get(TurnService);
    const inProcess = (set: string, from: number, count: number) =>
      measureInProcess(count, concurrency, (i) =>
        service.handle({
          request_id: `${tag}-${set}-${from + i}`,
          channel: 'web',
          ...turnBody(set, from + i),
        }),
      );
    const overHttpBodies = (set: string, from: number, count: number) =>
      Array.from({ length: count }, (_, i) => JSON.stringify(turnBody(set, from + i)));
    await measure(job(`${app.baseUrl}/v1/channels/web/messages`, overHttpBodies('warm', 0, 40), 40));
    await inProcess('warm-direct', 0, 40);
    const rounds = 5;
    const perRound = Math.ceil(turns / rounds);
    const httpRounds: Measured[] = [];
    let directCpu = 0;
    for (let r = 0; r < rounds; r++) {
      const from = r * perRound;
      httpRounds.push(
        await measure(
          job(`${app.baseUrl}/v1/channels/web/messages`, overHttpBodies('h', from, perRound), perRound),
        ),
      );
      directCpu += (await inProcess('d', from, perRound)) * perRound;
    }
    const overHttp: Measured = {
      cpuMsPerRequest: mean(httpRounds.map((m) => m.cpuMsPerRequest)),
      perSecond: (perRound * rounds) / httpRounds.reduce((sum, m) => sum + m.seconds, 0),
      p50: percentile(
        httpRounds.flatMap((m) => m.latenciesMs),
        50,
      ),
      p99: percentile(
        httpRounds.flatMap((m) => m.latenciesMs),
        99,
      ),
      latenciesMs: [],
      seconds: 0,
      statuses: httpRounds.reduce<Record<string, number>>((all, m) => {
        for (const [status, n] of Object.entries(m.statuses)) all[status] = (all[status] ?? 0) + n;
        return all;
      }, {}),
    };
    const direct = directCpu / (perRound * rounds);
    const statuses = (m: Measured) =>
      Object.entries(m.statuses)
        .map(([status, n]) => `${n}×${status}`)
        .join(' ');

    const lines = [
      '# HTTP layer benchmark',
      '',
      `Run: ${new Date().toISOString()} · Node ${process.version} · database: ${database} · concurrency ${concurrency} · LOG_LEVEL=${logLevel} · auth on (one channel key)`,
      '',
      'Server CPU (user + system, `process.cpuUsage()` of the server process) per request; the load comes from a child process.',
      '',
      '| path | requests | CPU ms / request | requests/s | p50 ms | p99 ms | statuses |',
      '|---|---|---|---|---|---|---|',
      `| floor: bare fastify, same body | ${requests} | ${round(floor.cpuMsPerRequest, 3)} | ${round(floor.perSecond, 0)} | ${round(floor.p50, 2)} | ${round(floor.p99, 2)} | ${statuses(floor)} |`,
      `| refused (400 unknown agent_id): every HTTP layer, no workflow | ${requests} | ${round(refused.cpuMsPerRequest, 3)} | ${round(refused.perSecond, 0)} | ${round(refused.p50, 2)} | ${round(refused.p99, 2)} | ${statuses(refused)} |`,
      `| turn over HTTP (5 rounds, alternating with in-process) | ${perRound * rounds} | ${round(overHttp.cpuMsPerRequest, 2)} | ${round(overHttp.perSecond, 0)} | ${round(overHttp.p50, 1)} | ${round(overHttp.p99, 1)} | ${statuses(overHttp)} |`,
      `| turn in-process (TurnService.handle) | ${perRound * rounds} | ${round(direct, 2)} | | | | |`,
      '',
      `HTTP layer above the floor, refused request: **${round(refused.cpuMsPerRequest - floor.cpuMsPerRequest, 3)} ms CPU**.`,
      `HTTP layer of a turn (over HTTP − in-process): **${round(overHttp.cpuMsPerRequest - direct, 2)} ms CPU** (noisier: a turn's own CPU varies by more than this).`,
      '',
      `Machine load average when the run ended (as uptime shows it): ${loadavg()
        .map((l) => l.toFixed(2))
        .join(', ')}.`,
      '',
      'Reproduce: `DATABASE_URL=postgres://... npm run bench:http`.',
      '',
    ];
    const path = writeReport('http.md', lines.join('\n'));
    console.log(consoleTable(lines));
    console.log(`report: ${path}`);
  } finally {
    await app.close();
    await fake.stop();
    await floorServer.close();
  }
}

runBench('bench:http', main);
