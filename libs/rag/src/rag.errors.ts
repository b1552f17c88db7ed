import { CodedError } from '@agent/contracts';

export const RAG_ERROR_CODES = [
  'RAG_INVALID_CHUNKING',
  'RAG_DIRECTORY_NOT_FOUND',
  'RAG_NOT_A_DIRECTORY',
  'RAG_INVALID_DOCUMENT',
  'RAG_INVALID_LANGUAGE',
  'RAG_INVALID_NAMESPACE',
  'RAG_NO_LLM',
] as const;
export type RagErrorCode = (typeof RAG_ERROR_CODES)[number];

/** An ingestion precondition that failed (bad chunking settings, missing directory): never a retrieval result. */
export class RagIngestError extends CodedError<Exclude<RagErrorCode, 'RAG_NO_LLM'>> {}

/** A precondition of RagService that is not met (generateAnswer without an LLM). */
export class RagError extends CodedError<RagErrorCode> {
  constructor(message: string) {
    super('RAG_NO_LLM', message);
  }
}
