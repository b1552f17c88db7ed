import { ApiProperty } from '@nestjs/swagger';
import { TRANSACTION_STATUSES, TransactionStatus } from '@agent/contracts';

/** 200 of POST /v1/channels/:channel/messages (docs/api.md). */
export class TurnResponseDto {
  @ApiProperty({ example: 'web-7f3a' })
  session_id!: string;

  @ApiProperty({ example: 'acme:web-7f3a', description: '`${tenant_id}:${session_id}`' })
  conversation_key!: string;

  @ApiProperty({ description: 'The client message id, or a generated one' })
  message_id!: string;

  @ApiProperty({ example: 1, description: '1-based number of the turn in its conversation' })
  turn!: number;

  @ApiProperty()
  answer!: string;

  @ApiProperty({ type: String, nullable: true, example: 'billing_agent' })
  route!: string | null;

  @ApiProperty({ type: String, nullable: true })
  intent!: string | null;

  @ApiProperty({ type: String, nullable: true })
  domain!: string | null;

  @ApiProperty({ type: String, nullable: true })
  active_agent!: string | null;

  @ApiProperty({ description: 'True when continuity kept the active agent and the router was not called' })
  route_bypassed!: boolean;

  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    description:
      '{route, agent, intent, domain, mcp_tools, confidence, method, reason, next_state, route_bypassed, handoff?, metadata}',
  })
  route_decision!: Record<string, unknown> | null;

  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    description: '{decision, confidence, accepted, reason, fallback_reason, latency_ms, profile_name}',
  })
  continuity_signal!: Record<string, unknown> | null;

  @ApiProperty({ type: String, nullable: true, enum: ['HUMAN_HANDOFF', 'END_SESSION'] })
  session_control!: string | null;

  @ApiProperty()
  session_ended!: boolean;

  @ApiProperty()
  human_handoff_requested!: boolean;

  @ApiProperty({ type: String, nullable: true })
  next_state!: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    enum: TRANSACTION_STATUSES,
    description:
      'The operation this turn worked on: the status it waits in, else the one it ended with on this turn; null when the turn touched none',
  })
  transaction_status!: TransactionStatus | null;

  @ApiProperty()
  blocked!: boolean;

  @ApiProperty({ description: 'Server-side latency of the turn' })
  latency_ms!: number;
}
