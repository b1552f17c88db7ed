import { ApiProperty } from '@nestjs/swagger';
import type { UnavailableDependency } from '@agent/contracts';
import { UnavailableDependencyDto } from '../http/turn-response.dto';
import { AdminActionRecordDto, SessionEventDto, SessionSummaryDto, TurnDecisionDto } from './admin.dto';

export class GuardrailRailDto {
  @ApiProperty({ example: 'PINJ' })
  code!: string;

  @ApiProperty({ enum: ['allow', 'sanitize', 'observe', 'retry', 'handover', 'block'], example: 'allow' })
  action!: string;

  @ApiProperty({ type: String, nullable: true })
  reason!: string | null;

  @ApiProperty({ type: Number, nullable: true })
  latency_ms!: number | null;
}

export class GuardrailVerdictDto {
  @ApiProperty({ enum: ['input', 'output'] })
  stage!: string;

  @ApiProperty({ type: Number, nullable: true, description: 'Output supervisor pass (0 = first answer)' })
  attempt!: number | null;

  @ApiProperty()
  blocked!: boolean;

  @ApiProperty({ type: [String], description: 'Codes of the rails that did not let the text through' })
  codes!: string[];

  @ApiProperty({ type: [GuardrailRailDto] })
  rails!: GuardrailRailDto[];
}

export class NodeTimingDto {
  @ApiProperty({ example: 'route' })
  node!: string;

  @ApiProperty()
  duration_ms!: number;

  @ApiProperty({ enum: ['ok', 'error'] })
  outcome!: string;
}

/** What one LLM profile cost the turn (the calls summed), so a turn reads the same however it was stored. */
export class ModelUsageDto {
  @ApiProperty({ example: 'route_continuity' })
  profile!: string;

  @ApiProperty({ example: 'openai.gpt-4.1-mini', description: 'The model of its latest call' })
  model!: string;

  @ApiProperty()
  calls!: number;

  @ApiProperty({ description: 'Calls whose outcome was not ok' })
  failed!: number;

  @ApiProperty()
  prompt_tokens!: number;

  @ApiProperty()
  completion_tokens!: number;

  @ApiProperty({ description: 'Time spent in the calls of this profile, summed' })
  latency_ms!: number;
}

export class CheckpointRecoveryDto {
  @ApiProperty({
    enum: ['skip_corrupt', 'clean_start', 'version_gap'],
    description:
      'A corrupt checkpoint was skipped, none was usable and the conversation started clean, or versions below the head were missing',
  })
  kind!: string;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'The skipped version (skip_corrupt) or the newest missing one (version_gap)',
  })
  version!: number | null;

  @ApiProperty({ type: String, nullable: true })
  reason!: string | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'Versions skipped: corrupt ones (clean_start) or missing ones (version_gap)',
  })
  skipped!: number | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'The next stored version below the missing ones (version_gap; null: none)',
  })
  found_version!: number | null;
}

export class TimelineTurnDto extends TurnDecisionDto {
  @ApiProperty({
    type: String,
    nullable: true,
    description: "The customer's message; null once it left the bounded history",
  })
  user_message!: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The answer sent; null once it left the history',
  })
  answer!: string | null;

  @ApiProperty({ type: [GuardrailVerdictDto] })
  guardrails!: GuardrailVerdictDto[];

  @ApiProperty({ type: [NodeTimingDto], description: 'Workflow nodes in execution order' })
  nodes!: NodeTimingDto[];

  @ApiProperty({
    type: [ModelUsageDto],
    description: 'Model calls of the turn per LLM profile, in order of first call',
  })
  model_usage!: ModelUsageDto[];

  @ApiProperty({
    type: [UnavailableDependencyDto],
    description: 'The models and MCP servers the turn could not use, as its response said',
  })
  unavailable!: UnavailableDependency[];

  @ApiProperty({ type: [CheckpointRecoveryDto] })
  recoveries!: CheckpointRecoveryDto[];

  @ApiProperty({ type: [AdminActionRecordDto], description: 'Operator actions taken after this turn' })
  admin_actions!: AdminActionRecordDto[];

  @ApiProperty({ type: [SessionEventDto], description: 'Every stored event of the turn, in commit order' })
  events!: SessionEventDto[];
}

export class SessionTimelineDto {
  @ApiProperty({ type: SessionSummaryDto })
  session!: SessionSummaryDto;

  @ApiProperty({
    type: Number,
    nullable: true,
    description:
      'The newest checkpoint version that passes the integrity check (below session.head_version: the newer ones are corrupt and the next turn recovers from this one; null: none is usable)',
  })
  state_version!: number | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'Oldest turn whose messages the bounded history still holds (null: none)',
  })
  messages_from_turn!: number | null;

  @ApiProperty({ type: [TimelineTurnDto], description: 'Oldest first' })
  turns!: TimelineTurnDto[];
}
