/** Route decision shapes written by routing. */
export const ROUTE_METHODS = [
  'continuity',
  'llm',
  'keyword',
  'state_policy',
  'fallback',
  'supervisor',
  'guardrail',
] as const;
export type RouteMethod = (typeof ROUTE_METHODS)[number];

export const DOMAIN_AGENT_NODES = [
  'billing_agent',
  'product_agent',
  'orders_agent',
  'support_agent',
] as const;
export type DomainAgentNode = (typeof DOMAIN_AGENT_NODES)[number];

export const SESSION_NODES = ['human_handoff', 'end_session'] as const;
export type SessionNode = (typeof SESSION_NODES)[number];

/** Every node `routing_decision` may hand the turn to. */
export const ROUTABLE_NODES = [
  ...DOMAIN_AGENT_NODES,
  'handoff',
  ...SESSION_NODES,
  'supervisor_agent',
] as const;
export type RoutableNode = (typeof ROUTABLE_NODES)[number];

export function isDomainAgentNode(value: unknown): value is DomainAgentNode {
  return typeof value === 'string' && (DOMAIN_AGENT_NODES as readonly string[]).includes(value);
}

export function isRoutableNode(value: unknown): value is RoutableNode {
  return typeof value === 'string' && (ROUTABLE_NODES as readonly string[]).includes(value);
}

export interface RouteDecision {
  route: string;
  agent: string | null;
  intent: string;
  domain: string | null;
  mcp_tools: string[];
  confidence: number;
  method: RouteMethod;
  reason: string;
  next_state: string | null;
  route_bypassed: boolean;
  handoff?: boolean;
  metadata: Record<string, unknown>;
}

export const SESSION_CONTROLS = ['HUMAN_HANDOFF', 'END_SESSION'] as const;
export type SessionControl = (typeof SESSION_CONTROLS)[number];

export const CONTINUITY_DECISIONS = ['CONTINUE', 'ROUTE', 'HUMAN_HANDOFF', 'END_SESSION'] as const;
export type ContinuityDecision = (typeof CONTINUITY_DECISIONS)[number];

export const CONTINUITY_FALLBACK_REASONS = [
  'below_threshold',
  'invalid_output',
  'timeout',
  'error',
  'no_active_agent',
] as const;
export type ContinuityFallbackReason = (typeof CONTINUITY_FALLBACK_REASONS)[number];

export interface ContinuitySignal {
  decision: ContinuityDecision;
  confidence: number;
  accepted: boolean;
  reason: string;
  fallback_reason: ContinuityFallbackReason | null;
  latency_ms: number;
  profile_name: string;
}

export const HUMAN_HANDOFF_REQUESTED_STATE = 'HUMAN_HANDOFF_REQUESTED';
export const SESSION_ENDED_STATE = 'SESSION_ENDED';
