import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IDENTIFIER_RULE, SESSION_ID_RULE, USER_ID_RULE } from './request-rules';

/** The body of POST /v1/channels/:channel/messages; its schema (OpenAPI) is also what validates requests. */
export class ChannelMessageDto {
  @ApiProperty({ ...IDENTIFIER_RULE, example: 'acme', description: 'Tenant id (letters, digits, _ . -)' })
  tenant_id!: string;

  @ApiProperty({
    ...IDENTIFIER_RULE,
    example: 'telecom_contas',
    description: 'Logical agent id from agents.yaml',
  })
  agent_id!: string;

  @ApiProperty({ ...SESSION_ID_RULE, example: 'web-7f3a', description: 'Session id chosen by the channel' })
  session_id!: string;

  @ApiProperty({ example: 'Qual é o meu plano?', minLength: 1, maxLength: 32000, pattern: '\\S' })
  text!: string;

  @ApiPropertyOptional({
    ...SESSION_ID_RULE,
    description: 'Client message id; a repeat returns the stored response',
  })
  message_id?: string;

  @ApiPropertyOptional({
    ...USER_ID_RULE,
    description: 'Business identity of the person (long-term memory subject)',
  })
  user_id?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'Free-form; JSON nesting is limited to 16 levels for the whole body',
  })
  metadata?: Record<string, unknown>;
}
