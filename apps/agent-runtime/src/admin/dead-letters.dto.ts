import { ApiProperty } from '@nestjs/swagger';
import { BooleanQuery, DIGITS_ID, TextField } from '../http/request-rules';
import { PageLimit, TenantQueryDto } from './admin.dto';

export class DeadLetterListQueryDto extends TenantQueryDto {
  @PageLimit()
  limit?: number;

  @BooleanQuery({
    optional: true,
    description: 'true: only the ones redelivered since; false: only the ones still undelivered',
  })
  redelivered?: boolean;
}

export class DeadLetterParamDto {
  @TextField(DIGITS_ID, { example: '42' })
  id!: string;
}

export class EventDocumentDto {
  @ApiProperty({ example: 'acme:s-1:7:3', description: '<conversation_key>:<version>:<position>' })
  id!: string;

  @ApiProperty({ example: 'session.human_handoff.requested', description: 'The event name' })
  type!: string;

  @ApiProperty({ format: 'date-time' })
  timestamp!: string;

  @ApiProperty({ type: 'object', additionalProperties: true, description: 'The payload as stored' })
  data!: Record<string, unknown>;
}

export class DeadLetterDto {
  @ApiProperty({ example: '42' })
  id!: string;

  @ApiProperty({ example: 'webhook:acme-crm', description: '`webhook:<endpoint id>` of webhooks.yaml' })
  destination!: string;

  @ApiProperty({ example: 'acme' })
  tenant_id!: string;

  @ApiProperty({ example: 'acme:s-1:7:3' })
  event_id!: string;

  @ApiProperty({ example: 'session.human_handoff.requested' })
  event_name!: string;

  @ApiProperty({ type: EventDocumentDto, description: 'The body that was sent' })
  body!: EventDocumentDto;

  @ApiProperty({ description: 'Attempts made, redeliveries included' })
  attempts!: number;

  @ApiProperty({ example: 'HTTP 500', description: 'What the last failed attempt got' })
  last_error!: string;

  @ApiProperty({ format: 'date-time' })
  created_at!: string;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'Null until a redelivery succeeds',
  })
  redelivered_at!: string | null;
}

export class DeadLetterListDto {
  @ApiProperty({ type: [DeadLetterDto], description: 'Newest first' })
  items!: DeadLetterDto[];
}
