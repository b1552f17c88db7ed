import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/*
 * The event relay's tables as migrations/ creates them; the schema-drift test fails when the two disagree.
 * `event_relay_destinations.watermark` (xid8, which TypeORM cannot type) and the table `event_relay_positions` are the
 * earlier release's relay, kept for its replicas during a rolling deploy and read by nothing here.
 */

@Entity({ name: 'event_relay_destinations' })
export class EventRelayDestinationEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'event_relay_destinations_pkey' })
  destination!: string;

  /** Only this tenant's conversations are queued for it; every tenant's when null. */
  @Column({ type: 'text', nullable: true })
  tenant_id!: string | null;

  /** Commits are queued for it until then; the replicas relaying it keep pushing it forward. */
  @Column({ type: 'timestamptz', default: () => '(now() + make_interval(days => 30))' })
  expires_at!: Date;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  created_at!: Date;
}

/**
 * Per destination, a conversation with undelivered positions (`version × 65536 + attempt`, see `relayPosition`):
 * the next one to deliver, the last one written, when it was queued, and the claim of the replica relaying it.
 * A trigger writes it with every commit and failed-run record; the relay deletes it once it has caught up.
 */
@Entity({ name: 'event_relay_backlog' })
@Index('event_relay_backlog_queue_idx', ['destination', 'queued_at'])
export class EventRelayBacklogEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'event_relay_backlog_pkey' })
  destination!: string;

  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'event_relay_backlog_pkey' })
  conversation_key!: string;

  @Column({ type: 'bigint' })
  next_position!: string;

  @Column({ type: 'bigint' })
  last_position!: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  queued_at!: Date;

  @Column({ type: 'text', nullable: true })
  lease_owner!: string | null;

  @Column({ type: 'timestamptz', nullable: true })
  lease_expires_at!: Date | null;
}

export const EVENT_RELAY_ENTITIES = [EventRelayDestinationEntity, EventRelayBacklogEntity];
