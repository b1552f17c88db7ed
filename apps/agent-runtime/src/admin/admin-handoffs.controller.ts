import { Controller, Get, Query, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { HandoffDeskService } from '@agent/events';
import { Access } from '../auth/access.decorator';
import { principalOf } from '../auth/request-principal';
import { ApiErrors } from '../http/api-errors.decorator';
import { tenantScope } from './admin-tenant';
import { HandoffListDto, HandoffListQueryDto } from './handoffs.dto';

/** The handoff queue: conversations waiting for a person, for a contact center's desk (docs/integration.md). */
@ApiTags('admin')
@ApiBearerAuth()
@Access('admin')
@ApiErrors(400, 401, 403, 429, 503)
@Controller('v1/admin/handoffs')
export class AdminHandoffsController {
  constructor(private readonly desk: HandoffDeskService) {}

  @Get()
  @ApiOperation({
    summary:
      'Sessions waiting for a person, oldest request first, with waiting time, the pick-up summary and the claim',
  })
  @ApiOkResponse({ type: HandoffListDto })
  async list(@Query() query: HandoffListQueryDto, @Req() request: FastifyRequest): Promise<HandoffListDto> {
    const tenantId = tenantScope(principalOf(request), query.tenant_id);
    return { items: await this.desk.waiting({ tenantId, limit: query.limit ?? 50 }) };
  }
}
