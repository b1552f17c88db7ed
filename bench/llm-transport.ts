/**
 * npm run bench:llm-transport — the client-side CPU of one model call. The scripted OpenAI-compatible server runs
 * in its own process and answers instantly; this process makes the same chat-completions call through each
 * client and measures its own CPU (user + system) per call, next to the floor: a plain `http` request with a
 * keep-alive agent, sending the same body and parsing the same answer.
 * Every client is measured in two rounds and the second is reported, so each runs with its code already compiled.
 * Options (env): BENCH_CALLS (calls per client and concurrency, default 2000), BENCH_CONCURRENCY (default 1,8).
 */
import { ChildProcess, fork } from 'node:child_process';
import { Agent, request } from 'node:http';
import { cpus, loadavg } from 'node:os';
import OpenAI from 'openai';
import { z } from 'zod';
import { confidenceSchema, LlmService, structuredOutput } from '@agent/llm';
import { FakeLlmServer } from '../test/support/fake-llm';
import { createTestLlm } from '../test/support/test-llm';
import { consoleTable, percentile, round, writeReport } from './lib';

const ANSWER = { decision: 'CONTINUE', confidence: 0.95, reason: 'the user follows up on the plan' };
const MESSAGES = [
  {
    role: 'system' as const,
    content: 'You classify whether a message continues the active topic. '.repeat(12),
  },
  { role: 'user' as const, content: JSON.stringify({ message: 'e o roaming do plano?', history: [] }) },
];
const PROFILE = 'route_continuity';
const TIMEOUT_MS = 5000;
const verdict = structuredOutput(
  'bench_verdict',
  z.object({ decision: z.string(), confidence: confidenceSchema, reason: z.string().nullish() }),
);

type Call = () => Promise<unknown>;

interface Client {
  name: string;
  call: Call;
}

interface Measurement {
  client: string;
  concurrency: number;
  calls: number;
  cpuUsPerCall: number;
  p50Ms: number;
  p99Ms: number;
  callsPerSecond: number;
}

if (process.argv.includes('--serve')) {
  void serve();
} else {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}

/** The scripted server, alone in this child process. */
async function serve(): Promise<void> {
  const fake = await FakeLlmServer.start();
  fake.setFallback({ json: ANSWER, usage: { prompt_tokens: 200, completion_tokens: 20 } });
  // The server keeps every request for tests; a benchmark only needs the answers.
  setInterval(() => (fake.requests.length = 0), 500).unref();
  // The parent's end (normal or not) closes the channel: the server goes with it.
  process.on('disconnect', () => void fake.stop().then(() => process.exit(0)));
  process.send?.({ baseUrl: fake.baseUrl });
}

function startServer(): Promise<{ child: ChildProcess; baseUrl: string }> {
  const child = fork(__filename, ['--serve'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('message', (message: { baseUrl: string }) => resolve({ child, baseUrl: message.baseUrl }));
  });
}

/** The floor: one keep-alive `http` request with the same body, the answer read and parsed. */
function plainHttp(baseUrl: string): Client {
  const url = new URL(`${baseUrl}/chat/completions`);
  const agent = new Agent({ keepAlive: true });
  const body = JSON.stringify({ model: PROFILE, messages: MESSAGES, temperature: 0, max_tokens: 80 });
  const call = () =>
    new Promise<unknown>((resolve, reject) => {
      const req = request(
        url,
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', authorization: 'Bearer bench' },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  return { name: 'plain http (keep-alive agent)', call };
}

/** The SDK as the service used it before: default client, a timeout signal allocated per call. */
function sdkPerCallSignal(baseUrl: string): Client {
  const client = new OpenAI({ baseURL: baseUrl, apiKey: 'bench', maxRetries: 0 });
  const call = () =>
    client.chat.completions.create(
      {
        model: PROFILE,
        messages: MESSAGES,
        temperature: 0,
        max_tokens: 80,
        response_format: { type: 'json_object' },
      },
      { timeout: TIMEOUT_MS, maxRetries: 0, signal: AbortSignal.timeout(TIMEOUT_MS) },
    );
  return { name: 'openai SDK, per-call AbortSignal.timeout (before)', call };
}

function service(llm: LlmService): Client[] {
  return [
    {
      name: 'LlmService.chat (now)',
      call: () => llm.chat({ profile: PROFILE, messages: MESSAGES }),
    },
    {
      name: 'LlmService.structured (now, with parse and validation)',
      call: () => llm.structured({ profile: PROFILE, messages: MESSAGES, output: verdict }),
    },
  ];
}

async function measure(client: Client, calls: number, concurrency: number): Promise<Measurement> {
  const latencies: number[] = [];
  const run = async (count: number, record: boolean) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next++ < count) {
          const started = performance.now();
          await client.call();
          if (record) latencies.push(performance.now() - started);
        }
      }),
    );
  };
  await run(Math.min(300, calls), false);
  global.gc?.();
  const cpu = process.cpuUsage();
  const started = performance.now();
  await run(calls, true);
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return {
    client: client.name,
    concurrency,
    calls,
    cpuUsPerCall: (used.user + used.system) / calls,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    callsPerSecond: calls / (wallMs / 1000),
  };
}

async function main(): Promise<void> {
  const calls = Number(process.env.BENCH_CALLS ?? '2000');
  const concurrencies = (process.env.BENCH_CONCURRENCY ?? '1,8').split(',').map(Number);
  const load = loadavg().map((v) => v.toFixed(2));
  console.log(
    `bench:llm-transport — ${calls} calls per client and concurrency (${concurrencies.join(', ')}), ` +
      `node ${process.version}, ${cpus().length} cores, load ${load.join(' ')}`,
  );
  const { child, baseUrl } = await startServer();
  let results: Measurement[] = [];
  let floorClient = '';
  try {
    const { llm } = createTestLlm(null, { LLM_BASE_URL: baseUrl });
    const clients = [plainHttp(baseUrl), sdkPerCallSignal(baseUrl), ...service(llm)];
    floorClient = clients[0].name;
    try {
      for (let round = 0; round < 2; round++) {
        results = [];
        for (const concurrency of concurrencies) {
          for (const client of clients) results.push(await measure(client, calls, concurrency));
        }
      }
    } finally {
      llm.onApplicationShutdown();
    }
  } finally {
    child.kill();
  }
  const floor = new Map(results.filter((r) => r.client === floorClient).map((r) => [r.concurrency, r]));
  const report = [
    '# LLM transport: client CPU per call',
    '',
    `Node ${process.version}, ${cpus().length} cores, load average ${load.join(' ')} at the start. The scripted`,
    'server runs in its own process and answers at once, so what is measured is the client side only: this',
    `process's CPU (user + system) per call over ${calls} calls after a warm-up, second of two rounds. Reproduce with`,
    '`npm run bench:llm-transport`.',
    '',
    '| client | in flight | CPU µs per call | × floor | p50 ms | p99 ms | calls/s |',
    '|---|---|---|---|---|---|---|',
    ...results.map((r) => {
      const base = floor.get(r.concurrency)?.cpuUsPerCall ?? r.cpuUsPerCall;
      return `| ${r.client} | ${r.concurrency} | ${Math.round(r.cpuUsPerCall)} | ${round(r.cpuUsPerCall / base, 2)} | ${round(r.p50Ms, 2)} | ${round(r.p99Ms, 2)} | ${Math.round(r.callsPerSecond)} |`;
    }),
    '',
  ];
  console.log(consoleTable(report));
  console.log(`report: ${writeReport('llm-transport.md', report.join('\n'))}`);
}
