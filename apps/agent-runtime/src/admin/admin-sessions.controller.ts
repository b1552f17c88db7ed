import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { CheckpointService } from '@agent/checkpoint';
import { conversationKeyOf, ConversationKey } from '@agent/contracts';
import { TracingService } from '@agent/observability';
import { HandoffDeskService } from '@agent/events';
import {
  HandoffClaimedError,
  SessionAdminResult,
  SessionAdminService,
  SessionNotFoundError,
} from '@agent/workflow';
import { Access } from '../auth/access.decorator';
import { operatorOf, Principal } from '../auth/api-keys';
import { principalOf } from '../auth/request-principal';
import { singleTenant, tenantScope } from './admin-tenant';
import { ApiErrors } from '../http/api-errors.decorator';
import { RequestValidationError } from '../app.errors';
import {
  ADMIN_ACTION_BODY,
  AdminActionBodyDto,
  AdminActionResultDto,
  CheckpointListDto,
  DeleteResultDto,
  DeleteSessionQueryDto,
  ListSessionsQueryDto,
  NO_FIELDS_BODY,
  NoFieldsBodyDto,
  SessionDetailDto,
  SessionEventListDto,
  SessionListDto,
  SessionParamDto,
  TenantQueryDto,
} from './admin.dto';
import {
  adminActions,
  checkpointView,
  eventView,
  sessionSummary,
  stateSummary,
  turnDecisions,
} from './session-view';
import { oldestMessageTurn, timelineTurns } from './session-timeline';
import { SessionTimelineDto } from './timeline.dto';

/**
 * The admin API (docs/api.md). A global admin key names the tenant with `?tenant_id=`; a tenant-scoped key
 * is confined to its tenant, and another tenant's session is a 404 for it, exactly like a missing one.
 */
@ApiTags('admin')
@ApiBearerAuth()
@Access('admin')
@ApiErrors(400, 401, 403, 404, 429, 503)
@Controller('v1/admin/sessions')
export class AdminSessionsController {
  constructor(
    private readonly checkpoints: CheckpointService,
    private readonly admin: SessionAdminService,
    private readonly desk: HandoffDeskService,
    private readonly tracing: TracingService,
  ) {}

  @Get()
  @ApiOperation({ summary: 'List sessions (newest activity first) with filters and cursor pagination' })
  @ApiOkResponse({ type: SessionListDto })
  async list(@Query() query: ListSessionsQueryDto, @Req() request: FastifyRequest): Promise<SessionListDto> {
    const tenantId = tenantScope(principalOf(request), query.tenant_id);
    const page = await this.checkpoints.listSessions({
      tenant_id: tenantId,
      agent_id: query.agent_id,
      status: query.status,
      updated_after: query.updated_after,
      updated_before: query.updated_before,
      limit: query.limit ?? 50,
      cursor: query.cursor,
    });
    const now = Date.now();
    return { items: page.items.map((row) => sessionSummary(row, now)), next_cursor: page.next_cursor };
  }

  @Get(':session_id')
  @ApiOperation({ summary: 'Session detail: state summary and the routing decision of every turn' })
  @ApiOkResponse({ type: SessionDetailDto })
  async detail(
    @Param() params: SessionParamDto,
    @Query() query: TenantQueryDto,
    @Req() request: FastifyRequest,
  ): Promise<SessionDetailDto> {
    const key = this.addressedKey(request, params.session_id, query.tenant_id);
    const session = await this.existing(key);
    const loaded = await this.checkpoints.loadLatest(key);
    const events = await this.checkpoints.listEvents(key);
    return {
      session: sessionSummary(session),
      state: stateSummary(loaded?.version ?? null, loaded?.state ?? {}),
      turns: turnDecisions(events),
      admin_actions: adminActions(events),
    };
  }

