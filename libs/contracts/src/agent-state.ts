import { z } from 'zod';
import {
  BLOCKED_ROUTE,
  continuitySignalSchema,
  nodeNameSchema,
  routeDecisionSchema,
  SESSION_CONTROLS,
} from './route-decision';
import { operationResultSchema, transactionEvidenceSchema, transactionSliceSchema } from './transaction';
import {
  agentContextSchema,
  judgeResultSchema,
  longTermMemorySchema,
  mcpResultSchema,
  railDecisionSchema,
  retrievedChunkSchema,
} from './turn-records';

// The records of one turn are part of this state's contract: `@agent/contracts` exports them from here.
export * from './turn-records';

/**
 * The workflow state: the state keys of the original runtime (snake_case, every key optional). It is the
 * checkpoint payload, so its keys are a persisted format: add keys, never rename them. A stored state is parsed
 * with `agentStateSchema` when it is loaded; one that does not fit is treated like a corrupt checkpoint.
 */

/** The channel's message metadata: arbitrary client JSON from the HTTP request, so only its keys are known. */
export const clientMetadataSchema = z.record(z.string(), z.unknown());
export type ClientMetadata = z.output<typeof clientMetadataSchema>;

/** agents.yaml `metadata` of an agent: free-form operator configuration the runtime carries but never reads. */
export const agentProfileMetadataSchema = z.record(z.string(), z.unknown());
export type AgentProfileMetadata = z.output<typeof agentProfileMetadataSchema>;

export const historyMessageSchema = z.object({
  role: z.enum(['user', 'assistant']),
  content: z.string(),
  turn: z.number().int().optional(),
  route: z.string().optional(),
  intent: z.string().optional(),
  at: z.string().optional(),
  /** The input guardrails blocked this turn: the message and its safe reply are kept for audit only. */
  blocked: z.boolean().optional(),
});
export type HistoryMessage = z.output<typeof historyMessageSchema>;

/**
 * The history a prompt may show: without the turns the input guardrails blocked, so a blocked message never
 * reaches a model again. A turn counts as blocked when one of its messages is flagged, or (histories stored
 * before the flag existed) when its reply was routed to `blocked`.
 */
export function promptHistory(history: readonly HistoryMessage[] | undefined): HistoryMessage[] {
  const messages = history ?? [];
  const blockedTurns = new Set(
    messages
      .filter((m) => m.blocked === true || (m.role === 'assistant' && m.route === BLOCKED_ROUTE))
      .flatMap((m) => (m.turn === undefined ? [] : [m.turn])),
  );
  return messages.filter((m) => m.blocked !== true && !(m.turn !== undefined && blockedTurns.has(m.turn)));
}

/** `agent_profile`: the agents.yaml identity of the conversation's `agent_id`. */
export const agentProfileSchema = z.object({
  agent_id: z.string(),
  name: z.string(),
  domain: z.string(),
  description: z.string(),
  metadata: agentProfileMetadataSchema,
});
export type AgentProfile = z.output<typeof agentProfileSchema>;

/**
 * A request of an earlier message that waits for a later turn (`pending_topics`): the supervisor defers
 * transactional topics beyond the first, the router keeps every request beyond the first.
 */
export const pendingTopicSchema = z.object({
  operation_id: z.string(),
  plan_id: z.string(),
  intent: z.string(),
  agent: z.string(),
  domain: z.string().nullable(),
  tools: z.array(z.string()),
  label: z.string(),
  source_text: z.string(),
  disposition: z.literal('defer'),
  status: z.enum(['deferred', 'offered']),
  reason: z.string(),
  created_turn: z.number().nullable(),
});
export type PendingTopic = z.output<typeof pendingTopicSchema>;

/** The tools the route allows: none before any route named some. */
export function routeTools(state: Pick<AgentState, 'mcp_tools'>): string[] {
  return state.mcp_tools ?? [];
}

/** The requests that wait for a later turn: none in a conversation that never deferred one. */
export function pendingTopicsOf(state: Pick<AgentState, 'pending_topics'>): PendingTopic[] {
  return state.pending_topics ?? [];
}

