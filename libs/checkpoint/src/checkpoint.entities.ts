import { Column, Entity, Generated, Index, PrimaryColumn, ViewColumn, ViewEntity } from 'typeorm';
import type { NodeTiming } from '@agent/observability';
import type { CheckpointFormat } from './canonical-json';
import type { SessionStatus, TurnSummary } from './checkpoint.types';

/*
 * The tables of CheckpointModule as migrations/ creates them; the schema-drift test fails when the two disagree.
 * Index column order is what TypeORM compares: the DESC of sessions_tenant_updated_idx lives in the migration.
 */

@Entity({ name: 'sessions' })
@Index('sessions_tenant_updated_idx', ['tenant_id', 'updated_at', 'conversation_key'])
@Index('sessions_status_idx', ['status'])
@Index('sessions_tenant_session_idx', ['tenant_id', 'session_id'])
export class SessionEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'sessions_pkey' })
  conversation_key!: string;

  @Column({ type: 'text' })
  tenant_id!: string;

  @Column({ type: 'text' })
  session_id!: string;

  @Column({ type: 'text' })
  agent_id!: string;

  @Column({ type: 'text', nullable: true })
  user_id!: string | null;

  @Column({ type: 'text', nullable: true })
  channel!: string | null;

  @Column({ type: 'text', default: 'active' })
  status!: SessionStatus;

  @Column({ type: 'text', nullable: true })
  active_agent!: string | null;

  @Column({ type: 'text', nullable: true })
  next_state!: string | null;

  @Column({ type: 'text', nullable: true })
  last_route!: string | null;

  @Column({ type: 'text', nullable: true })
  last_intent!: string | null;

  @Column({ type: 'integer', default: 0 })
  turn_count!: number;

  @Column({ type: 'integer', default: 0 })
  head_version!: number;

  @Column({ type: 'text', nullable: true })
  lease_owner!: string | null;

  @Column({ type: 'timestamptz', nullable: true })
  lease_expires_at!: Date | null;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  created_at!: Date;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  updated_at!: Date;
}

@Entity({ name: 'checkpoints' })
export class CheckpointEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'checkpoints_pkey' })
  conversation_key!: string;

  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'checkpoints_pkey' })
  version!: number;

  /** The key of earlier releases, read by nothing since (dropped by a later release). */
  @Column({ type: 'bigint' })
  @Generated('increment')
  id!: string;

  @Column({ type: 'integer', nullable: true })
  parent_version!: number | null;

  /** The exact JSON text the checksum covers (format 2). */
  @Column({ type: 'text' })
  state!: string;

  @Column({ type: 'smallint' })
  format!: CheckpointFormat;

  @Column({ type: 'text' })
  checksum!: string;

  @Column({ type: 'integer' })
  size_bytes!: number;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  created_at!: Date;
}

@Entity({ name: 'turn_log' })
@Index('turn_log_created_idx', ['created_at'])
export class TurnLogEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'turn_log_pkey' })
  conversation_key!: string;

  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'turn_log_pkey' })
  version!: number;

  @Column({ type: 'integer' })
  turn!: number;

  @Column({ type: 'text' })
  tenant_id!: string;

  @Column({ type: 'text' })
  agent_id!: string;

  @Column({ type: 'jsonb', nullable: true })
  summary!: TurnSummary | null;

  /** Node timings of rows written by earlier releases (null since: they are AGENT_COMPLETED's `nodes`). */
  @Column({ type: 'jsonb', nullable: true })
  nodes!: NodeTiming[] | null;

  /** The events as JSON text (readers cast it to jsonb): an array of { name, payload }. */
  @Column({ type: 'text' })
  events!: string;

  /** The response of the processed message this row committed, as JSON text (null for other commits). */
  @Column({ type: 'text', nullable: true })
  response!: string | null;

  /** Streamed turns: ms from the turn's start to the first released answer text (null: none was released). */
  @Column({ type: 'integer', nullable: true })
  first_text_ms!: number | null;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  created_at!: Date;
}

@Entity({ name: 'processed_messages' })
@Index('processed_messages_created_idx', ['created_at'])
export class ProcessedMessageEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'processed_messages_pkey' })
  conversation_key!: string;

  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'processed_messages_pkey' })
  message_id!: string;

  @Column({ type: 'integer' })
  turn!: number;

  /** The turn log row (its version) that holds the response. */
  @Column({ type: 'integer', nullable: true })
  version!: number | null;

  /** The response itself, only in records written before it moved to the turn log row. */
  @Column({ type: 'jsonb', nullable: true })
  response!: Record<string, unknown> | null;

  /** The fingerprint of the request body (null for records of earlier releases). */
  @Column({ type: 'text', nullable: true })
  fingerprint!: string | null;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  created_at!: Date;
}

/**
 * A workflow run that failed: the failure events it published outside its turn (NOC.005,
 * workflow_telemetry.failed), at the position after the head version it ran on (`attempt` counts the failed runs
 * on that head from 1). Written with the release of its lease, so it is ordered between the commits around it.
 */
@Entity({ name: 'turn_failures' })
@Index('turn_failures_created_idx', ['created_at'])
export class TurnFailureEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'turn_failures_pkey' })
  conversation_key!: string;

  /** The head version the run started from (0 before the first commit). */
  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'turn_failures_pkey' })
  version!: number;

  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'turn_failures_pkey' })
  attempt!: number;

  /** The turn number the run would have had. */
  @Column({ type: 'integer' })
  turn!: number;

  @Column({ type: 'text' })
  tenant_id!: string;

  @Column({ type: 'text' })
  agent_id!: string;

  /** As JSON text: an array of { name, payload }, the payloads whole. */
  @Column({ type: 'text' })
  events!: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  created_at!: Date;
}

/**
 * One row per stored event: the view the TurnLog migration defines over turn_log. Not synchronized (TypeORM
 * keeps view definitions in its own metadata table, which the migrations do not use), so the drift check skips it.
 */
@ViewEntity({ name: 'session_events', synchronize: false })
export class SessionEventView {
  /** bigint (version * 65536 + seq), as text: the order of the conversation's events. */
  @ViewColumn()
  id!: string;

  @ViewColumn()
  conversation_key!: string;

  @ViewColumn()
  tenant_id!: string;

  @ViewColumn()
  session_id!: string;

  @ViewColumn()
  turn!: number;

  @ViewColumn()
  seq!: number;

  @ViewColumn()
  name!: string;

  @ViewColumn()
  payload!: Record<string, unknown>;

  @ViewColumn()
  created_at!: Date;

  /** The turn log row's `first_text_ms`, the same for every event of the row. */
  @ViewColumn()
  first_text_ms!: number | null;
}

export const CHECKPOINT_ENTITIES = [
  SessionEntity,
  CheckpointEntity,
  TurnLogEntity,
  ProcessedMessageEntity,
  TurnFailureEntity,
  SessionEventView,
];
