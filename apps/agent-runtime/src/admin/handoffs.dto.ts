import { ApiProperty, ApiPropertyOptional, PickType } from '@nestjs/swagger';
import { HandoffClaimDto, PageLimit, SessionSummaryDto, TenantQueryDto } from './admin.dto';

export class HandoffListQueryDto extends TenantQueryDto {
  @PageLimit()
  limit?: number;
}

export class HandoffMessageDto {
  @ApiProperty({ enum: ['user', 'assistant'] })
  role!: string;

  @ApiProperty()
  content!: string;

  @ApiPropertyOptional()
  turn?: number;
}

export class WaitingHandoffDto extends PickType(SessionSummaryDto, [
  'conversation_key',
  'tenant_id',
  'session_id',
  'agent_id',
  'channel',
  'user_id',
] as const) {
  @ApiProperty({ format: 'date-time', description: 'When the latest handoff request was made' })
  requested_at!: string;

  @ApiProperty({ description: 'Seconds since requested_at' })
  waiting_seconds!: number;

  @ApiProperty({ description: "The classifier's or the operator's reason" })
  reason!: string;

  @ApiProperty({ example: 'continuity', description: '`continuity` (the customer asked) or `admin`' })
  source!: string;

  @ApiProperty({ type: String, nullable: true, description: 'The agent that served the customer before' })
  active_agent!: string | null;

  @ApiProperty({ type: String, nullable: true, description: 'The intent of its last turn' })
  intent!: string | null;

  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    description: 'The operation the customer was in the middle of (dropped by the handoff)',
  })
  pending_transaction!: Record<string, unknown> | null;

  @ApiProperty({ type: String, nullable: true, description: 'The message that asked for a person' })
  user_text!: string | null;

  @ApiProperty({ type: [HandoffMessageDto], description: 'The last messages before the request' })
  last_messages!: HandoffMessageDto[];

  @ApiProperty({ description: 'Customer messages since the request' })
  messages_since!: number;

  @ApiProperty({ type: HandoffClaimDto, nullable: true, description: 'Null while nobody has taken it' })
  claim!: HandoffClaimDto | null;
}

export class HandoffListDto {
  @ApiProperty({ type: [WaitingHandoffDto], description: 'Oldest request first' })
  items!: WaitingHandoffDto[];
}
