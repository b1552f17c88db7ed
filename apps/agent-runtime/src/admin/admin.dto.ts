import { ApiBodyOptions, ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { ContinuitySignal, RouteDecision } from '@agent/contracts';
import { ContinuitySignalDto, RouteDecisionDto } from '../http/turn-response.dto';
import {
  DateTimeField,
  EnumField,
  freeText,
  IDENTIFIER,
  IntegerQuery,
  BooleanQuery,
  SESSION_ID,
  TextField,
  USER_ID,
} from '../http/request-rules';

export const SESSION_STATUSES = ['active', 'ended', 'handoff'] as const;

// ---- requests ----

export class SessionParamDto {
  @TextField(SESSION_ID, { example: 'web-7f3a' })
  session_id!: string;
}

export class TenantQueryDto {
  @TextField(IDENTIFIER, {
    optional: true,
    example: 'acme',
    description: 'Required with a global admin key; a tenant-scoped key defaults to its tenant',
  })
  tenant_id?: string;
}

/** `?limit=`: a page of 1 to 200 items, 50 when left out. */
export const PageLimit = (): PropertyDecorator =>
  IntegerQuery({ minimum: 1, maximum: 200 }, { optional: true, default: 50 });

export class ListSessionsQueryDto extends TenantQueryDto {
  @TextField(IDENTIFIER, { optional: true, example: 'telecom_contas' })
  agent_id?: string;

  @EnumField(SESSION_STATUSES, { optional: true })
  status?: (typeof SESSION_STATUSES)[number];

  @PageLimit()
  limit?: number;

  @DateTimeField({
    optional: true,
    description: 'Only sessions whose last activity (updated_at) is at or after this instant',
  })
  updated_after?: string;

  @DateTimeField({
    optional: true,
    description: 'Only sessions whose last activity (updated_at) is before this instant',
  })
  updated_before?: string;

  @TextField({ maxLength: 512 }, { optional: true, description: 'next_cursor of the previous page' })
  cursor?: string;
}

export class DeleteSessionQueryDto extends TenantQueryDto {
  @BooleanQuery({
    optional: true,
    default: true,
    description:
      'Also delete the long-term memory facts this session produced (false keeps them); the rest of the ' +
      "subject's memory stays: DELETE /v1/admin/memory/subjects/{subject_key} purges it",
  })
  purge_memory?: boolean;
}

export class MemorySubjectParamDto {
  @TextField(USER_ID, {
    example: 'cust-4821',
    description: 'The long-term memory subject: metadata.customer_key or user_id of the turns',
  })
  subject_key!: string;
}

export class MemoryPurgeQueryDto extends TenantQueryDto {
  @TextField(IDENTIFIER, {
    optional: true,
    example: 'telecom_contas',
    description: "Only this agent_id's memory of the subject; every agent of the tenant when absent",
  })
  agent_id?: string;
}

/** The body of an action that takes no field: left out, empty or `{}`; any field is refused. */
export class NoFieldsBodyDto {}

export const NO_FIELDS_BODY: ApiBodyOptions = { type: NoFieldsBodyDto, required: false };

export class AdminActionBodyDto {
  @TextField(freeText(500), {
    optional: true,
    example: 'customer asked by phone',
    description: 'Stored in the event payload',
  })
  reason?: string;
}

/** The body of end and handoff, which may be left out. */
export const ADMIN_ACTION_BODY: ApiBodyOptions = { type: AdminActionBodyDto, required: false };

// ---- responses ----

export class AdminKeyDto {
  @ApiProperty({ description: 'False when the server runs without API keys (every caller is let in)' })
  authentication!: boolean;

  @ApiProperty({
    type: [String],
    nullable: true,
    example: ['acme'],
    description: 'Tenants this key serves; null for a global key (every tenant)',
  })
  tenants!: string[] | null;

  @ApiProperty({
    type: String,
    nullable: true,
    example: '3f9a0c2b71de',
    description: 'Digest prefix identifying the key in logs and rate limits (not the key)',
  })
  key_id!: string | null;

  @ApiProperty({
    example: 'maria',
    description:
      'Who this key acts as in handoff claims: its name in ADMIN_API_KEYS (`name@tenant:key`), else `key:<key_id>`',
  })
  operator!: string;
}

export class SessionSummaryDto {
  @ApiProperty({ example: 'acme:web-7f3a' })
  conversation_key!: string;

  @ApiProperty({ example: 'acme' })
  tenant_id!: string;

  @ApiProperty({ example: 'web-7f3a' })
  session_id!: string;

  @ApiProperty({ example: 'telecom_contas' })
  agent_id!: string;

  @ApiProperty({ type: String, nullable: true })
  user_id!: string | null;

  @ApiProperty({ type: String, nullable: true, example: 'web' })
  channel!: string | null;

  @ApiProperty({ enum: SESSION_STATUSES })
  status!: string;

  @ApiProperty({ type: String, nullable: true })
  active_agent!: string | null;

  @ApiProperty({ type: String, nullable: true })
  next_state!: string | null;

  @ApiProperty({ type: String, nullable: true })
  last_route!: string | null;

  @ApiProperty({ type: String, nullable: true })
  last_intent!: string | null;

  @ApiProperty()
  turn_count!: number;

  @ApiProperty({ description: 'Newest checkpoint version' })
  head_version!: number;

  @ApiProperty({ description: 'A turn (or admin operation) holds the conversation lease right now' })
  busy!: boolean;

  @ApiProperty({ format: 'date-time' })
  created_at!: string;

  @ApiProperty({ format: 'date-time' })
  updated_at!: string;
}

export class SessionListDto {
  @ApiProperty({ type: [SessionSummaryDto] })
  items!: SessionSummaryDto[];

  @ApiProperty({ type: String, nullable: true, description: 'Pass as ?cursor= for the next page' })
  next_cursor!: string | null;
}

export class StateSummaryDto {
  @ApiProperty({ type: Number, nullable: true, description: 'Checkpoint version the summary was read from' })
  version!: number | null;

  @ApiProperty({ type: String, nullable: true })
  route!: string | null;

  @ApiProperty({ type: String, nullable: true })
  intent!: string | null;

  @ApiProperty({ type: String, nullable: true })
  domain!: string | null;

  @ApiProperty({ type: String, nullable: true })
  active_agent!: string | null;

  @ApiProperty({ type: String, nullable: true })
  next_state!: string | null;

  @ApiProperty({ type: String, nullable: true, enum: ['HUMAN_HANDOFF', 'END_SESSION'] })
  session_control!: string | null;

  @ApiProperty()
  session_ended!: boolean;

  @ApiProperty()
  human_handoff_requested!: boolean;

  @ApiProperty({ description: 'HUMAN_HANDOFF_MODE=hold keeps the bot silent until resume or end' })
  human_handoff_held!: boolean;

  @ApiProperty({ type: RouteDecisionDto, nullable: true })
  route_decision!: RouteDecision | null;

  @ApiProperty({
    type: ContinuitySignalDto,
    nullable: true,
    description: "The classifier's verdict of the turn",
  })
  continuity_signal!: ContinuitySignal | null;

  @ApiProperty({ type: String, nullable: true, description: 'Long-term memory subject' })
  subject_key!: string | null;

  @ApiProperty({ description: 'Messages kept in the bounded history' })
  history_messages!: number;
}

export class ContinuityDecisionDto {
  @ApiProperty({ enum: ['CONTINUE', 'ROUTE', 'HUMAN_HANDOFF', 'END_SESSION'] })
  decision!: string;

  @ApiProperty({ type: Number, nullable: true })
  confidence!: number | null;

  @ApiProperty()
  accepted!: boolean;

  @ApiProperty({
    type: String,
    nullable: true,
    enum: ['below_threshold', 'invalid_output', 'timeout', 'error', 'no_active_agent'],
  })
  fallback_reason!: string | null;

  @ApiProperty({ type: Number, nullable: true })
  latency_ms!: number | null;

  @ApiProperty({ type: String, nullable: true, description: "The classifier's stated reason" })
  reason!: string | null;
}

export class TurnDecisionDto {
  @ApiProperty()
  turn!: number;

  @ApiProperty({ type: String, nullable: true, format: 'date-time' })
  at!: string | null;

  @ApiProperty({ type: String, nullable: true })
  route!: string | null;

  @ApiProperty({ type: String, nullable: true })
  intent!: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    enum: ['continuity', 'llm', 'keyword', 'state_policy', 'fallback', 'supervisor', 'guardrail'],
  })
  method!: string | null;

  @ApiProperty({ type: Number, nullable: true })
  confidence!: number | null;

  @ApiProperty({ description: 'Continuity kept the active agent; the router was not called' })
  route_bypassed!: boolean;

  @ApiProperty({ type: ContinuityDecisionDto, nullable: true })
  continuity!: ContinuityDecisionDto | null;

  @ApiProperty({ type: String, nullable: true, enum: ['HUMAN_HANDOFF', 'END_SESSION'] })
  session_control!: string | null;

  @ApiProperty({ description: 'Blocked by a guardrail, an ended session or a held handoff' })
  blocked!: boolean;

  @ApiProperty({ type: Number, nullable: true, description: 'Workflow latency of the turn' })
  latency_ms!: number | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    description:
      "Streamed turns: ms from the turn's start to the first released answer text (null: not streamed, or no text released before the turn completed)",
  })
  first_text_ms!: number | null;
}

