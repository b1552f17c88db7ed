import {
  Body,
  Controller,
  ForbiddenException,
  HttpCode,
  Logger,
  Param,
  Post,
  Req,
  Res,
} from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiExtraModels,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import { trace } from '@opentelemetry/api';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ConfigFilesService } from '@agent/config';
import { TracingService } from '@agent/observability';
import { conversationKeyOf } from '@agent/contracts';
import { TurnOutcome, TurnService } from '@agent/workflow';
import { Access } from '../auth/access.decorator';
import { allowsTenant } from '../auth/api-keys';
import { principalOf } from '../auth/request-principal';
import { ApiErrors } from './api-errors.decorator';
import { ChannelMessageDto, ChannelParamDto } from './channel-message.dto';
import { RequestValidationError } from '../app.errors';
import { classifyError, errorBody } from './errors';
import { TurnEventStream, wantsEventStream } from './turn-event-stream';
import { TurnResponseDto } from './turn-response.dto';

@ApiTags('channels')
@ApiBearerAuth()
@Access('channel')
@Controller('v1/channels')
export class ChannelMessagesController {
  private readonly logger = new Logger(ChannelMessagesController.name);

  constructor(
    private readonly turns: TurnService,
    private readonly files: ConfigFilesService,
    private readonly tracing: TracingService,
  ) {}

  @Post(':channel/messages')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Run one turn of a conversation',
    description:
      'With `Accept: text/event-stream` the answer streams as server-sent events, each answer text released only after the output rails passed it; the last event, `turn.completed`, carries exactly the JSON body of the non-streamed call (docs/api.md#streaming-the-answer).',
  })
  @ApiExtraModels(TurnResponseDto)
  @ApiOkResponse({
    description: 'The turn; with `Accept: text/event-stream`, its events',
    content: {
      'application/json': { schema: { $ref: getSchemaPath(TurnResponseDto) } },
      'text/event-stream': {
        schema: {
          type: 'string',
          description:
            'Server-sent events, each `event: <name>` and `data: <JSON>`: `route` (route, intent, active_agent, route_bypassed, continuity_signal, session_control, blocked), `answer.delta` ({text}), `answer.tripped` ({code, action}: an output rail stopped the answer; nothing more of it is released), `answer.replaced` ({answer}: the final answer does not continue the released text), then `turn.completed` (exactly the JSON body, TurnResponseDto) or `error` (the error envelope, ErrorEnvelopeDto)',
        },
        example:
          'event: route\ndata: {"route":"billing_agent","intent":"invoice","active_agent":"billing_agent","route_bypassed":false,"continuity_signal":null,"session_control":null,"blocked":false}\n\nevent: answer.delta\ndata: {"text":"Sua fatura de março"}\n\nevent: turn.completed\ndata: {"answer":"Sua fatura de março ficou em R$ 120,00.", "...": "..."}\n\n',
      },
    },
  })
  @ApiErrors(400, 401, 403, 409, 413, 415, 429, 503)
  async post(
    @Param() params: ChannelParamDto,
    @Body() body: ChannelMessageDto,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
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
    const conversationKey = conversationKeyOf(body.tenant_id, body.session_id);
    const stream = wantsEventStream(request) ? new TurnEventStream(reply) : undefined;
    let outcome: TurnOutcome;
    try {
      // The turn's root span: node, LLM and MCP spans open inside it and become its children.
      outcome = await this.tracing.span(
        'agent.turn',
        {
          'request.id': requestId,
          'conversation.key': conversationKey,
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
            ...(stream ? { stream } : {}),
          });
          trace.getActiveSpan()?.setAttributes({
            'turn.number': result.response.turn,
            'turn.route': result.response.route ?? 'none',
            'turn.replayed': result.replayed,
          });
          return result;
        },
      );
    } catch (error) {
      // Before the first event the error filter answers with the error's status; after it, an event must.
      if (!stream?.started) throw error;
      const answer = classifyError(error);
      if (answer.status >= 500) {
        this.logger.error({ err: error, request_id: requestId }, 'turn failed mid-stream');
      }
      stream.fail(errorBody(answer.code, answer.message, requestId, answer.details));
      return;
    }
    if (outcome.replayed) void reply.header('Idempotent-Replay', 'true');
    if (stream) {
      stream.complete(outcome.response);
      return;
    }
    await reply.status(200).send(outcome.response);
  }
}
