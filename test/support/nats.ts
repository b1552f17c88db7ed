import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AckPolicy,
  ConsumerMessages,
  JetStreamApiError,
  JetStreamError,
  jetstream,
  jetstreamManager,
} from '@nats-io/jetstream';
import { connect, NatsConnection } from '@nats-io/transport-node';
import { portAnswers } from './app-process';
import { waitUntil } from './wait-for';

/** The NATS JetStream server of CI and the development machines. */
export const NATS_URL = process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

/** A message as a consumer of the stream reads it. */
export interface ReceivedEvent {
  subject: string;
  msgId: string | undefined;
  id: string;
  type: string;
  data: Record<string, unknown>;
  /** When the stream stored it (server clock, ms since the epoch). */
  storedAt: number;
}

/**
 * A durable pull consumer of one subject filter, created once the relay has created the stream, reading and
 * acknowledging everything from the start.
 */
export class DurableReader {
  readonly received: ReceivedEvent[] = [];

  private constructor(
    private readonly connection: NatsConnection,
    private readonly stream: string,
    private readonly durable: string,
    private readonly filter: string,
  ) {}

  static async open(url: string, stream: string, durable: string, filter: string): Promise<DurableReader> {
    const connection = await connect({ servers: url, timeout: 2000 });
    return new DurableReader(connection, stream, durable, filter);
  }

  /** Reads until `done` holds for everything received so far, or fails after `timeoutMs`. */
  async readUntil(done: (all: ReceivedEvent[]) => boolean, timeoutMs: number): Promise<ReceivedEvent[]> {
    const deadline = Date.now() + timeoutMs;
    const js = jetstream(this.connection);
    await this.ensureConsumer(deadline);
    const consumer = await js.consumers.get(this.stream, this.durable);
    while (!done(this.received)) {
      if (Date.now() > deadline) {
        throw new Error(`timed out with ${this.received.length} messages of ${this.filter}`);
      }
      const messages = await consumer.fetch({ max_messages: 500, expires: 1000 });
      try {
        await this.take(messages);
      } catch (error) {
        // A fetch whose heartbeats a busy test process missed ends early; the next one goes on from there.
        if (!(error instanceof JetStreamError) || !/heartbeats missed/.test(error.message)) throw error;
      }
    }
    return this.received;
  }

  private async take(messages: ConsumerMessages): Promise<void> {
    for await (const message of messages) {
      const document = message.json<{ id: string; type: string; data: Record<string, unknown> }>();
      this.received.push({
        subject: message.subject,
        msgId: message.headers?.get('Nats-Msg-Id'),
        id: document.id,
        type: document.type,
        data: document.data,
        storedAt: Number(message.timestampNanos / 1_000_000n),
      });
      message.ack();
    }
  }

  /** Deletes the stream (the test made it through the relay) and disconnects. */
  async close(deleteStream: boolean): Promise<void> {
    if (deleteStream) {
      const manager = await jetstreamManager(this.connection);
      await manager.streams.delete(this.stream).catch(() => false);
    }
    await this.connection.close();
  }

  private async ensureConsumer(deadline: number): Promise<void> {
    const manager = await jetstreamManager(this.connection);
    await waitUntil(
      `the stream ${this.stream} (the relay creates it with its first delivery)`,
      () =>
        manager.consumers
          .add(this.stream, {
            durable_name: this.durable,
            ack_policy: AckPolicy.Explicit,
            filter_subject: this.filter,
          })
          .then(
            () => true,
            (error: unknown) => {
              if (!(error instanceof JetStreamApiError)) throw error;
              return false;
            },
          ),
      Math.max(0, deadline - Date.now()),
      100,
    );
  }
}

/** A nats-server of the test's own, so the test can stop and start it (the shared one stays untouched). */
export class NatsServerProcess {
  private child: ChildProcess | null = null;
  private readonly storeDir = mkdtempSync(join(tmpdir(), 'nats-test-'));

  constructor(readonly port: number) {}

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.child = spawn(
      'nats-server',
      ['-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', this.storeDir],
      { stdio: 'ignore' },
    );
    await waitUntil(`nats-server to listen on ${this.port}`, () => portAnswers(this.port), 10000, 50);
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.storeDir, { recursive: true, force: true });
  }
}

/** Every event id each commit of a tenant's conversations should produce, from the turn log. */
export async function expectedEventIds(
  query: (
    sql: string,
    params: unknown[],
  ) => Promise<{ conversation_key: string; version: number; n: number }[]>,
  tenantId: string,
): Promise<string[]> {
  const rows = await query(
    `SELECT conversation_key, version, jsonb_array_length(events::jsonb) AS n FROM turn_log WHERE tenant_id = $1`,
    [tenantId],
  );
  return rows.flatMap((row) =>
    Array.from({ length: row.n }, (_, index) => `${row.conversation_key}:${row.version}:${index + 1}`),
  );
}

/** Per conversation, the received ids strictly follow the commit order (version, then position in it). */
export function outOfOrder(received: Pick<ReceivedEvent, 'id'>[]): string[] {
  const last = new Map<string, [number, number]>();
  const problems: string[] = [];
  for (const event of received) {
    const match = /^(.*):(\d+):(\d+)$/.exec(event.id);
    if (!match) {
      problems.push(`malformed id ${event.id}`);
      continue;
    }
    const [, key, version, seq] = match;
    const position: [number, number] = [Number(version), Number(seq)];
    const before = last.get(key);
    if (before && (position[0] < before[0] || (position[0] === before[0] && position[1] <= before[1]))) {
      problems.push(`${event.id} after ${key}:${before.join(':')}`);
    }
    last.set(key, position);
  }
  return problems;
}
