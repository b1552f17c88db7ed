import { CodedError } from '@agent/contracts';

export const RAG_ERROR_CODES = [
  'RAG_INVALID_CHUNKING',
  'RAG_DIRECTORY_NOT_FOUND',
  'RAG_NOT_A_DIRECTORY',
  'RAG_INVALID_DOCUMENT',
  'RAG_INVALID_LANGUAGE',
  'RAG_INVALID_NAMESPACE',
] as const;
export type RagErrorCode = (typeof RAG_ERROR_CODES)[number];

/** An ingestion precondition that failed (bad chunking settings, missing directory): never a retrieval result. */
export class RagIngestError extends CodedError<RagErrorCode> {}
