import { Logger } from '@nestjs/common';
import {
  JetStreamApiCodes,
  JetStreamApiError,
  JetStreamClient,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
} from '@nats-io/jetstream';
import { connect, nanos, NatsConnection } from '@nats-io/transport-node';
import type { EventsEnv } from '@agent/config';
import { EventDestination, eventDocument, OutboundEvent } from './outbound-event';
import { EventDestinationClosedError } from './events.errors';

const RETENTION: Record<EventsEnv['EVENTS_NATS_RETENTION'], RetentionPolicy> = {
  limits: RetentionPolicy.Limits,
  interest: RetentionPolicy.Interest,
  workqueue: RetentionPolicy.Workqueue,
};

/** How long a connection attempt and a publish acknowledgement may take before the relay tries again later. */
const CONNECT_TIMEOUT_MS = 2000;
const PUBLISH_TIMEOUT_MS = 5000;
/**
 * A connection whose server stopped answering (a host gone without closing it) is given up after two unanswered
 * pings, about 20 s, and a new one is made; the client's default (two of every two minutes) let it sit for four.
 */
const PING_INTERVAL_MS = 10000;

/** Characters a subject token cannot hold: the separator, the wildcards and white space. */
const NOT_IN_TOKEN = /[.*>\s%]/g;

/** `<prefix>.<tenant>.<event name>`; a tenant id's `.` (and `%`) is percent-encoded so it stays one token. */
export function natsSubject(prefix: string, event: Pick<OutboundEvent, 'tenant_id' | 'name'>): string {
  const tenant = event.tenant_id.replace(
    NOT_IN_TOKEN,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`,
  );
  return `${prefix}.${tenant}.${event.name.replace(/[*>\s]/g, '_')}`;
}

/**
 * A JetStream stream (EVENTS_NATS_STREAM, created when absent) receiving every tenant's events, each published
 * with its id as `Nats-Msg-Id` so the stream drops a repeat within its duplicate window. The connection is made on
 * first use and again after it is lost, so a server that is down only makes the relay wait.
 */
export class NatsDestination implements EventDestination {
  readonly name: string;
  readonly tenant = null;
  private readonly logger = new Logger(NatsDestination.name);
  private connection: NatsConnection | null = null;
  private client: JetStreamClient | null = null;
  private streamChecked = false;
  /** The connection (and stream check) in progress, shared by every delivery waiting for it. */
  private readying: Promise<JetStreamClient> | null = null;
  private closed = false;

  constructor(private readonly config: EventsEnv & { EVENTS_NATS_URL: string }) {
    this.name = `nats:${config.EVENTS_NATS_STREAM}`;
  }

  async deliver(event: OutboundEvent): Promise<void> {
    const client = await this.ready();
    try {
      await client.publish(
        natsSubject(this.config.EVENTS_NATS_SUBJECT_PREFIX, event),
        JSON.stringify(eventDocument(event)),
        { msgID: event.id, timeout: PUBLISH_TIMEOUT_MS },
      );
    } catch (error) {
      // The stream may have been deleted, or the server replaced: look again before the next attempt.
      this.streamChecked = false;
      throw error;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.readying?.catch(() => undefined);
    const connection = this.connection;
    this.connection = null;
    this.client = null;
    // Every publish was acknowledged or failed before the relay closes its destinations: nothing to drain, and
    // close() also ends a reconnect loop that drain() would wait on.
    if (connection && !connection.isClosed()) await connection.close();
  }

  /**
   * The client, connecting and checking the stream first when needed. The relay delivers several conversations
   * at once: they share one attempt, so a (re)connection opens one connection, not one per waiting delivery.
   */
  private ready(): Promise<JetStreamClient> {
    const client = this.client;
    if (client && this.streamChecked && this.connection && !this.connection.isClosed()) {
      return Promise.resolve(client);
    }
    this.readying ??= this.connectAndCheck().finally(() => {
      this.readying = null;
    });
    return this.readying;
  }

  private async connectAndCheck(): Promise<JetStreamClient> {
    if (this.closed) throw new EventDestinationClosedError(this.name);
    let connection = this.connection;
    let client = this.client;
    if (!connection || !client || connection.isClosed()) {
      connection = await connect({
        servers: this.config.EVENTS_NATS_URL,
        name: 'agent-runtime-event-relay',
        timeout: CONNECT_TIMEOUT_MS,
        pingInterval: PING_INTERVAL_MS,
        maxPingOut: 2,
        maxReconnectAttempts: -1,
        // Otherwise every publish builds two more Error objects (with their stacks) in case it fails, 2-3% of the
        // service's CPU while relaying. A failure still has its message and cause; the relay logs no stack.
        noAsyncTraces: true,
      });
      client = jetstream(connection, { timeout: PUBLISH_TIMEOUT_MS });
      this.connection = connection;
      this.client = client;
      this.streamChecked = false;
    }
    if (!this.streamChecked) {
      await this.ensureStream(connection);
      this.streamChecked = true;
    }
    return client;
  }

  private async ensureStream(connection: NatsConnection): Promise<void> {
    const manager = await jetstreamManager(connection, { timeout: PUBLISH_TIMEOUT_MS });
    const stream = this.config.EVENTS_NATS_STREAM;
    try {
      await manager.streams.info(stream);
      return;
    } catch (error) {
      if (!(error instanceof JetStreamApiError) || error.code !== JetStreamApiCodes.StreamNotFound) {
        throw error;
      }
    }
    await manager.streams.add({
      name: stream,
      subjects: [`${this.config.EVENTS_NATS_SUBJECT_PREFIX}.>`],
      retention: RETENTION[this.config.EVENTS_NATS_RETENTION],
      storage: StorageType.File,
      max_age: nanos(this.config.EVENTS_NATS_MAX_AGE_HOURS * 3_600_000),
      duplicate_window: nanos(this.config.EVENTS_NATS_DUPLICATE_WINDOW_SECONDS * 1000),
    });
    this.logger.log(`created the JetStream stream ${stream}`);
  }
}
