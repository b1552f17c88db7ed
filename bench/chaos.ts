/**
 * npm run chaos — the operator's failover drill, against the compiled service in production mode.
 *
 * It starts a Postgres cluster of its own (initdb and pg_ctl in a temporary directory, on its own port), two or
 * three replicas of the service on it with Redis and NATS behind proxies, the scripted model server and a NATS
 * consumer. Several clients send conversations, each message resent with the same message_id until a replica
 * answers 200. On a schedule the drill terminates the replicas' Postgres sessions every few hundred ms, restarts
 * Postgres (`pg_ctl restart -m fast`, then `-m immediate`), kills replicas with SIGKILL (and starts them again),
 * and black-holes Redis and NATS for a while. At the end it checks, from the database and the consumer: every
 * acknowledged turn stored exactly once, versions contiguous with no fork, every event received once and in
 * order, no replica exited unless killed. It prints the table and writes it to bench/results/chaos.md
 * (`-- --update-report`: bench/reports/chaos.md), the replicas' and Postgres' logs beside it in
 * bench/results/chaos-logs/. It exits non-zero when a check fails.
 *
 *   npm run chaos                   10 minutes: terminations every 300 ms, two restarts, three kills, 3 replicas
 *   npm run chaos -- --short        about a minute, for CI: the same faults once each (one kill), 2 replicas
 *
 * Options (env): CHAOS_DURATION_S, CHAOS_REPLICAS, CHAOS_CLIENTS, CHAOS_TERMINATE_EVERY_MS; CHAOS_PG_BIN (the
 * Postgres programs, else the newest /usr/lib/postgresql/<version>/bin); TEST_REDIS_URL and TEST_NATS_URL (the
 * shared servers, by default on 127.0.0.1; the drill uses names of its own on them).
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import { freePort } from '../test/support/app-process';
import { FakeLlmServer, GUARDRAILS_ALLOW } from '../test/support/fake-llm';
import { DurableReader, expectedEventIds, NATS_URL, ReceivedEvent } from '../test/support/nats';
import { TcpProxy } from '../test/support/tcp-proxy';
import {
  checkEvents,
  checkTurns,
  EventFindings,
  StoredMessage,
  StoredSession,
  StoredTurn,
  TurnFindings,
} from './chaos-checks';
import { Traffic } from './chaos-clients';
import { PrivatePostgres } from './chaos-postgres';
import { Replicas } from './chaos-replicas';
import { consoleTable, percentile, REPO_ROOT, round, writeReport } from './lib';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

type FaultKind = 'kill' | 'restart -m fast' | 'restart -m immediate' | 'Redis black hole' | 'NATS black hole';

interface PlannedFault {
  atS: number;
  kind: FaultKind;
  /** How long a black hole lasts. */
  forS?: number;
}

interface Profile {
  name: string;
  durationS: number;
  replicas: number;
  clients: number;
  terminateEveryMs: number;
  turnsPerConversation: number;
  /** How long the clients may keep resending their last message after the faults stop. */
  drainS: number;
  faults: PlannedFault[];
}

const FULL: Profile = {
  name: 'full',
  durationS: 600,
  replicas: 3,
  clients: 6,
  terminateEveryMs: 300,
  turnsPerConversation: 12,
  drainS: 90,
  faults: [
    { atS: 60, kind: 'kill' },
    { atS: 120, kind: 'restart -m fast' },
    { atS: 180, kind: 'Redis black hole', forS: 20 },
    { atS: 250, kind: 'kill' },
    { atS: 310, kind: 'NATS black hole', forS: 30 },
    { atS: 390, kind: 'restart -m immediate' },
    { atS: 460, kind: 'kill' },
  ],
};

const SHORT: Profile = {
  name: 'short',
  durationS: 45,
  replicas: 2,
  clients: 4,
  terminateEveryMs: 300,
  turnsPerConversation: 8,
  drainS: 45,
  faults: [
    { atS: 5, kind: 'kill' },
    { atS: 12, kind: 'restart -m fast' },
    { atS: 18, kind: 'Redis black hole', forS: 5 },
    { atS: 26, kind: 'restart -m immediate' },
    { atS: 32, kind: 'NATS black hole', forS: 6 },
  ],
};