/** A topic served in router mode (`handled_topics`); a follow-up on the same topic extends its entry. */
export const handledTopicSchema = z.object({
  intent: z.string(),
  agent: z.string(),
  domain: z.string().nullable(),
  label: z.string(),
  first_turn: z.number().int().nullable(),
  last_turn: z.number().int().nullable(),
});
export type HandledTopic = z.output<typeof handledTopicSchema>;

/** An agent-to-agent transfer recorded by the `handoff` node. */
export const handoffTransferSchema = z.object({
  from: z.string().nullable(),
  to: nodeNameSchema,
  reason: z.string(),
  turn: z.number().int().nullable(),
});
export type HandoffTransfer = z.output<typeof handoffTransferSchema>;

const planSourceSchema = z.enum(['llm', 'keyword', 'fallback']);
const dispositionSchema = z.enum(['execute', 'defer']);

/** `supervisor_plan`: what the supervisor planned for the turn. */
export const supervisorPlanSchema = z.object({
  plan_id: z.string(),
  source: planSourceSchema,
  intents: z.array(
    z.object({
      intent: z.string(),
      agent: z.string(),
      confidence: z.number(),
      disposition: dispositionSchema,
      resumed: z.boolean(),
    }),
  ),
  rejected: z.array(z.object({ intent: z.string(), confidence: z.number(), reason: z.string().nullable() })),
  llm_rejection: z.object({ reason: z.string(), detail: z.string() }).nullable(),
  state_policy: z.string().nullable(),
  held_by_state_policy: z.boolean(),
});
export type SupervisorPlan = z.output<typeof supervisorPlanSchema>;

/** One topic the supervisor ran (`supervisor_results`). */
export const supervisorResultSchema = z.object({
  operation_id: z.string(),
  intent: z.string(),
  agent: z.string(),
  status: z.enum(['completed', 'failed']),
  answer: z.string().nullable(),
  error: z.string().nullable(),
  latency_ms: z.number(),
});
export type SupervisorResult = z.output<typeof supervisorResultSchema>;

/** `multi_intent_plan`: the reference's record of the operations of a supervised turn. */
export const multiIntentPlanSchema = z.object({
  plan_id: z.string(),
  execution_mode: z.literal('supervisor'),
  source: planSourceSchema,
  operations: z.array(
    z.object({
      operation_id: z.string(),
      intent: z.string(),
      agent: z.string(),
      domain: z.string().nullable(),
      tools: z.array(z.string()),
      source_text: z.string(),
      disposition: dispositionSchema,
      status: z.enum(['completed', 'failed', 'deferred']),
    }),
  ),
  status: z.enum(['completed', 'partial']),
});
export type MultiIntentPlan = z.output<typeof multiIntentPlanSchema>;

/** One agent's answer in a supervised turn (`agent_responses`). */
export const agentResponseSchema = z.object({ agent: z.string(), intent: z.string(), answer: z.string() });

/** `long_term_memory_write_result`: how many facts the turn saved, or why it saved none. */
export const memoryWriteResultSchema = z.object({
  saved: z.number().int(),
  discarded: z.number().int().optional(),
  skipped: z.string().optional(),
  error: z.string().optional(),
  /** Facts the memory rails blocked, with the blocking rail codes: not stored. */
  rejected: z
    .array(z.object({ key: z.string(), category: z.string(), codes: z.array(z.string()) }))
    .optional(),
});
export type MemoryWriteResult = z.output<typeof memoryWriteResultSchema>;

/** Releases before the typed state wrote `{}` when the classifier did not run: it reads as absent. */
const storedContinuitySignal = z.preprocess(
  (value) =>
    value !== null && typeof value === 'object' && Object.keys(value).length === 0 ? undefined : value,
  continuitySignalSchema.optional(),
);

/**
 * Keys that describe one turn only: `TurnService` clears every key of this schema before the next turn starts,
 * so a key added here can never leak into the next turn.
 */
