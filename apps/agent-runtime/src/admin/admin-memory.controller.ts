import { Controller, Delete, Param, Query, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { TracingService } from '@agent/observability';
import { SessionAdminService } from '@agent/workflow';
import { Access } from '../auth/access.decorator';
import { principalOf } from '../auth/request-principal';
import { ApiErrors } from '../http/api-errors.decorator';
import { RequestValidationError } from '../app.errors';
import { MemoryPurgeQueryDto, MemoryPurgeResultDto, MemorySubjectParamDto } from './admin.dto';
import { tenantScope } from './admin-tenant';

/**
 * Long-term memory for privacy requests (docs/security.md): deleting a session removes only what it produced;
 * forgetting a person is this explicit, subject-wide call, confined to one tenant.
 */
@ApiTags('admin')
@ApiBearerAuth()
@Access('admin')
@ApiErrors(400, 401, 403, 429, 503)
@Controller('v1/admin/memory/subjects')
export class AdminMemoryController {
  constructor(
    private readonly admin: SessionAdminService,
    private readonly tracing: TracingService,
  ) {}

  @Delete(':subject_key')
  @ApiOperation({
    summary:
      'Forget a subject: every long-term memory fact of the subject in the tenant (or of one agent_id), and the webhook dead letters of the sessions whose user_id is the subject',
  })
  @ApiOkResponse({ type: MemoryPurgeResultDto })
  purge(
    @Param() params: MemorySubjectParamDto,
    @Query() query: MemoryPurgeQueryDto,
    @Req() request: FastifyRequest,
  ): Promise<MemoryPurgeResultDto> {
    const tenantId = tenantScope(principalOf(request), query.tenant_id);
    if (tenantId === undefined) {
      throw new RequestValidationError([
        { field: 'tenant_id', errors: ['tenant_id is required with a key that serves every tenant'] },
      ]);
    }
    return this.tracing.span(
      'admin.memory.purge',
      { 'request.id': String(request.id), 'tenant.id': tenantId },
      () => this.admin.purgeSubject(tenantId, params.subject_key, query.agent_id ?? null),
    );
  }
}