function envNumber(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return process.env[name] && Number.isFinite(value) && value > 0 ? value : fallback;
}

/** The profile, with the env's overrides; a longer or shorter run spreads the same faults over its time. */
function chosenProfile(): Profile {
  const base = process.argv.includes('--short') ? SHORT : FULL;
  const durationS = envNumber('CHAOS_DURATION_S', base.durationS);
  const scale = durationS / base.durationS;
  return {
    ...base,
    durationS,
    replicas: envNumber('CHAOS_REPLICAS', base.replicas),
    clients: envNumber('CHAOS_CLIENTS', base.clients),
    terminateEveryMs: envNumber('CHAOS_TERMINATE_EVERY_MS', base.terminateEveryMs),
    faults: base.faults.map((fault) => ({ ...fault, atS: fault.atS * scale })),
  };
}

interface InjectedFault {
  kind: FaultKind;
  /** Seconds into the drill. */
  atS: number;
  detail: string;
  startedAt: number;
  endedAt: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

function log(line: string): void {
  process.stdout.write(`[chaos] ${line}\n`);
}

/**
 * Every few hundred ms, pg_terminate_backend on the replicas' sessions (their connections carry an application
 * name of the drill); a round during a restart finds no server and is skipped.
 */
async function terminateSessions(admin: Pool, everyMs: number, until: () => boolean): Promise<number> {
  let terminated = 0;
  while (!until()) {
    await sleep(everyMs);
    // In the select list: it runs on the rows the WHERE kept, never on the drill's own session.
    const result = await admin
      .query<{ terminated: boolean }>(
        `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
          WHERE application_name LIKE 'chaos-replica-%'`,
      )
      .catch(() => null);
    terminated += result?.rows.filter((row) => row.terminated).length ?? 0;
  }
  return terminated;
}

/**
 * After each fault: how long until every client had a turn acknowledged again (a kill also waits for the lapse of
 * the leases the killed replica held); null when some client never had one.
 */
function recoveryMs(fault: InjectedFault, traffic: Traffic, clients: number): number | null {
  let worst = 0;
  for (let client = 0; client < clients; client++) {
    const next = traffic.acknowledged.find((ack) => ack.client === client && ack.at > fault.endedAt);
    if (!next) return null;
    worst = Math.max(worst, next.at - fault.endedAt);
  }
  return worst;
}

async function storedRows(admin: Pool, tenant: string) {
  const [turns, messages, sessions] = await Promise.all([
    admin.query<StoredTurn>('SELECT conversation_key, version, turn FROM turn_log WHERE tenant_id = $1', [
      tenant,
    ]),
    admin.query<StoredMessage>(
      `SELECT conversation_key, message_id, turn FROM processed_messages WHERE conversation_key LIKE $1`,
      [`${tenant}:%`],
    ),
    admin.query<StoredSession>(
      'SELECT conversation_key, head_version, turn_count FROM sessions WHERE tenant_id = $1',
      [tenant],
    ),
  ]);
  return { turns: turns.rows, messages: messages.rows, sessions: sessions.rows };
}

interface Outcome {
  profile: Profile;
  seconds: number;
  terminations: number;
  faults: InjectedFault[];
  traffic: Traffic;
  turns: TurnFindings;
  events: EventFindings;
  crashes: { replica: number; code: number | null; signal: string | null; outputTail: string }[];
  kills: number;
}

const list = (items: string[], limit = 5) =>
  items.length === 0
    ? '0'
    : `**${items.length}**: ${items.slice(0, limit).join('; ')}${items.length > limit ? ' …' : ''}`;

function report(outcome: Outcome): string[] {
  const { profile, traffic, turns, events } = outcome;
  const answered = traffic.acknowledged.map((ack) => ack.latencyMs);
  const withRetries = traffic.acknowledged.map((ack) => ack.acknowledgedAfterMs);
  const failures = [...traffic.failures].sort((a, b) => b[1] - a[1]);
  const count = (prefix: string) =>
    failures.filter(([kind]) => kind.startsWith(prefix)).reduce((sum, [, n]) => sum + n, 0);
  const byKind = (kind: FaultKind) => outcome.faults.filter((fault) => fault.kind === kind).length;
  const blackHoles = outcome.faults
    .filter((fault) => fault.kind.endsWith('black hole'))
    .map((fault) => `${fault.kind.split(' ')[0]} ${round((fault.endedAt - fault.startedAt) / 1000, 0)} s`);
  const lines = [
    `# Chaos drill (${profile.name})`,
    '',
    `${round(outcome.seconds / 60, 1)} minutes, ${profile.replicas} replicas of the compiled service (NODE_ENV=production, ` +
      `keys, Redis, NATS) on a Postgres cluster of the drill's own, ${profile.clients} clients resending each message ` +
      `with its message_id until a 200 (after ${'~'}250-500 ms). Machine: ${cpus().length} cores, load average ` +
      `${loadavg()
        .map((l) => round(l, 1))
        .join(' / ')} at the end (other work included).`,
    '',
    '| measure | value |',
    '| --- | --- |',
    `| faults injected | ${outcome.terminations} sessions terminated (every ${profile.terminateEveryMs} ms), ` +
      `${byKind('restart -m fast') + byKind('restart -m immediate')} Postgres restarts (fast ${byKind('restart -m fast')}, ` +
      `immediate ${byKind('restart -m immediate')}), ${outcome.kills} replicas killed (SIGKILL), black holes: ` +
      `${blackHoles.join(', ') || 'none'} |`,
    `| turns acknowledged | ${traffic.acknowledged.length} (${traffic.acknowledged.filter((a) => a.replayed).length} as a replay) |`,
    `| retries | ${traffic.attempts - traffic.acknowledged.length - traffic.unanswered.length} |`,
    `| 503s | ${count('503')} (${failures
      .filter(([kind]) => kind.startsWith('503'))
      .map(([kind, n]) => `${kind.slice(4)} ${n}`)
      .join(', ')}) |`,
    `| other failed attempts | ${
      failures
        .filter(([kind]) => !kind.startsWith('503'))
        .map(([kind, n]) => `${kind} ${n}`)
        .join(', ') || 'none'
    } |`,
    `| lost (acknowledged, not stored as answered) | ${list(turns.lost)} |`,
    `| duplicated | ${list([...turns.duplicated, ...traffic.misnumbered])} |`,
    `| forks (versions not 1..n in one line) | ${list(turns.forks)} |`,
    `| unanswered when the drill ended | ${list(traffic.unanswered.map((u) => `${u.conversation_key}/${u.message_id}`))} |`,
    `| crashes (exits the drill did not cause) | ${list(outcome.crashes.map((c) => `replica ${c.replica} (${c.signal ?? c.code})`))} |`,
    `| answered turns p50 / p99 | ${percentile(answered, 50)} / ${percentile(answered, 99)} ms |`,
    `| acknowledged after (retries included) p50 / p99 | ${percentile(withRetries, 50)} / ${percentile(withRetries, 99)} ms |`,
    `| events (NATS consumer) | ${events.expected} expected, ${events.received} received; missing ${list(events.missing)}, ` +
      `duplicated ${list(events.duplicated)}, out of order ${list(events.outOfOrder)} |`,
    '',
    'Time to recover: from the end of each fault (the restart done, the replica killed, the black hole restored) ' +
      'until every client had a turn acknowledged again.',
    '',
    '| at | fault | lasted | recovered after |',
    '| --- | --- | --- | --- |',
    ...outcome.faults.map((fault) => {
      const recovered = recoveryMs(fault, traffic, profile.clients);
      return `| ${round(fault.atS, 0)} s | ${fault.kind} ${fault.detail} | ${round((fault.endedAt - fault.startedAt) / 1000, 1)} s | ${
        recovered === null ? '**not recovered**' : `${round(recovered / 1000, 1)} s`
      } |`;
    }),
  ];
  for (const crash of outcome.crashes) {
    lines.push('', `Replica ${crash.replica} exited on its own (${crash.signal ?? crash.code}):`, '', '```');
    lines.push(crash.outputTail, '```');
  }
  return lines;
}

function passed(outcome: Outcome): boolean {
  const { turns, events, traffic } = outcome;
  return (
    turns.lost.length + turns.duplicated.length + turns.forks.length === 0 &&
    traffic.misnumbered.length + traffic.unanswered.length === 0 &&
    events.missing.length + events.duplicated.length + events.outOfOrder.length === 0 &&
    outcome.crashes.length === 0 &&
    traffic.acknowledged.length > 0
  );
}

async function main(): Promise<void> {
  const profile = chosenProfile();
  const run = Date.now().toString(36);
  const tenant = `chaos-${run}`;
  const channelKey = `chaos-channel-key-${run}`;
  const stream = `CHAOS_${run.toUpperCase()}`;
  const subjects = `chaos.${run}`;
  log(
    `${profile.name} drill: ${profile.durationS} s, ${profile.replicas} replicas, ${profile.clients} clients`,
  );

  const fake = await FakeLlmServer.start();
  fake.script(GUARDRAILS_ALLOW);
  fake.script({ model: 'agent', reply: { content: 'Sua fatura de maio é de R$ 89,90.', delayMs: 20 } });
  fake.setFallback({ json: { intent: 'unknown', confidence: 0, reason: 'chaos drill' } });
  const postgres = await PrivatePostgres.start(await freePort());
  const redis = await TcpProxy.forUrl(REDIS_URL);
  const nats = await TcpProxy.forUrl(NATS_URL);
  const admin = new Pool({ connectionString: postgres.url, max: 2, application_name: 'chaos-drill' });
  admin.on('error', () => undefined);
  const ports = await Promise.all(Array.from({ length: profile.replicas }, () => freePort()));
  const replicas = new Replicas(ports, (replica) => ({
    NODE_ENV: 'production',
    PORT: String(ports[replica]),
    DATABASE_URL: `${postgres.url}?application_name=chaos-replica-${replica}`,
    CHANNEL_API_KEYS: `${tenant}:${channelKey}`,
    RATE_LIMIT_PER_MINUTE: '1000000',
    REDIS_URL: redis.url,
    RATE_LIMIT_KEY_PREFIX: `chaos:${run}:`,
    EVENTS_NATS_URL: nats.url,
    EVENTS_NATS_STREAM: stream,
    EVENTS_NATS_SUBJECT_PREFIX: subjects,
    LLM_BASE_URL: fake.baseUrl,
    LLM_API_KEY: 'chaos',
    LOG_LEVEL: 'warn',
  }));
  let consumer: DurableReader | null = null;
  try {
    await replicas.startAll();
    log(`replicas ready on ${ports.join(', ')}; Postgres on ${postgres.port}`);
    consumer = await DurableReader.open(NATS_URL, stream, 'chaos-consumer', `${subjects}.>`);

    const traffic = new Traffic({
      ports,
      tenant,
      channelKey,
      clients: profile.clients,
      turnsPerConversation: profile.turnsPerConversation,
      retryMs: 250,
      requestTimeoutMs: 60000,
    });
    const started = Date.now();
    const clients = traffic.run();
    let faultsOver = false;
    const terminating = terminateSessions(admin, profile.terminateEveryMs, () => faultsOver);
    const progress = setInterval(() => {
      log(
        `${round((Date.now() - started) / 1000, 0)} s: ${traffic.acknowledged.length} acknowledged, ${traffic.attempts} attempts`,
      );
    }, 30000);

    const faults: InjectedFault[] = [];
    let kills = 0;
    for (const planned of profile.faults) {
      await sleep(started + planned.atS * 1000 - Date.now());
      const startedAt = Date.now();
      let detail = '';
      switch (planned.kind) {
        case 'kill': {
          const replica = kills % profile.replicas;
          kills += 1;
          const readyAfter = await replicas.kill(replica);
          detail = `of replica ${replica} (ready again after ${round(readyAfter / 1000, 1)} s)`;
          // The fault is the kill; the other replicas serve meanwhile.
          faults.push({
            kind: planned.kind,
            atS: (startedAt - started) / 1000,
            detail,
            startedAt,
            endedAt: startedAt,
          });
          break;
        }
        case 'restart -m fast':
        case 'restart -m immediate':
          await postgres.restart(planned.kind === 'restart -m fast' ? 'fast' : 'immediate');
          faults.push({
            kind: planned.kind,
            atS: (startedAt - started) / 1000,
            detail,
            startedAt,
            endedAt: Date.now(),
          });
          break;
        case 'Redis black hole':
        case 'NATS black hole': {
          const proxy = planned.kind === 'Redis black hole' ? redis.proxy : nats.proxy;
          proxy.blackHole();
          await sleep((planned.forS ?? 10) * 1000);
          await proxy.restore();
          faults.push({
            kind: planned.kind,
            atS: (startedAt - started) / 1000,
            detail,
            startedAt,
            endedAt: Date.now(),
          });
          break;
        }
      }
      log(
        `${planned.kind} ${detail} at ${round((startedAt - started) / 1000, 0)} s, ${round((Date.now() - startedAt) / 1000, 1)} s`,
      );
    }
    await sleep(started + profile.durationS * 1000 - Date.now());
    faultsOver = true;
    const terminations = await terminating;
    traffic.drain(profile.drainS * 1000);
    await clients;
    clearInterval(progress);
    const seconds = (Date.now() - started) / 1000;
    log(`traffic done: ${traffic.acknowledged.length} acknowledged; checking`);

    const rows = await storedRows(admin, tenant);
    const turns = checkTurns(traffic.acknowledged, rows.turns, rows.messages, rows.sessions);
    const expected = await expectedEventIds(
      async (sql, params) =>
        (await admin.query<{ conversation_key: string; version: number; n: number }>(sql, params)).rows,
      tenant,
    );
    let received: ReceivedEvent[] = [];
    try {
      received = await consumer.readUntil((all) => all.length >= expected.length, 120000);
    } catch {
      received = consumer.received;
    }
    const events = checkEvents(expected, received);
    const outcome: Outcome = {
      profile,
      seconds,
      terminations,
      faults,
      traffic,
      turns,
      events,
      kills,
      crashes: replicas.exits.filter((exit) => !exit.killedByDrill),
    };
    const lines = report(outcome);
    const path = writeReport('chaos.md', `${lines.join('\n')}\n`);
    process.stdout.write(
      `\n${consoleTable(lines)}\n\n${consoleTable(
        lines,
        lines.find((l) => l.startsWith('Time to recover')),
      )}\n`,
    );
    log(`report: ${path}`);
    if (!passed(outcome)) {
      log('FAILED: see the report, and the logs of the replicas and of Postgres');
      process.exitCode = 1;
    }
  } finally {
    await replicas.stop();
    const logs = join(REPO_ROOT, 'bench', 'results', 'chaos-logs');
    mkdirSync(logs, { recursive: true });
    for (const replica of ports.keys()) {
      writeFileSync(join(logs, `replica-${replica}.log`), replicas.output(replica));
    }
    copyFileSync(postgres.logFile, join(logs, 'postgres.log'));
    log(`logs: ${logs}`);
    await consumer?.close(true).catch(() => undefined);
    await admin.end().catch(() => undefined);
    await redis.proxy.stop();
    await nats.proxy.stop();
    await postgres.stop();
    await fake.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