export const turnScratchSchema = z
  .object({
    answer: z.string(),
    final_answer: z.string(),
    sanitized_input: z.string(),
    /** What the personal-data policy masked or redacted in the message before the turn started. */
    personal_data_masked: z.array(
      z.object({ type: z.string(), action: z.enum(['mask', 'redact']), count: z.number().int() }),
    ),
    blocked: z.boolean(),
    guardrail_decisions: z.array(railDecisionSchema),
    judge_results: z.array(judgeResultSchema),
    mcp_results: z.array(mcpResultSchema),
    rag_results: z.array(retrievedChunkSchema),
    route_bypassed: z.boolean(),
    continuity_signal: storedContinuitySignal,
    output_supervisor_results: z.array(railDecisionSchema),
    output_guardrails_already_applied: z.boolean(),
    supervisor_action: z.string(),
    supervisor_guidance: z.string(),
    supervisor_attempt: z.number().int(),
    supervisor_handover_reason: z.string(),
    long_term_memories: z.array(longTermMemorySchema),
    long_term_memory_context: z.string(),
    long_term_memory_write_result: memoryWriteResultSchema,
    long_term_memory_load_error: z.string(),
    /** Why a pending transaction was dropped on this turn (`intent_shift`, `human_handoff`, `end_session`). */
    transaction_interruption: z.string().nullable(),
    agent_responses: z.array(agentResponseSchema),
    supervisor_results: z.array(supervisorResultSchema),
  })
  .partial();
export type TurnScratch = z.output<typeof turnScratchSchema>;
export const TURN_SCRATCH_KEYS: readonly (keyof TurnScratch)[] = turnScratchSchema.keyof().options;

/**
 * Keys that carry over from turn to turn: all a turn starts from, since it clears the scratch keys of the state
 * it loads. Validating only these when a turn loads its checkpoint skips most of the work (the scratch holds the
 * last turn's rail, judge and tool records).
 */
export const conversationStateSchema = z
  .object({
    tenant_id: z.string(),
    agent_id: z.string(),
    session_id: z.string(),
    conversation_key: z.string(),
    workflow_id: z.string(),
    agent_profile: agentProfileSchema,
    user_text: z.string(),
    route: z.string(),
    intent: z.string(),
    route_decision: routeDecisionSchema,
    history: z.array(historyMessageSchema),
    context: agentContextSchema,
    domain: z.string(),
    mcp_tools: z.array(z.string()),
    available_mcp_tools: z.array(z.string()),
    ...transactionSliceSchema.shape,
    relevant_transaction_evidence: z.array(transactionEvidenceSchema),
    supervisor_plan: supervisorPlanSchema,
    pending_topics: z.array(pendingTopicSchema),
    handled_topics: z.array(handledTopicSchema),
    /** The outcome of the latest finished or dropped transactions, by transaction id. */
    operation_results: z.record(z.string(), operationResultSchema),
    multi_intent_plan: multiIntentPlanSchema,
    active_agent: z.string(),
    session_control: z.union([z.enum(SESSION_CONTROLS), z.literal('')]),
    session_ended: z.boolean(),
    human_handoff_requested: z.boolean(),
    long_term_memory_subject_key: z.string(),

    // Keys added by this runtime (never renamed once shipped).
    /** 1-based number of the turn in its conversation. */
    turn: z.number().int(),
    channel: z.string(),
    message_id: z.string(),
    user_id: z.string(),
    /** The channel's message metadata, as the request sent it. */
    metadata: clientMetadataSchema,
    /** Set while HUMAN_HANDOFF_MODE=hold keeps the bot silent until an operator resumes or ends. */
    human_handoff_held: z.boolean(),
    handoff_transfers: z.array(handoffTransferSchema),
  })
  .partial();

export const agentStateSchema = conversationStateSchema.merge(turnScratchSchema);
export type AgentState = z.output<typeof agentStateSchema>;

/** Where a conversation stands, as the turn log and the turn response report it: null for an absent key. */
export interface RoutingFacts {
  route: string | null;
  intent: string | null;
  active_agent: string | null;
  next_state: string | null;
}

export function routingFactsOf(state: Pick<AgentState, keyof RoutingFacts>): RoutingFacts {
  return {
    route: state.route ?? null,
    intent: state.intent ?? null,
    active_agent: state.active_agent ?? null,
    next_state: state.next_state ?? null,
  };
}
