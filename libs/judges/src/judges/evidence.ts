import {
  isToolCallResult,
  type McpResult,
  type RetrievedChunk,
  type RoutedTurnState,
  type TransactionEvidence,
  turnAnswer,
  type TurnState,
  turnText,
  turnToolResults,
} from '@agent/contracts';

/** What the judges see: the answer, the user's message and the turn's evidence. */
export interface JudgeContext {
  answer: string;
  userText: string;
  route: string;
  intent: string;
  mcpResults: McpResult[];
  ragResults: RetrievedChunk[];
  transactionEvidence: TransactionEvidence[];
}

export function buildJudgeContext(state: Readonly<RoutedTurnState>): JudgeContext {
  return {
    answer: turnAnswer(state),
    userText: turnText(state),
    route: state.route,
    intent: state.intent,
    mcpResults: turnToolResults(state),
    ragResults: state.rag_results ?? [],
    transactionEvidence: [
      ...(state.relevant_transaction_evidence ?? []),
      ...(state.transaction_evidence ?? []),
      ...(state.last_transaction_evidence ? [state.last_transaction_evidence] : []),
    ],
  };
}

/** MCP, RAG and transaction evidence as one JSON text, capped. */
export function evidenceText(context: JudgeContext, maxChars: number): string {
  const parts: string[] = [];
  if (context.mcpResults.length > 0) parts.push(`MCP results: ${JSON.stringify(context.mcpResults)}`);
  if (context.ragResults.length > 0) parts.push(`RAG results: ${JSON.stringify(context.ragResults)}`);
  if (context.transactionEvidence.length > 0) {
    parts.push(`Transaction evidence: ${JSON.stringify(context.transactionEvidence)}`);
  }
  return parts.join('\n').slice(0, maxChars);
}

const TERMINAL_STATUSES = /^(COMPLETED|FAILED|CANCELLED|CANCELED|BLOCKED|EXPIRED|ABANDONED|DONE)$/i;

/** The reference's transactional detection: an active transaction or a transactional tool in this turn. */
export function isTransactionalTurn(state: Readonly<TurnState>): boolean {
  if (state.transaction_status && !TERMINAL_STATUSES.test(state.transaction_status)) return true;
  if (state.confirmation_required === true || state.confirmation_received === true) return true;
  if (state.pending_tool_call || state.selected_tool_call || state.tool_policy_result) return true;
  // A transactional tool asked for its parameters this turn.
  return turnToolResults(state).some((result) => !isToolCallResult(result));
}
