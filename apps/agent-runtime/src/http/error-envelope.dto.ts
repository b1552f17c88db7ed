import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class ErrorDetailDto {
  @ApiProperty({ example: 'VALIDATION_FAILED', description: 'Stable machine-readable code' })
  code!: string;

  @ApiProperty({ example: 'request validation failed' })
  message!: string;

  @ApiPropertyOptional({
    description: 'Field errors for 400 validation failures: [{field, errors[]}]',
    type: 'array',
    items: { type: 'object', additionalProperties: true },
  })
  details?: unknown;
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
