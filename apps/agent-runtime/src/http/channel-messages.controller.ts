import { Body, Controller, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ConfigFilesService } from '@agent/config';
import { TurnResponse, TurnService } from '@agent/workflow';
import { ChannelMessageDto } from './channel-message.dto';
import { RequestValidationError } from './errors';

const CHANNEL = /^[a-z0-9_-]{1,32}$/;

@ApiTags('channels')
@Controller('v1/channels')
export class ChannelMessagesController {
  constructor(
    private readonly turns: TurnService,
    private readonly files: ConfigFilesService,
  ) {}

  @Post(':channel/messages')
  @HttpCode(200)
  @ApiOperation({ summary: 'Run one turn of a conversation' })
  async post(
    @Param('channel') channel: string,
    @Body() body: ChannelMessageDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<TurnResponse> {
    const problems: { field: string; errors: string[] }[] = [];
    if (!CHANNEL.test(channel))
      problems.push({ field: 'channel', errors: ['channel must match [a-z0-9_-]{1,32}'] });
    if (!(body.agent_id in this.files.agents.agents)) {
      problems.push({
        field: 'agent_id',
        errors: [`unknown agent_id; configured: ${Object.keys(this.files.agents.agents).join(', ')}`],
      });
    }
    if (problems.length > 0) throw new RequestValidationError(problems);
    const outcome = await this.turns.handle({
      request_id: String(request.id),
      channel,
      tenant_id: body.tenant_id,
      agent_id: body.agent_id,
      session_id: body.session_id,
      text: body.text,
      message_id: body.message_id,
      user_id: body.user_id,
      metadata: body.metadata,
    });
    if (outcome.replayed) void reply.header('Idempotent-Replay', 'true');
    return outcome.response;
  }
}