  @Get(':session_id/timeline')
  @ApiOperation({
    summary:
      'Every turn: messages, route, continuity verdict, router method, guardrail verdicts, node timings, model calls, recoveries, operator actions and events',
  })
  @ApiOkResponse({ type: SessionTimelineDto })
  async timeline(
    @Param() params: SessionParamDto,
    @Query() query: TenantQueryDto,
    @Req() request: FastifyRequest,
  ): Promise<SessionTimelineDto> {
    const key = this.addressedKey(request, params.session_id, query.tenant_id);
    const session = await this.existing(key);
    const loaded = await this.checkpoints.loadLatest(key);
    const head = loaded?.state ?? {};
    const events = await this.checkpoints.listEvents(key);
    return {
      session: sessionSummary(session),
      state_version: loaded?.version ?? null,
      messages_from_turn: oldestMessageTurn(head),
      turns: timelineTurns(events, head),
    };
  }

  @Get(':session_id/events')
  @ApiOperation({ summary: 'Stored events of the session, in commit order' })
  @ApiOkResponse({ type: SessionEventListDto })
  async events(
    @Param() params: SessionParamDto,
    @Query() query: TenantQueryDto,
    @Req() request: FastifyRequest,
  ): Promise<SessionEventListDto> {
    const key = this.addressedKey(request, params.session_id, query.tenant_id);
    await this.existing(key);
    const rows = await this.checkpoints.listEvents(key);
    return { items: rows.map(eventView) };
  }

  @Get(':session_id/checkpoints')
  @ApiOperation({ summary: 'Checkpoint versions of the session with their integrity status' })
  @ApiOkResponse({ type: CheckpointListDto })
  async checkpointList(
    @Param() params: SessionParamDto,
    @Query() query: TenantQueryDto,
    @Req() request: FastifyRequest,
  ): Promise<CheckpointListDto> {
    const key = this.addressedKey(request, params.session_id, query.tenant_id);
    await this.existing(key);
    const rows = await this.checkpoints.listCheckpoints(key);
    return { items: rows.map(checkpointView) };
  }

  @Post(':session_id/end')
  @HttpCode(200)
  @ApiOperation({
    summary:
      "End the session (END_SESSION contract, event source admin); a claimed one only with the claimer's key or a global key",
  })
  @ApiBody(ADMIN_ACTION_BODY)
  @ApiOkResponse({ type: AdminActionResultDto })
  @ApiErrors(409)
  async end(
    @Param() params: SessionParamDto,
    @Query() query: TenantQueryDto,
    @Body() body: AdminActionBodyDto,
    @Req() request: FastifyRequest,
  ): Promise<AdminActionResultDto> {
    const key = this.addressedKey(request, params.session_id, query.tenant_id);
    await this.refuseOthersClaim(key, principalOf(request));
    return this.act('end', key, request, () => this.admin.end(key, String(request.id), body.reason ?? ''));
  }

  @Post(':session_id/handoff')
  @HttpCode(200)
  @ApiOperation({ summary: 'Hand the session to a human (HUMAN_HANDOFF contract, event source admin)' })
  @ApiBody(ADMIN_ACTION_BODY)
  @ApiOkResponse({ type: AdminActionResultDto })
  @ApiErrors(409)
  handoff(
    @Param() params: SessionParamDto,
    @Query() query: TenantQueryDto,
    @Body() body: AdminActionBodyDto,
    @Req() request: FastifyRequest,
  ): Promise<AdminActionResultDto> {
    const key = this.addressedKey(request, params.session_id, query.tenant_id);
    return this.act('handoff', key, request, () =>
      this.admin.handoff(key, String(request.id), body.reason ?? ''),
    );
  }

  @Post(':session_id/resume')
  @HttpCode(200)
  @ApiOperation({
    summary:
      "Back to the bot after a human: clears a held handoff; a claimed one only with the claimer's key or a global key",
  })
  @ApiBody(NO_FIELDS_BODY)
  @ApiOkResponse({ type: AdminActionResultDto })
  @ApiErrors(409)
  async resume(
    @Param() params: SessionParamDto,
    @Query() query: TenantQueryDto,
    @Body() _body: NoFieldsBodyDto,
    @Req() request: FastifyRequest,
  ): Promise<AdminActionResultDto> {
    const key = this.addressedKey(request, params.session_id, query.tenant_id);
    await this.refuseOthersClaim(key, principalOf(request));
    return this.act('resume', key, request, () => this.admin.resume(key, String(request.id)));
  }

