import { ApiExtraModels, ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';

/** One invalid field of a 400 VALIDATION_FAILED, with every problem it has. */
export class FieldErrorDto {
  @ApiProperty({
    example: 'session_id',
    description: 'The field, parameter or path segment (dotted when nested)',
  })
  field!: string;

  @ApiProperty({ type: [String], example: ['session_id may contain only letters, digits, _ . : @ -'] })
  errors!: string[];
}

@ApiExtraModels(FieldErrorDto)
export class ErrorDetailDto {
  @ApiProperty({ example: 'VALIDATION_FAILED', description: 'Stable machine-readable code' })
  code!: string;

  @ApiProperty({ example: 'request validation failed' })
  message!: string;

  @ApiPropertyOptional({
    description:
      'VALIDATION_FAILED: the field errors; other codes: their facts (SESSION_STATE_CONFLICT `{status}`, ' +
      'HANDOFF_CLAIMED `{claimed_by, claimed_at}`, WEBHOOK_DELIVERY_FAILED `{attempts, last_error}`)',
    oneOf: [
      { type: 'array', items: { $ref: getSchemaPath(FieldErrorDto) } },
      { type: 'object', additionalProperties: true },
    ],
  })
  details?: FieldErrorDto[] | Record<string, unknown>;
}

/** Every error response: `{error: {code, message, details?}, request_id}` (docs/api.md). */
export class ErrorEnvelopeDto {
  @ApiProperty({ type: ErrorDetailDto })
  error!: ErrorDetailDto;

  @ApiProperty({
    example: '6f1c2b1e-4d1a-4b7e-9a55-0d7e2f1c9a10',
    description: 'Also in the x-request-id header',
  })
  request_id!: string;
}