export class AdminActionRecordDto {
  @ApiProperty({ enum: ['end', 'handoff', 'resume'] })
  action!: string;

  @ApiProperty({ type: String, nullable: true })
  reason!: string | null;

  @ApiProperty({ type: String, nullable: true, format: 'date-time' })
  at!: string | null;

  @ApiProperty({ description: 'Turn count when the operator acted' })
  after_turn!: number;
}

export class SessionDetailDto {
  @ApiProperty({ type: SessionSummaryDto })
  session!: SessionSummaryDto;

  @ApiProperty({ type: StateSummaryDto })
  state!: StateSummaryDto;

  @ApiProperty({ type: [TurnDecisionDto], description: 'From the stored events, oldest first' })
  turns!: TurnDecisionDto[];

  @ApiProperty({ type: [AdminActionRecordDto] })
  admin_actions!: AdminActionRecordDto[];
}

export class SessionEventDto {
  @ApiProperty({ description: 'Monotonic id (string: bigint)' })
  id!: string;

  @ApiProperty()
  turn!: number;

  @ApiProperty({ description: 'Order within the commit that stored it' })
  seq!: number;

  @ApiProperty({ example: 'router.decision' })
  name!: string;

  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: 'Carries tenant_id, agent_id, session_id, conversation_key, turn, at',
  })
  payload!: Record<string, unknown>;

  @ApiProperty({ format: 'date-time' })
  created_at!: string;
}

