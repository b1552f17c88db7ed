import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ErrorEnvelopeDto } from './error-envelope.dto';

const DESCRIPTIONS: Record<number, string> = {
  400: 'Validation failed (field errors in error.details)',
  401: 'Missing or unknown API key',
  403: 'The key may not act for this tenant or call this kind of endpoint',
  404: 'No such session (for this key: another tenant is indistinguishable from none)',
  409: 'Conflict: agent mismatch, conversation busy (Retry-After) or session state',
  413: 'Body larger than BODY_LIMIT_BYTES',
  415: 'Body not application/json in UTF-8',
  429: 'Rate limit of the key exceeded (Retry-After)',
  502: 'The webhook endpoint refused the redelivery (details: attempts, last_error)',
  503: 'Database unavailable (Retry-After)',
};

/** Documents the error envelope for the given statuses. */
export function ApiErrors(...statuses: number[]): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({ status, description: DESCRIPTIONS[status] ?? 'Error', type: ErrorEnvelopeDto }),
    ),
  );
}
