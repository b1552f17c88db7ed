import { z } from 'zod';

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

export const SESSION_CONTROLS = ['HUMAN_HANDOFF', 'END_SESSION'] as const;
export type SessionControl = (typeof SESSION_CONTROLS)[number];

/** The route an input-guardrail block gives a turn: no node runs for it. */
export const BLOCKED_ROUTE = 'blocked';

/**
 * `route_decision.metadata`: the facts a later node acts on are typed here; the diagnostics of the stage that
 * decided (`llm_rejection`, `matched_keyword`, `interruption_check`, ...) stay open beside them.
 */
export const routeMetadataSchema = z
  .object({
    /** A continuity HUMAN_HANDOFF / END_SESSION decision, or the session gate's rejection. */
    session_control: z.enum(SESSION_CONTROLS).optional(),
    /** Why a pending transaction ends on this turn (`intent_shift` when the router moved the turn away). */
    transaction_interruption: z.string().optional(),
    /** An agent-to-agent transfer through the `handoff` node: where it goes and the agent it leaves. */
    handoff_target: z.enum(DOMAIN_AGENT_NODES).optional(),
    handoff_from: z.enum(DOMAIN_AGENT_NODES).optional(),
    /** Router mode: the message's further requests, in the customer's order. */
    more_intents: z.array(z.string()).optional(),
    /** Carried for the next turn where `intent` / `active_agent` are not catalogue facts (supervisor, state policy). */
    previous_agent: z.string().nullable().optional(),
    previous_intent: z.string().nullable().optional(),
    transaction_intent: z.string().nullable().optional(),
  })
  .passthrough();
export type RouteMetadata = z.output<typeof routeMetadataSchema>;

/** Where a decision sends the turn: a node of the graph, or nowhere when the input was blocked. */
export const DECISION_ROUTES = [...ROUTABLE_NODES, BLOCKED_ROUTE] as const;

export const routeDecisionSchema = z.object({
  route: z.enum(DECISION_ROUTES),
  /** The agent that serves the turn; a session node's name for handoff and end; null when blocked. */
  agent: z.string().nullable(),
  intent: z.string(),
  domain: z.string().nullable(),
  mcp_tools: z.array(z.string()),
  confidence: z.number(),
  method: z.enum(ROUTE_METHODS),
  reason: z.string(),
  next_state: z.string().nullable(),
  route_bypassed: z.boolean(),
  handoff: z.boolean().optional(),
  metadata: routeMetadataSchema,
});
export type RouteDecision = z.output<typeof routeDecisionSchema>;

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

export const continuitySignalSchema = z.object({
  decision: z.enum(CONTINUITY_DECISIONS),
  confidence: z.number(),
  accepted: z.boolean(),
  reason: z.string(),
  fallback_reason: z.enum(CONTINUITY_FALLBACK_REASONS).nullable(),
  latency_ms: z.number(),
  profile_name: z.string(),
});
export type ContinuitySignal = z.output<typeof continuitySignalSchema>;

/**
 * The intent an accepted ROUTE verdict of the continuity classifier names: where the router would ask its own
 * model, it takes this instead (docs/architecture.md#semantic-route-stickiness-and-global-session-control).
 */
export interface ClassifiedRoute {
  intent: string;
  confidence: number;
  reason: string;
}

export const HUMAN_HANDOFF_REQUESTED_STATE = 'HUMAN_HANDOFF_REQUESTED';
export const SESSION_ENDED_STATE = 'SESSION_ENDED';
