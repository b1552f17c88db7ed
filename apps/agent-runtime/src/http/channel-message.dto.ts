import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsNotEmpty, IsObject, IsOptional, IsString, Matches, MaxLength } from 'class-validator';

const IDENTIFIER = /^[A-Za-z0-9_.-]+$/;
const SESSION = /^[A-Za-z0-9_.:@-]+$/;

export class ChannelMessageDto {
  @ApiProperty({ example: 'acme', description: 'Tenant id (letters, digits, _ . -)' })
  @IsString()
  @MaxLength(64)
  @Matches(IDENTIFIER, { message: 'tenant_id may contain only letters, digits, _ . -' })
  tenant_id!: string;

  @ApiProperty({ example: 'telecom_contas', description: 'Logical agent id from agents.yaml' })
  @IsString()
  @MaxLength(64)
  @Matches(IDENTIFIER, { message: 'agent_id may contain only letters, digits, _ . -' })
  agent_id!: string;

  @ApiProperty({ example: 'web-7f3a', description: 'Session id chosen by the channel' })
  @IsString()
  @MaxLength(128)
  @Matches(SESSION, { message: 'session_id may contain only letters, digits, _ . : @ -' })
  session_id!: string;

  @ApiProperty({ example: 'Qual é o meu plano?' })
  @IsString()
  @IsNotEmpty()
  @Matches(/\S/, { message: 'text must not be blank' })
  @MaxLength(32000)
  text!: string;

  @ApiPropertyOptional({ description: 'Client message id; a repeat returns the stored response' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  @Matches(SESSION, { message: 'message_id may contain only letters, digits, _ . : @ -' })
  message_id?: string;

  @ApiPropertyOptional({ description: 'Business identity of the person (long-term memory subject)' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  user_id?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  @IsOptional()
  @IsObject()
  metadata?: Record<string, unknown>;
}
