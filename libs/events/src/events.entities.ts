import { Column, Entity, Index, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { EVENT_RELAY_ENTITIES } from './event-relay.entities';
import type { EventDocument } from './outbound-event';

/* The dead letters and webhook attempts as migrations/ creates them; the schema-drift test fails when the two disagree. */

@Entity({ name: 'event_dead_letters' })
@Index('event_dead_letters_tenant_idx', ['tenant_id', 'id'])
@Index('event_dead_letters_conversation_idx', ['conversation_key'])
@Index('event_dead_letters_created_idx', ['created_at'])
export class DeadLetterEntity {
  @PrimaryGeneratedColumn('increment', {
    type: 'bigint',
    primaryKeyConstraintName: 'event_dead_letters_pkey',
  })
  id!: string;

  @Column({ type: 'text' })
  destination!: string;

  @Column({ type: 'text' })
  tenant_id!: string;

  @Column({ type: 'text' })
  conversation_key!: string;

  @Column({ type: 'text' })
  event_id!: string;

  @Column({ type: 'text' })
  event_name!: string;

  @Column({ type: 'jsonb' })
  body!: EventDocument;

  @Column({ type: 'integer' })
  attempts!: number;

  @Column({ type: 'text' })
  last_error!: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  created_at!: Date;

  @Column({ type: 'timestamptz', nullable: true })
  redelivered_at!: Date | null;

  /** While in the future, a redelivery of the letter is in flight and no other may start. */
  @Column({ type: 'timestamptz', nullable: true })
  redelivery_claimed_until!: Date | null;
}

@Entity({ name: 'event_delivery_attempts' })
@Index('event_delivery_attempts_conversation_idx', ['conversation_key'])
export class DeliveryAttemptEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'event_delivery_attempts_pkey' })
  destination!: string;

  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'event_delivery_attempts_pkey' })
  event_id!: string;

  @Column({ type: 'text' })
  conversation_key!: string;

  @Column({ type: 'integer' })
  attempts!: number;

  @Column({ type: 'timestamptz' })
  next_attempt_at!: Date;

  @Column({ type: 'text' })
  last_error!: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  updated_at!: Date;
}

export const EVENTS_ENTITIES = [...EVENT_RELAY_ENTITIES, DeadLetterEntity, DeliveryAttemptEntity];
