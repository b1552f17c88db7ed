import type { RagRetrieval } from '@agent/contracts';
import type { RagContext } from '@agent/rag';

/*
 * The domain agents' events besides the transaction engine's (docs/api.md#events), declared by the module that
 * emits them; `<DOMAIN>` is the agent's domain in capitals.
 */
declare module '@agent/contracts' {
  interface EventPayloads {
    /** A field's `extract_pattern` does not compile: the field is left to the extraction model. */
    'mcp.parameter.regex_extract_failed': {
      tool_name: string;
      field: string;
      pattern: string;
      error: string;
    };
    /** The extraction model gave no usable values: the agent asks the customer again. */
    'mcp.parameter.llm_extract_failed': { tool_name: string; fields: string[]; error: string };
    /** `IC.<DOMAIN>_RAG_CONTEXT_EVALUATED`: what the agent's retrieval gave, after the retrieval rails. */
    [name: `IC.${string}_RAG_CONTEXT_EVALUATED`]: {
      namespace: string;
      status: RagContext['status'];
      document_count: number;
      technical_error: boolean;
    };
    /** `IC.<DOMAIN>_RAG_CONTEXT_RETRIEVED`: the passages the prompt received. */
    [name: `IC.${string}_RAG_CONTEXT_RETRIEVED`]: {
      namespace: string;
      document_count: number;
      top_document_ids: RagRetrieval['top_document_ids'];
    };
  }
}