export class SessionEventListDto {
  @ApiProperty({ type: [SessionEventDto] })
  items!: SessionEventDto[];
}

export class CheckpointInfoDto {
  @ApiProperty()
  version!: number;

  @ApiProperty({ type: Number, nullable: true })
  parent_version!: number | null;

  @ApiProperty({ description: 'SHA-256 of the canonical state and the parent version' })
  checksum!: string;

  @ApiProperty()
  size_bytes!: number;

  @ApiProperty({ format: 'date-time' })
  created_at!: string;

  @ApiProperty({ description: 'The stored checksum matches the stored state' })
  valid!: boolean;
}

export class CheckpointListDto {
  @ApiProperty({
    type: [CheckpointInfoDto],
    description: 'Newest first (compaction keeps CHECKPOINT_RETENTION)',
  })
  items!: CheckpointInfoDto[];
}

export class HandoffClaimDto {
  @ApiProperty({ example: 'maria@contact-center' })
  claimed_by!: string;

  @ApiProperty({ format: 'date-time' })
  claimed_at!: string;
}

export class AdminActionResultDto {
  @ApiProperty({ enum: ['end', 'handoff', 'resume', 'claim'] })
  action!: string;

  @ApiProperty({ description: 'False when the session already was in that state: nothing was written' })
  changed!: boolean;

  @ApiProperty({ description: 'Head checkpoint version after the operation' })
  version!: number;

  @ApiProperty({ type: String, nullable: true, description: 'END_SESSION_MESSAGE or HUMAN_HANDOFF_MESSAGE' })
  message!: string | null;

  @ApiProperty({ type: [String], example: ['session.end.requested'], description: 'Events stored' })
  events!: string[];

  @ApiProperty({ type: SessionSummaryDto })
  session!: SessionSummaryDto;

  @ApiProperty({ type: StateSummaryDto })
  state!: StateSummaryDto;

  @ApiPropertyOptional({
    type: HandoffClaimDto,
    nullable: true,
    description: 'claim only: who holds the conversation now',
  })
  claim?: HandoffClaimDto | null;
}

export class MemoryPurgeResultDto {
  @ApiProperty()
  tenant_id!: string;

  @ApiProperty({ type: String, nullable: true, description: 'Null: every agent of the tenant' })
  agent_id!: string | null;

  @ApiProperty()
  subject_key!: string;

  @ApiProperty({ description: 'Long-term memory items removed' })
  memory_items_deleted!: number;
}

export class DeleteResultDto {
  @ApiProperty()
  conversation_key!: string;

  @ApiProperty({ example: true })
  deleted!: boolean;

  @ApiProperty({
    type: Number,
    nullable: true,
    description:
      'Long-term memory items this session produced, removed with it; null with purge_memory=false',
  })
  memory_items_deleted!: number | null;

  @ApiProperty({ type: String, nullable: true })
  memory_subject_key!: string | null;
}
