import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { checkpointConfig, eventsConfig } from '@agent/config';
import { conversationPosition, rowEnvelope } from '@agent/contracts';
import { EventBusService, MetricsService } from '@agent/observability';
import { AcknowledgementBatcher } from './acknowledgement-batcher';
import { ClaimedConversation, EventRelayStore, PendingRecord } from './event-relay.store';
import { EVENT_DESTINATIONS, EventDestination, OutboundEvent } from './outbound-event';

/** The longest pause between attempts on a destination that keeps failing. */
const MAX_RETRY_DELAY_MS = 5000;

/** What /health/ready shows per destination. */
export interface DestinationStatus {
  destination: string;
  /** The tenant whose events it receives (a webhook endpoint), or null for every tenant's (NATS). */
  tenant_id: string | null;
  lag_events: number;
  lag_seconds: number;
  last_error: string | null;
  last_delivery_at: string | null;
}

/**
 * Delivers what conversations publish (the events of committed turn log rows and of failed runs) to every
 * destination, at least once and in each conversation's order. Every replica relays: each claims conversations
 * of a destination's backlog (an expiring claim per destination and conversation), acknowledges each record once
 * all its events are delivered, and gives the claims up; a replica that dies leaves claims that lapse after
 * EVENTS_RELAY_LEASE_MS, and the next one resumes after the last acknowledged record. No order across
 * conversations is kept or needed, so this holds on one node and on shards alike (ADR 0010). Turns never wait for
 * this: a destination that is down only lags. A commit or failed run of this process wakes every healthy
 * destination at once; EVENTS_RELAY_POLL_MS is the pace for other replicas' records.
 */
