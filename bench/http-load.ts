/**
 * The load generator of bench:http, run as a child process so its CPU is not counted as the server's.
 * Receives a LoadJob over IPC, answers 'ready', runs it on 'go' and reports a LoadResult.
 */
import { Agent, request } from 'node:http';

export interface LoadJob {
  url: string;
  method: string;
  headers: Record<string, string>;
  /** One body per request (cycled), already serialized. */
  bodies: string[];
  count: number;
  concurrency: number;
}

export interface LoadResult {
  statuses: Record<string, number>;
  seconds: number;
  latenciesMs: number[];
}

function send(agent: Agent, job: LoadJob, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      job.url,
      {
        method: job.method,
        agent,
        headers: { ...job.headers, ...(body ? { 'content-length': Buffer.byteLength(body) } : {}) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body || undefined);
  });
}

async function run(job: LoadJob): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: job.concurrency });
  const statuses: Record<string, number> = {};
  const latenciesMs: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: job.concurrency }, async () => {
      while (next < job.count) {
        const index = next++;
        const t0 = performance.now();
        const status = await send(agent, job, job.bodies[index % job.bodies.length]);
        latenciesMs.push(performance.now() - t0);
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  return { statuses, seconds, latenciesMs };
}

let job: LoadJob | null = null;
process.on('message', (message: { job?: LoadJob; go?: boolean }) => {
  if (message.job) {
    job = message.job;
    process.send?.({ ready: true });
  } else if (message.go && job) {
    run(job).then(
      (result) => process.send?.({ result }),
      (error: unknown) => process.send?.({ error: String(error) }),
    );
  }
});
