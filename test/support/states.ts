import {
  type ActiveTransaction,
  conversationKeyOf,
  type JudgeResult,
  type McpToolResult,
  type ParametersRequest,
  type PendingToolCall,
  type PendingTopic,
  type RouteDecision,
  type RoutedTurnState,
  type TurnState,
} from '@agent/contracts';
import type { TurnContext } from '@agent/observability';

/**
 * A turn's state as the turn service starts it: the first message of session `s-1` of the default tenant, with
 * `overrides` on top (a test that sets `user_text` usually wants it as the turn's text too: set `sanitized_input`).
 */
export function turnStateOf(overrides: Partial<TurnState> = {}): TurnState {
  const tenantId = overrides.tenant_id ?? 'default';
  const sessionId = overrides.session_id ?? 's-1';
  return {
    tenant_id: tenantId,
    agent_id: 'default',
    session_id: sessionId,
    conversation_key: conversationKeyOf(tenantId, sessionId),
    channel: 'web',
    turn: 1,
    message_id: 'm-1',
    user_text: '',
    history: [],
    metadata: {},
    session_control: '',
    human_handoff_requested: false,
    ...overrides,
  };
}

/** The context a turn runs in (its request, ids, event buffer and node timings) for `TurnContextStore.run`. */
export function turnContextOf(overrides: Partial<TurnContext> = {}): TurnContext {
  const tenantId = overrides.tenant_id ?? 'default';
  const sessionId = overrides.session_id ?? 's-1';
  return {
    request_id: 'r-1',
    tenant_id: tenantId,
    agent_id: 'default',
    session_id: sessionId,
    conversation_key: conversationKeyOf(tenantId, sessionId),
    turn: 1,
    events: [],
    nodes: [],
    ...overrides,
  };
}

/** A turn's state once routing decided: billing_agent's invoice explanation unless overridden. */
export function routedTurnStateOf(overrides: Partial<RoutedTurnState> = {}): RoutedTurnState {
  return {
    ...turnStateOf(overrides),
    route: overrides.route ?? 'billing_agent',
    intent: overrides.intent ?? 'billing_invoice_explanation',
  };
}

/** A complete route decision for a test state: a keyword decision for billing_agent unless overridden. */
export function decisionOf(overrides: Partial<RouteDecision> = {}): RouteDecision {
  return {
    route: 'billing_agent',
    agent: 'billing_agent',
    intent: 'billing_invoice_explanation',
    domain: 'telecom',
    mcp_tools: [],
    confidence: 0.9,
    method: 'keyword',
    reason: 'test',
    next_state: null,
    route_bypassed: false,
    metadata: {},
    ...overrides,
  };
}

/** An operation waiting for its confirmation (orders_agent cancelling an order unless overridden). */
export function activeTransactionOf(overrides: Partial<ActiveTransaction> = {}): ActiveTransaction {
  return {
    transaction_id: 'txn-1',
    tool_name: 'cancelar_pedido',
    server: 'retail',
    agent: 'orders_agent',
    state_domain: 'ORDER',
    arguments: { order_id: '123' },
    status: 'AWAITING_CONFIRMATION',
    started_turn: 1,
    updated_turn: 1,
    started_from_intent: 'retail_order_cancel',
    intent: 'retail_order_cancel',
    tool_description: 'Cancels an order',
    requires: ['order_id'],
    missing_parameters: [],
    attempts: 0,
    ...overrides,
  };
}

/** The call a confirmation of `transaction` executes. */
export function pendingToolCallOf(transaction: ActiveTransaction): PendingToolCall {
  return {
    call_id: 'call-1',
    transaction_id: transaction.transaction_id,
    tool_name: transaction.tool_name,
    server: transaction.server,
    arguments: transaction.arguments,
    requested_turn: transaction.updated_turn,
  };
}

/** A request of an earlier message waiting for a later turn. */
export function pendingTopicOf(overrides: Partial<PendingTopic> = {}): PendingTopic {
  return {
    operation_id: 'op-2',
    plan_id: 'plan-1',
    intent: 'product_services_information',
    agent: 'product_agent',
    domain: 'telecom',
    tools: [],
    label: 'planos e serviços',
    source_text: 'test',
    disposition: 'defer',
    status: 'deferred',
    reason: 'multi_intent',
    created_turn: 1,
    ...overrides,
  };
}

/** A tool call that answered (consultar_fatura unless overridden). */
export function toolResultOf(overrides: Partial<McpToolResult> = {}): McpToolResult {
  return {
    tool_name: 'consultar_fatura',
    server: 'telecom',
    ok: true,
    result: {},
    error: null,
    latency_ms: 5,
    ...overrides,
  };
}

/** A transactional call that waits for its parameters (cancelar_pedido's order_id unless overridden). */
export function parametersRequestOf(overrides: Partial<ParametersRequest> = {}): ParametersRequest {
  return {
    ok: true,
    executed: false,
    collecting_parameters: true,
    tool_name: 'cancelar_pedido',
    transaction_status: 'COLLECTING_PARAMETERS',
    missing_parameters: ['order_id'],
    ...overrides,
  };
}

/** A deterministic judge's passing verdict (groundedness unless overridden). */
export function judgeResultOf(overrides: Partial<JudgeResult> = {}): JudgeResult {
  return {
    name: 'groundedness',
    type: 'deterministic',
    threshold: 0.7,
    enforce: false,
    score: 1,
    passed: true,
    reason: 'test',
    latency_ms: 1,
    metadata: {},
    ...overrides,
  };
}
