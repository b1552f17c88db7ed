import { z } from 'zod';
import { nodeNameSchema } from './route-decision';

/**
 * What the stages of one turn record in the state (`guardrail_decisions`, `judge_results`, `mcp_results`,
 * `rag_results`, `long_term_memories`, `context`): contracts own the shapes, so the producing library writes
 * them and every consumer reads them as written. They are part of the checkpoint: add fields, never rename them.
 */

/** What a rail asks the runtime to do with the text it evaluated (the reference's RailAction values). */
export const RAIL_ACTIONS = ['allow', 'sanitize', 'observe', 'retry', 'handover', 'block'] as const;
export type RailAction = (typeof RAIL_ACTIONS)[number];

export const RAIL_STAGES = ['input', 'output', 'retrieval', 'tool', 'memory'] as const;
export type RailStage = (typeof RAIL_STAGES)[number];

/**
 * What a rail or a judge saw (matches, counts, the model's confidence): read by people in the console and the
 * events, never by another node, so each rail keeps its own keys; the values are JSON scalars or lists of them.
 */
export const diagnosticsSchema = z.record(
  z.string(),
  z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(z.union([z.string(), z.number()]))]),
);
export type Diagnostics = z.output<typeof diagnosticsSchema>;

/** One rail's outcome as recorded in `guardrail_decisions` and `output_supervisor_results`. */
export const railDecisionSchema = z.object({
  code: z.string(),
  stage: z.enum(RAIL_STAGES),
  allowed: z.boolean(),
  action: z.enum(RAIL_ACTIONS),
  reason: z.string(),
  guidance: z.string().optional(),
  /** Set when the rail threw or timed out and its fail_closed policy decided. */
  error: z.string().optional(),
  latency_ms: z.number(),
  metadata: diagnosticsSchema,
  /** Output supervisor only: the regeneration the decision judged (0: the agent's first answer). */
  attempt: z.number().int().optional(),
});
export type RailDecision = z.output<typeof railDecisionSchema>;

/** One judge's verdict on the turn (`judge_results`); the supervisor review acts on the enforced failures. */
export const judgeResultSchema = z.object({
  name: z.string(),
  type: z.enum(['llm', 'deterministic']),
  threshold: z.number(),
  enforce: z.boolean(),
  score: z.number(),
  passed: z.boolean(),
  reason: z.string(),
  latency_ms: z.number(),
  /** The judge could not decide (model error, invalid verdict); its fail_closed policy set the score. */
  error: z.string().optional(),
  metadata: diagnosticsSchema,
});
export type JudgeResult = z.output<typeof judgeResultSchema>;

/** What the agents see of an MCP call: never an exception. */
export const mcpToolResultSchema = z.object({
  tool_name: z.string(),
  server: z.string().nullable(),
  ok: z.boolean(),
  /** The tool's structured answer (the tool's own JSON); on a business error it carries the error payload too. */
  result: z.unknown(),
  error: z.string().nullable(),
  latency_ms: z.number(),
});
export type McpToolResult = z.output<typeof mcpToolResultSchema>;

/** A transactional call that did not run because it still needs parameters: recorded beside the turn's calls. */
export const parametersRequestSchema = z.object({
  ok: z.literal(true),
  executed: z.literal(false),
  collecting_parameters: z.literal(true),
  tool_name: z.string(),
  transaction_status: z.literal('COLLECTING_PARAMETERS'),
  missing_parameters: z.array(z.string()),
});
export type ParametersRequest = z.output<typeof parametersRequestSchema>;

/** One entry of `mcp_results`. */
export const mcpResultSchema = z.union([mcpToolResultSchema, parametersRequestSchema]);
export type McpResult = z.output<typeof mcpResultSchema>;

/** A tool call that ran (or was refused), as opposed to a request for parameters. */
export function isToolCallResult(result: McpResult): result is McpToolResult {
  return !('collecting_parameters' in result);
}

/** One passage a retrieval returned (`rag_results`). */
export const retrievedChunkSchema = z.object({
  chunk_id: z.number(),
  document_id: z.number(),
  source: z.string(),
  title: z.string(),
  chunk_index: z.number().int(),
  content: z.string(),
  score: z.number(),
});
export type RetrievedChunk = z.output<typeof retrievedChunkSchema>;

export const SEARCH_MODES = ['vector', 'full_text'] as const;
/** `vector`: pgvector cosine similarity over the `embedding` profile's vectors; else Postgres full-text. */
export type SearchMode = (typeof SEARCH_MODES)[number];

/** A retrieval that ran: its passages are in `rag_results`, their ids and scores here. */
export const ragRetrievalSchema = z.object({
  enabled: z.literal(true),
  attempted: z.literal(true),
  status: z.enum(['executed', 'empty']),
  provider: z.string(),
  search_mode: z.enum(SEARCH_MODES),
  /** Why a vector-capable retrieval fell back to full-text (the query could not be embedded). */
  vector_error: z.string().optional(),
  namespace: z.string(),
  query: z.string(),
  latency_ms: z.number(),
  document_count: z.number().int(),
  top_document_ids: z.array(z.number()),
  top_scores: z.array(z.number()),
  /** Passages the retrieval rails blocked. */
  withheld_passages: z.number().int().optional(),
});
export type RagRetrieval = z.output<typeof ragRetrievalSchema>;

/**
 * The outcome of an agent's retrieval (`context.rag`, the reference's `_retrieve_rag_context` metadata): ran,
 * disabled, or the technical error object that lets the agent tell a failure from an empty search.
 */
export const ragOutcomeSchema = z.discriminatedUnion('status', [
  ragRetrievalSchema,
  z.object({
    enabled: z.literal(false),
    attempted: z.literal(false),
    status: z.literal('disabled'),
    reason: z.literal('rag_disabled'),
    provider: z.string(),
  }),
  z.object({
    enabled: z.literal(false),
    attempted: z.literal(true),
    failed: z.literal(true),
    technical_error: z.literal(true),
    technical_error_in_rag: z.literal(true),
    status: z.literal('error'),
    error: z.string(),
    provider: z.string(),
    namespace: z.string(),
    query: z.string(),
  }),
]);
export type RagOutcome = z.output<typeof ragOutcomeSchema>;

/** `context`: the agent that answered the turn and what its retrieval did. */
export const agentContextSchema = z.object({
  agent: nodeNameSchema,
  rag: ragOutcomeSchema.optional(),
});
export type AgentContext = z.output<typeof agentContextSchema>;

/** Where a long-term fact came from; rows written before a key existed lack it. */
export const memoryProvenanceSchema = z
  .object({
    /** The LLM profile that extracted the fact. */
    extractor: z.string(),
    turn: z.number().int().nullable(),
  })
  .partial();
export type MemoryProvenance = z.output<typeof memoryProvenanceSchema>;

/** One long-term fact loaded for the turn (`long_term_memories`), timestamps as ISO strings. */
export const longTermMemorySchema = z.object({
  memory_id: z.string(),
  tenant_id: z.string(),
  agent_id: z.string(),
  subject_key: z.string(),
  category: z.string(),
  key: z.string(),
  value: z.string(),
  confidence: z.number(),
  source_session_id: z.string().nullable(),
  source_message_id: z.string().nullable(),
  metadata: memoryProvenanceSchema,
  created_at: z.string(),
  updated_at: z.string(),
});
export type LongTermMemory = z.output<typeof longTermMemorySchema>;
