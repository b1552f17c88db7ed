import { CodedError } from '@agent/contracts';

export const RAG_ERROR_CODES = [
  'RAG_INVALID_CHUNKING',
  'RAG_DIRECTORY_NOT_FOUND',
  'RAG_NOT_A_DIRECTORY',
  'RAG_INVALID_DOCUMENT',
  'RAG_INVALID_LANGUAGE',
  'RAG_INVALID_NAMESPACE',
  'RAG_SERVE_ONLY',
  'RAG_MISCONFIGURED',
] as const;
export type RagErrorCode = (typeof RAG_ERROR_CODES)[number];

/** An ingestion precondition that failed (bad chunking settings, missing directory): never a retrieval result. */
export class RagIngestError extends CodedError<RagErrorCode> {}

/**
 * The RAG configuration cannot work (vector search without an embedding model or pgvector, a knowledge directory
 * that is missing): a start-up error, never an empty retrieval during a conversation.
 */
export class RagConfigError extends CodedError<RagErrorCode> {}

/** Why a knowledge base served only refuses to be written. */
export const SERVE_ONLY_REFUSAL =
  'the knowledge base is configured for serving only (RAG_SERVE_ONLY=true): ingestion and publication are refused; ingest from a process without it (a release job)';
