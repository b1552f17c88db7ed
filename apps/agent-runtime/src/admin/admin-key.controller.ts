import { Controller, Get, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { Access } from '../auth/access.decorator';
import { operatorOf } from '../auth/api-keys';
import { principalOf } from '../auth/request-principal';
import { ApiErrors } from '../http/api-errors.decorator';
import { AdminKeyDto } from './admin.dto';

/**
 * What the presented admin key may see, so a client (the console) can check a key at sign-in and offer
 * only the tenants the key serves. It reveals nothing the key could not already learn by calling the API.
 */
@ApiTags('admin')
@ApiBearerAuth()
@Access('admin')
@ApiErrors(401, 403, 429)
@Controller('v1/admin/me')
export class AdminKeyController {
  @Get()
  @ApiOperation({
    summary: 'The tenants the presented admin key serves (null: every tenant) and who it acts as in claims',
    description:
      'Asked without a key it answers only when authentication is off (`authentication: false`: any key signs in), and 401 otherwise; the console says so on its sign-in page.',
  })
  @ApiOkResponse({ type: AdminKeyDto })
  me(@Req() request: FastifyRequest): AdminKeyDto {
    const principal = principalOf(request);
    return {
      authentication: principal.kind !== 'anonymous',
      tenants: principal.tenants === null ? null : [...principal.tenants].sort(),
      key_id: principal.key_id,
      operator: operatorOf(principal),
    };
  }
}
