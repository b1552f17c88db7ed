/**
 * Preloaded into the service by bench:overhead (`node -r dist/bench/query-counter.js ...`). Measurement only,
 * it changes nothing the service does:
 * - counts the SQL statements the service sends through `pg` (each one is a round trip) and the transactions
 *   they form;
 * - on request, samples the service's CPU with the V8 profiler (in-process inspector session) so the bench can
 *   split the CPU of a turn by area.
 * Both are reported over IPC.
 */
import { Session } from 'node:inspector';
import { Client } from 'pg';

export interface QueryCounts {
  /** Every statement sent, BEGIN and COMMIT included: each is one round trip with node-postgres. */
  statements: number;
  /** Explicit transactions (BEGIN … COMMIT) that committed. */
  explicitCommits: number;
  /** Statements run outside an explicit transaction: each is its own (auto-committed) transaction. */
  autocommits: number;
  rollbacks: number;
}

const counts: QueryCounts = { statements: 0, explicitCommits: 0, autocommits: 0, rollbacks: 0 };
const inTransaction = new WeakSet<object>();

function sqlText(arg: unknown): string {
  if (typeof arg === 'string') return arg;
  if (typeof arg === 'object' && arg !== null && 'text' in arg && typeof arg.text === 'string') {
    return arg.text;
  }
  return '';
}

function count(client: object, sql: string): void {
  counts.statements++;
  if (/^\s*(BEGIN|START TRANSACTION)\b/i.test(sql)) inTransaction.add(client);
  else if (/^\s*COMMIT\b/i.test(sql)) {
    inTransaction.delete(client);
    counts.explicitCommits++;
  } else if (/^\s*ROLLBACK\b/i.test(sql)) {
    inTransaction.delete(client);
    counts.rollbacks++;
  } else if (!inTransaction.has(client)) counts.autocommits++;
}

const prototype: { query: (this: object, ...args: unknown[]) => unknown } = Client.prototype;
const query = prototype.query;
prototype.query = function countedQuery(this: object, ...args: unknown[]): unknown {
  count(this, sqlText(args[0]));
  return query.apply(this, args);
};

let profiler: Session | null = null;

function post(session: Session, method: string, params: object = {}): Promise<object> {
  return new Promise((resolve, reject) =>
    session.post(method, params, (error, result) => (error ? reject(error) : resolve(result ?? {}))),
  );
}

async function startProfile(): Promise<void> {
  profiler = new Session();
  profiler.connect();
  await post(profiler, 'Profiler.enable');
  await post(profiler, 'Profiler.setSamplingInterval', { interval: 200 });
  await post(profiler, 'Profiler.start');
}

async function stopProfile(): Promise<unknown> {
  if (!profiler) return null;
  const result = await post(profiler, 'Profiler.stop');
  profiler.disconnect();
  profiler = null;
  return 'profile' in result ? result.profile : null;
}

process.on('message', (message: unknown) => {
  if (message === 'query-counts') process.send?.({ queryCounts: { ...counts } });
  if (message === 'profile-start') void startProfile().then(() => process.send?.({ profiling: true }));
  if (message === 'profile-stop') void stopProfile().then((profile) => process.send?.({ profile }));
});
