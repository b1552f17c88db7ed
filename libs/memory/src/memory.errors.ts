import { CodedError } from '@agent/contracts';
import type { StructuredFailureReason } from '@agent/llm';

export const MEMORY_ERROR_CODES = ['MEMORY_EXTRACTION_FAILED'] as const;
export type MemoryErrorCode = (typeof MEMORY_ERROR_CODES)[number];

/** The extraction call gave no fact list; the workflow records it and the turn goes on. */
export class MemoryExtractionError extends CodedError<MemoryErrorCode> {
  constructor(
    readonly reason: StructuredFailureReason,
    detail: string,
  ) {
    super(
      'MEMORY_EXTRACTION_FAILED',
      reason === 'invalid_output'
        ? `memory extraction returned an invalid output: ${detail}`
        : `memory extraction failed (${reason}): ${detail}`,
    );
  }
}
