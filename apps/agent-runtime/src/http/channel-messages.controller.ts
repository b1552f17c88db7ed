import { Body, Controller, ForbiddenException, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { trace } from '@opentelemetry/api';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ConfigFilesService } from '@agent/config';
import { TracingService } from '@agent/observability';
import { conversationKeyOf } from '@agent/contracts';
import { TurnResponse, TurnService } from '@agent/workflow';
import { Access } from '../auth/access.decorator';
import { allowsTenant } from '../auth/api-keys';
import { principalOf } from '../auth/request-principal';
import { ApiErrors } from './api-errors.decorator';
import { ChannelMessageDto, ChannelParamDto } from './channel-message.dto';
import { RequestValidationError } from '../app.errors';
import { TurnResponseDto } from './turn-response.dto';

@ApiTags('channels')
@ApiBearerAuth()
@Access('channel')
@Controller('v1/channels')
export class ChannelMessagesController {
  constructor(
    private readonly turns: TurnService,
    private readonly files: ConfigFilesService,
    private readonly tracing: TracingService,
  ) {}

  @Post(':channel/messages')
  @HttpCode(200)
  @ApiOperation({ summary: 'Run one turn of a conversation' })
  @ApiOkResponse({ type: TurnResponseDto })
  @ApiErrors(400, 401, 403, 409, 413, 415, 429, 503)
  async post(
    @Param() params: ChannelParamDto,
    @Body() body: ChannelMessageDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<TurnResponse> {
    if (!allowsTenant(principalOf(request), body.tenant_id)) {
      throw new ForbiddenException('this channel key may not post for this tenant');
    }
    if (!Object.hasOwn(this.files.agents.agents, body.agent_id)) {
      throw new RequestValidationError([
        {
          field: 'agent_id',
          errors: [`unknown agent_id; configured: ${Object.keys(this.files.agents.agents).join(', ')}`],
        },
      ]);
    }
    const requestId = String(request.id);
    const key = conversationKeyOf(body.tenant_id, body.session_id);
    // The turn's root span: node, LLM and MCP spans open inside it and become its children.
    const outcome = await this.tracing.span(
      'agent.turn',
      {
        'request.id': requestId,
        'conversation.key': key,
        'tenant.id': body.tenant_id,
        'agent.id': body.agent_id,
        channel: params.channel,
      },
      async () => {
        const result = await this.turns.handle({
          request_id: requestId,
          channel: params.channel,
          tenant_id: body.tenant_id,
          agent_id: body.agent_id,
          session_id: body.session_id,
          text: body.text,
          message_id: body.message_id,
          user_id: body.user_id,
          metadata: body.metadata,
        });
        trace.getActiveSpan()?.setAttributes({
          'turn.number': result.response.turn,
          'turn.route': result.response.route ?? 'none',
          'turn.replayed': result.replayed,
        });
        return result;
      },
    );
    if (outcome.replayed) void reply.header('Idempotent-Replay', 'true');
    return outcome.response;
  }
}
