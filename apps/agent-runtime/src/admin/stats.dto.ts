import { ApiProperty } from '@nestjs/swagger';
import { DateTimeField, EnumField } from '../http/request-rules';
import { TenantQueryDto } from './admin.dto';

export const STATS_BUCKETS = ['hour', 'day'] as const;

export class StatsQueryDto extends TenantQueryDto {
  @DateTimeField({ optional: true, description: 'Start of the period (inclusive); default: to − 7 days' })
  from?: string;

  @DateTimeField({ optional: true, description: 'End of the period (exclusive); default: now' })
  to?: string;

  @EnumField(STATS_BUCKETS, {
    optional: true,
    description: 'Width of the series buckets (UTC); default: hour up to two days, else day',
  })
  bucket?: (typeof STATS_BUCKETS)[number];
}

export class ContinuityDecisionCountDto {
  @ApiProperty({ enum: ['CONTINUE', 'ROUTE', 'HUMAN_HANDOFF', 'END_SESSION'] })
  decision!: string;

  @ApiProperty({
    description: 'False: overruled (below the threshold, invalid output, …) and the router decided',
  })
  accepted!: boolean;

  @ApiProperty()
  count!: number;
}

export class FallbackReasonCountDto {
  @ApiProperty({ enum: ['below_threshold', 'invalid_output', 'timeout', 'error', 'no_active_agent'] })
  reason!: string;

  @ApiProperty()
  count!: number;
}

export class ShadowAgreementDto {
  @ApiProperty({ description: 'Turns where the router also ran beside an accepted CONTINUE (shadow rate)' })
  compared!: number;

  @ApiProperty({ description: 'Of those, turns where the router chose the agent continuity kept' })
  agreed!: number;

  @ApiProperty({ type: Number, nullable: true })
  agreement_rate!: number | null;
}

export class LatencyPercentilesDto {
  @ApiProperty({ type: Number, nullable: true })
  p50!: number | null;

  @ApiProperty({ type: Number, nullable: true })
  p95!: number | null;
}

export class ProfileUsageDto {
  @ApiProperty({ example: 'route_continuity' })
  profile!: string;

  @ApiProperty()
  calls!: number;

  @ApiProperty({ description: 'Calls whose outcome was not ok (timeout, error, invalid output, …)' })
  failures!: number;

  @ApiProperty()
  prompt_tokens!: number;

  @ApiProperty({ description: 'Of prompt_tokens, those the provider served from its prompt cache' })
  cached_prompt_tokens!: number;

  @ApiProperty()
  completion_tokens!: number;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: "Median time a turn spent in this profile's calls (summed within the turn), ms",
  })
  latency_p50_ms!: number | null;

  @ApiProperty({ type: Number, nullable: true, description: '95th percentile of the same, ms' })
  latency_p95_ms!: number | null;
}

export class StatsBucketDto {
  @ApiProperty({ format: 'date-time' })
  start!: string;

  @ApiProperty()
  turns!: number;

  @ApiProperty()
  bypassed_turns!: number;

  @ApiProperty()
  router_calls!: number;
}

export class StatsCostDto {
  @ApiProperty({
    type: String,
    nullable: true,
    example: 'USD',
    description:
      'Currency of the `prices` of llm_profiles.yaml; null: no prices configured, every amount is null',
  })
  currency!: string | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: "What the priced profiles' calls of the period cost (unpriced ones are left out)",
  })
  total!: number | null;

  @ApiProperty({ type: Number, nullable: true, description: "What the continuity classifier's calls cost" })
  classifier!: number | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    description:
      'What one router model call cost on average in the period; null when none was made or priced',
  })
  router_call!: number | null;

  @ApiProperty({ type: Number, nullable: true, description: 'router_calls_avoided × router_call' })
  saved!: number | null;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'saved − classifier: what stickiness saved after paying for its own classifier',
  })
  net_saved!: number | null;

  @ApiProperty({
    type: [String],
    description: 'Profiles with calls in the period whose current model has no price',
  })
  unpriced_profiles!: string[];
}

export class StickinessStatsDto {
  @ApiProperty({ type: String, nullable: true, description: 'null: every tenant (global key only)' })
  tenant_id!: string | null;

  @ApiProperty({ format: 'date-time' })
  from!: string;

  @ApiProperty({ format: 'date-time' })
  to!: string;

  @ApiProperty({ enum: STATS_BUCKETS })
  bucket!: string;

  @ApiProperty({ description: 'Turns committed in the period' })
  turns!: number;

  @ApiProperty({ description: 'Turns the continuity classifier was asked about' })
  continuity_evaluated!: number;

  @ApiProperty({ description: 'Turns an accepted CONTINUE kept with the active agent (route_bypassed)' })
  bypassed_turns!: number;

  @ApiProperty({ type: Number, nullable: true, description: 'bypassed_turns / turns' })
  bypass_rate!: number | null;

  @ApiProperty({ description: "Calls of the router's model profile" })
  router_calls!: number;

  @ApiProperty({
    description: 'Bypassed turns with no router model call in the same turn (what stickiness saved)',
  })
  router_calls_avoided!: number;

  @ApiProperty({ type: [ContinuityDecisionCountDto] })
  decisions!: ContinuityDecisionCountDto[];

  @ApiProperty({ type: [FallbackReasonCountDto] })
  fallback_reasons!: FallbackReasonCountDto[];

  @ApiProperty({ type: ShadowAgreementDto })
  shadow!: ShadowAgreementDto;

  @ApiProperty({ type: LatencyPercentilesDto, description: 'Workflow latency per turn, ms' })
  turn_latency_ms!: LatencyPercentilesDto;

  @ApiProperty({ type: [ProfileUsageDto], description: 'Model calls, tokens and latency per LLM profile' })
  profiles!: ProfileUsageDto[];

  @ApiProperty({
    type: StatsCostDto,
    description:
      'Money over the period: the tokens of each profile priced at the model it names now (llm_profiles.yaml `prices`), input and output per million tokens',
  })
  cost!: StatsCostDto;

  @ApiProperty({ type: [StatsBucketDto], description: 'Every bucket of the period, oldest first' })
  series!: StatsBucketDto[];
}