  @Post(':session_id/claim')
  @HttpCode(200)
  @ApiOperation({
    summary:
      "Take a conversation waiting for a person, as the key's operator (its name in ADMIN_API_KEYS, else key:<key_id>); claiming one someone else holds is 409 HANDOFF_CLAIMED",
  })
  @ApiBody(NO_FIELDS_BODY)
  @ApiOkResponse({ type: AdminActionResultDto })
  @ApiErrors(409)
  claim(
    @Param() params: SessionParamDto,
    @Query() query: TenantQueryDto,
    @Body() _body: NoFieldsBodyDto,
    @Req() request: FastifyRequest,
  ): Promise<AdminActionResultDto> {
    const key = this.addressedKey(request, params.session_id, query.tenant_id);
    const operator = operatorOf(principalOf(request));
    return this.act('claim', key, request, () => this.admin.claim(key, String(request.id), operator));
  }

  @Delete(':session_id')
  @ApiOperation({
    summary:
      'Purge the session: checkpoints, events, idempotency records, webhook dead letters and (unless purge_memory=false) the long-term memory facts it produced',
  })
  @ApiOkResponse({ type: DeleteResultDto })
  async remove(
    @Param() params: SessionParamDto,
    @Query() query: DeleteSessionQueryDto,
    @Req() request: FastifyRequest,
  ): Promise<DeleteResultDto> {
    const key = this.addressedKey(request, params.session_id, query.tenant_id);
    const result = await this.tracing.span(
      'admin.session.delete',
      { 'request.id': String(request.id), 'conversation.key': key },
      () => this.admin.delete(key, { keepMemory: query.purge_memory === false }),
    );
    return { ...result, deleted: true };
  }

  private async act(
    action: string,
    key: ConversationKey,
    request: FastifyRequest,
    work: () => Promise<SessionAdminResult>,
  ): Promise<AdminActionResultDto> {
    const result = await this.tracing.span(
      `admin.session.${action}`,
      { 'request.id': String(request.id), 'conversation.key': key },
      work,
    );
    return {
      action: result.action,
      changed: result.changed,
      version: result.version,
      message: result.changed && result.action !== 'resume' ? (result.state.answer ?? null) : null,
      events: result.events.map((event) => event.name),
      session: sessionSummary(result.session),
      state: stateSummary(result.version, result.state),
      ...(result.claim === undefined ? {} : { claim: result.claim }),
    };
  }

  /**
   * While a conversation waiting for a person is claimed, only the claimer's key or a global key may give it back
   * or end it: another key gets the claim's 409.
   */
  private async refuseOthersClaim(key: ConversationKey, principal: Principal): Promise<void> {
    if (principal.tenants === null) return;
    const session = await this.checkpoints.getSession(key);
    if (session?.status !== 'handoff') return;
    const claim = await this.desk.currentClaim(key);
    if (claim !== null && claim.claimed_by !== operatorOf(principal)) {
      throw new HandoffClaimedError(key, claim);
    }
  }

  /** The conversation key this principal may address; another tenant's session is indistinguishable from none. */
  private addressedKey(
    request: FastifyRequest,
    sessionId: string,
    requested: string | undefined,
  ): ConversationKey {
    const principal = principalOf(request);
    if (principal.tenants === null) {
      if (requested === undefined) {
        throw new RequestValidationError([
          { field: 'tenant_id', errors: ['tenant_id is required with a key that serves every tenant'] },
        ]);
      }
      return conversationKeyOf(requested, sessionId);
    }
    const tenantId = requested ?? singleTenant(principal);
    if (!principal.tenants.includes(tenantId)) {
      throw new SessionNotFoundError(conversationKeyOf(tenantId, sessionId));
    }
    return conversationKeyOf(tenantId, sessionId);
  }

  private async existing(key: ConversationKey) {
    const session = await this.checkpoints.getSession(key);
    if (!session || session.turn_count === 0) throw new SessionNotFoundError(key);
    return session;
  }
}
