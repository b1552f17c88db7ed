import { Body, Controller, Get, HttpCode, Param, Post, Query, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { DeadLetterService } from '@agent/events';
import { Access } from '../auth/access.decorator';
import { principalOf } from '../auth/request-principal';
import { ApiErrors } from '../http/api-errors.decorator';
import { tenantScope } from './admin-tenant';
import { NO_FIELDS_BODY, NoFieldsBodyDto } from './admin.dto';
import {
  DeadLetterDto,
  DeadLetterListDto,
  DeadLetterListQueryDto,
  DeadLetterParamDto,
} from './dead-letters.dto';

/** Webhook deliveries that failed every attempt (docs/integration.md#webhooks). */
@ApiTags('admin')
@ApiBearerAuth()
@Access('admin')
@ApiErrors(400, 401, 403, 429, 503)
@Controller('v1/admin/events/dead-letters')
export class AdminEventsController {
  constructor(private readonly deadLetters: DeadLetterService) {}

  @Get()
  @ApiOperation({ summary: 'Webhook deliveries that failed every attempt, newest first' })
  @ApiOkResponse({ type: DeadLetterListDto })
  async list(
    @Query() query: DeadLetterListQueryDto,
    @Req() request: FastifyRequest,
  ): Promise<DeadLetterListDto> {
    const tenantId = tenantScope(principalOf(request), query.tenant_id);
    return {
      items: await this.deadLetters.list({
        tenantId,
        redelivered: query.redelivered,
        limit: query.limit ?? 50,
      }),
    };
  }

  @Post(':id/redeliver')
  @HttpCode(200)
  @ApiOperation({
    summary:
      "Send a dead letter again now, signed, with its original webhook-id, to its tenant's endpoint; one redelivery of a letter at a time (409 REDELIVERY_IN_PROGRESS), and one already redelivered is answered as it is; 502 WEBHOOK_DELIVERY_FAILED when the endpoint refuses it",
  })
  @ApiBody(NO_FIELDS_BODY)
  @ApiOkResponse({ type: DeadLetterDto })
  @ApiErrors(404, 409, 502)
  redeliver(
    @Param() params: DeadLetterParamDto,
    @Body() _body: NoFieldsBodyDto,
    @Req() request: FastifyRequest,
  ): Promise<DeadLetterDto> {
    return this.deadLetters.redeliver(params.id, principalOf(request).tenants);
  }
}