@Injectable()
export class EventRelayService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(EventRelayService.name);
  private readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly stopping = new AbortController();
  private readonly loops: Promise<void>[] = [];
  private readonly status = new Map<string, DestinationStatus>();
  /** Per destination: ends its current pause, or marks a commit that arrived while it was delivering. */
  private readonly wakers = new Map<string, () => void>();
  private readonly woken = new Set<string>();
  private unsubscribe: (() => void) | null = null;
  /** Destinations whose row exists: registered once, not on every poll. */
  private readonly registered = new Set<string>();

  constructor(
    private readonly store: EventRelayStore,
    private readonly metrics: MetricsService,
    private readonly bus: EventBusService,
    @Inject(eventsConfig.KEY) private readonly config: ConfigType<typeof eventsConfig>,
    @Inject(checkpointConfig.KEY) private readonly retention: ConfigType<typeof checkpointConfig>,
    @Inject(EVENT_DESTINATIONS) private readonly destinations: EventDestination[],
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    // A new destination starts with the commits that follow its registration: registered before the app serves,
    // so its first turns are delivered too (the loop registers again if the database was away just now).
    await Promise.all(
      this.destinations.map((destination) =>
        this.register(destination).catch((error: unknown) =>
          this.logger.warn(`${destination.name}: registration failed, will retry: ${String(error)}`),
        ),
      ),
    );
    for (const destination of this.destinations) {
      this.status.set(destination.name, {
        destination: destination.name,
        tenant_id: destination.tenant,
        lag_events: 0,
        lag_seconds: 0,
        last_error: null,
        last_delivery_at: null,
      });
      this.loops.push(this.run(destination));
    }
    if (this.destinations.length > 0) {
      this.unsubscribe = this.bus.onCommitted(() => this.wake());
      this.logger.log(`relaying events to ${this.destinations.map((d) => d.name).join(', ')}`);
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.unsubscribe?.();
    this.stopping.abort();
    await Promise.all(this.loops);
    await Promise.all(this.destinations.map((destination) => destination.close()));
  }

  /** Per destination: how far behind it is and its last failure. */
  describe(): DestinationStatus[] {
    return [...this.status.values()];
  }

  /** Drops a purged conversation from every destination's backlog. */
  forgetConversation(conversationKey: string): Promise<void> {
    return this.store.forget(conversationKey);
  }

  private async run(destination: EventDestination): Promise<void> {
    const signal = this.stopping.signal;
    let failures = 0;
    let measuredAt = 0;
    while (!signal.aborted) {
      let delay = this.config.EVENTS_RELAY_POLL_MS;
      try {
        await this.register(destination);
        const more = await this.relayOnce(destination, signal);
        if (failures > 0) this.logger.log(`${destination.name}: delivering again`);
        failures = 0;
        this.record(destination.name, { last_error: null });
        if (more) delay = 0;
      } catch (error) {
        if (signal.aborted) break;
        const message = error instanceof Error ? error.message : String(error);
        if (failures === 0) this.logger.warn(`${destination.name}: delivery failed, will retry: ${message}`);
        failures += 1;
        this.record(destination.name, { last_error: message });
        this.metrics.eventDeliveryFailures.inc({ destination: destination.name });
        delay = Math.min(MAX_RETRY_DELAY_MS, this.config.EVENTS_RELAY_POLL_MS * 2 ** Math.min(failures, 10));
      }
      // Measuring scans the pending commits: once per poll interval (a commit of this replica wakes the relay far
      // more often), and after every failure, so the lag of a destination that is down shows at once.
      if (failures > 0 || Date.now() - measuredAt >= this.config.EVENTS_RELAY_POLL_MS) {
        measuredAt = Date.now();
        await this.measure(destination).catch(() => undefined);
      }
      // A failing destination keeps its backoff: commits do not hurry retries against it.
      await this.pause(destination.name, delay, failures === 0, signal);
    }
  }

  private async register(destination: EventDestination): Promise<void> {
    if (this.registered.has(destination.name)) return;
    await this.store.register(destination.name, destination.tenant, this.retentionDays());
    this.registered.add(destination.name);
  }

  /** How long a destination no replica relays keeps getting records queued: as long as the turn log keeps them. */
  private retentionDays(): number | null {
    const days = this.retention.TURN_LOG_RETENTION_DAYS;
    return days > 0 ? days : null;
  }

  private wake(): void {
    for (const destination of this.destinations) {
      const waker = this.wakers.get(destination.name);
      if (waker) waker();
      else this.woken.add(destination.name);
    }
  }

  /** Waits `ms`, less when `wakeable` and a commit comes (or came during the last delivery), or the service stops. */
  private pause(name: string, ms: number, wakeable: boolean, signal: AbortSignal): Promise<void> {
    const woken = this.woken.delete(name);
    if ((wakeable && woken) || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wakers.delete(name);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      if (wakeable) this.wakers.set(name, done);
    });
  }

  /**
   * One pass: claim the oldest queued conversations, read their records, deliver conversation by conversation,
   * acknowledge (the conversations' acknowledgements written together as they come), release what is still held.
   * True when more is likely waiting (a full claim, or a conversation read only in part).
   */
  private async relayOnce(destination: EventDestination, signal: AbortSignal): Promise<boolean> {
    const { EVENTS_RELAY_BATCH_SIZE: batch, EVENTS_RELAY_LEASE_MS: leaseMs } = this.config;
    const claimed = await this.store.claim(destination.name, this.owner, leaseMs, batch);
    if (claimed.length === 0) return false;
    // About one batch of records per pass, however many conversations share it.
    const perConversation = Math.max(1, Math.floor(batch / claimed.length));
    const records = await this.store.read(claimed, destination.tenant, perConversation);
    const byConversation = new Map<string, PendingRecord[]>();
    for (const record of records) {
      const list = byConversation.get(record.conversation_key) ?? [];
      list.push(record);
      byConversation.set(record.conversation_key, list);
    }
    const renewal = setInterval(
      () => void this.store.renew(destination.name, this.owner, leaseMs).catch(() => undefined),
      Math.max(100, Math.floor(leaseMs / 3)),
    );
    const acknowledgements = new AcknowledgementBatcher((group) =>
      this.store.acknowledge(destination.name, this.owner, leaseMs, group),
    );
    let held = claimed.length;
    let more = claimed.length >= batch;
    try {
      const outcomes = await Promise.allSettled(
        claimed.map(async (conversation) => {
          const list = byConversation.get(conversation.conversation_key) ?? [];
          const complete = list.length < perConversation;
          more ||= !complete;
          if (
            await this.deliverConversation(
              destination,
              conversation,
              list,
              complete,
              acknowledgements,
              signal,
            )
          ) {
            held -= 1;
          }
        }),
      );
      const failed = outcomes.find((outcome) => outcome.status === 'rejected');
      if (failed) throw failed.reason;
    } finally {
      clearInterval(renewal);
      // The last acknowledgement of each conversation gave its claim up; only a pass cut short holds any still.
      if (held > 0) await this.store.release(destination.name, this.owner);
    }
    return more;
  }

  /**
   * A conversation's records in order; the first failure stops it, so nothing after it goes out of order. When the
   * read was `complete` (nothing more from its next position), the last acknowledgement also moves past every
   * position the claim saw written: records of another tenant, or deleted by retention, are skipped. True when it no
   * longer holds the claim: the last acknowledgement released it, or another replica has it.
   */
  private async deliverConversation(
    destination: EventDestination,
    conversation: ClaimedConversation,
    records: PendingRecord[],
    complete: boolean,
    acknowledgements: AcknowledgementBatcher,
    signal: AbortSignal,
  ): Promise<boolean> {
    const key = conversation.conversation_key;
    const caughtUp = (delivered: number) =>
      complete ? Math.max(delivered, conversation.last_position + 1) : delivered;
    if (records.length === 0) {
      await acknowledgements.acknowledge({
        conversation_key: key,
        next_position: caughtUp(conversation.next_position),
        release: true,
      });
      return true;
    }
    for (const [index, record] of records.entries()) {
      if (signal.aborted) return false;
      const events = outboundEvents(record);
      for (const event of events) await destination.deliver(event, signal);
      const last = index === records.length - 1;
      const delivered = conversationPosition(record.version, record.attempt) + 1;
      const held = await acknowledgements.acknowledge({
        conversation_key: key,
        next_position: last ? caughtUp(delivered) : delivered,
        release: last,
      });
      this.metrics.eventsDelivered.inc({ destination: destination.name }, events.length);
      this.record(destination.name, { last_delivery_at: new Date().toISOString() });
      if (!held || last) return true;
    }
    return false;
  }

  private async measure(destination: EventDestination): Promise<void> {
    const lag = await this.store.measure(destination.name, destination.tenant, this.retentionDays());
    const seconds = lag.oldest ? Math.max(0, (Date.now() - lag.oldest.getTime()) / 1000) : 0;
    this.metrics.eventRelayLagEvents.set({ destination: destination.name }, lag.events);
    this.metrics.eventRelayLagSeconds.set({ destination: destination.name }, seconds);
    this.record(destination.name, { lag_events: lag.events, lag_seconds: Math.round(seconds * 10) / 10 });
  }

  private record(destination: string, change: Partial<DestinationStatus>): void {
    const current = this.status.get(destination);
    if (current) this.status.set(destination, { ...current, ...change });
  }
}

/**
 * The events of one record, each with its stable id and its payload as published (the envelope back in): a commit's
 * are `<conversation_key>:<version>:<seq>`, a failed run's `<conversation_key>:<version>.<attempt>:<seq>`.
 */
export function outboundEvents(record: PendingRecord): OutboundEvent[] {
  const envelope = rowEnvelope(record);
  const at = record.attempt === 0 ? `${record.version}` : `${record.version}.${record.attempt}`;
  return record.events.map((event, index) => ({
    id: `${record.conversation_key}:${at}:${index + 1}`,
    name: event.name,
    tenant_id: record.tenant_id,
    conversation_key: record.conversation_key,
    version: record.version,
    seq: index + 1,
    payload: { ...envelope, ...event.payload },
  }));
}
