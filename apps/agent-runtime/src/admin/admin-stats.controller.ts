import { Controller, Get, Query, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { TurnStatsQuery } from '@agent/checkpoint';
import { ConfigFilesService, parseEnvNamespace } from '@agent/config';
import { LlmService } from '@agent/llm';
import { Access } from '../auth/access.decorator';
import { principalOf } from '../auth/request-principal';
import { ApiErrors } from '../http/api-errors.decorator';
import { RequestValidationError } from '../app.errors';
import { tenantScope } from './admin-tenant';
import { StatsQueryDto, StickinessStatsDto } from './stats.dto';
import { DEFAULT_STATS_DAYS, defaultBucket, MAX_STATS_DAYS, statsView } from './stats-view';

const DAY_MS = 86_400_000;

/** Stickiness and cost over a period, for the operator console and anyone who would rather not scrape metrics. */
@ApiTags('admin')
@ApiBearerAuth()
@Access('admin')
@ApiErrors(400, 401, 403, 429, 503)
@Controller('v1/admin/stats')
export class AdminStatsController {
  /** The profile the continuity classifier calls, whose cost stickiness must earn back. */
  private readonly classifierProfile = parseEnvNamespace('continuity').ROUTE_STICKINESS_LLM_PROFILE;

  constructor(
    private readonly stats: TurnStatsQuery,
    private readonly files: ConfigFilesService,
    private readonly llm: LlmService,
  ) {}

  @Get()
  @ApiOperation({
    summary:
      'Stickiness and cost over a period: turns, bypass rate, router calls avoided, fallback reasons, shadow agreement, tokens and latency per LLM profile',
  })
  @ApiOkResponse({ type: StickinessStatsDto })
  async get(@Query() query: StatsQueryDto, @Req() request: FastifyRequest): Promise<StickinessStatsDto> {
    const tenantId = tenantScope(principalOf(request), query.tenant_id);
    const to = query.to ? new Date(query.to) : new Date();
    const from = query.from ? new Date(query.from) : new Date(to.getTime() - DEFAULT_STATS_DAYS * DAY_MS);
    if (from.getTime() >= to.getTime()) {
      throw new RequestValidationError([{ field: 'from', errors: ['from must be before to'] }]);
    }
    if (to.getTime() - from.getTime() > MAX_STATS_DAYS * DAY_MS) {
      throw new RequestValidationError([
        { field: 'from', errors: [`the period may span at most ${MAX_STATS_DAYS} days`] },
      ]);
    }
    const bucket = query.bucket ?? defaultBucket(from, to);
    const routerProfiles = {
      global: this.files.routing.router.llm_profile,
      agents: Object.fromEntries(
        this.files.routings.agentIds().map((id) => [id, this.files.routings.for(id).router.llm_profile]),
      ),
    };
    const stats = await this.stats.periodStats({
      tenant_id: tenantId,
      from,
      to,
      bucket,
      router_profiles: routerProfiles,
    });
    return statsView(
      stats,
      { tenant_id: tenantId ?? null, from, to, bucket },
      {
        currency: this.files.llmProfiles.prices?.currency ?? null,
        priceOf: (profile) => this.llm.priceOf(profile),
        classifierProfile: this.classifierProfile,
        routerProfiles: [routerProfiles.global, ...Object.values(routerProfiles.agents)],
      },
    );
  }
}
