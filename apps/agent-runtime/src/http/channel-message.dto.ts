import {
  CHANNEL,
  IDENTIFIER,
  JsonObjectField,
  MESSAGE_TEXT,
  SESSION_ID,
  TextField,
  USER_ID,
} from './request-rules';

export class ChannelParamDto {
  @TextField(CHANNEL, { example: 'web' })
  channel!: string;
}

/** The body of POST /v1/channels/:channel/messages. */
export class ChannelMessageDto {
  @TextField(IDENTIFIER, { example: 'acme', description: 'Tenant id (letters, digits, _ . -)' })
  tenant_id!: string;

  @TextField(IDENTIFIER, { example: 'telecom_contas', description: 'Logical agent id from agents.yaml' })
  agent_id!: string;

  @TextField(SESSION_ID, { example: 'web-7f3a', description: 'Session id chosen by the channel' })
  session_id!: string;

  @TextField(MESSAGE_TEXT, { example: 'Qual é o meu plano?' })
  text!: string;

  @TextField(SESSION_ID, {
    optional: true,
    description: 'Client message id; a repeat returns the stored response',
  })
  message_id?: string;

  @TextField(USER_ID, {
    optional: true,
    description: 'Business identity of the person (long-term memory subject)',
  })
  user_id?: string;

  @JsonObjectField({
    optional: true,
    description: 'Free-form; JSON nesting is limited to 16 levels for the whole body',
  })
  metadata?: Record<string, unknown>;
}
