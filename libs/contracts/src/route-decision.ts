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

/**
 * A domain agent: a node of the turn graph that an agents.yaml `graph_agents` entry declares, so the set is the
 * configuration's, known at start-up (ConfigFilesService), never a fixed list.
 */
export type DomainAgentNode = string;
/**
 * A node of the turn graph (a `graph_agents` key names one, its events and its prompt file), or `blocked`: the
 * shape a stored route or agent must have, whichever agents the configuration declares today.
 */
export const nodeNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_]*$/, 'must be a lower_snake_case name (letters, digits, _)');

export const SESSION_NODES = ['human_handoff', 'end_session'] as const;
export type SessionNode = (typeof SESSION_NODES)[number];

/** The nodes `routing_decision` may hand the turn to besides the configured domain agents. */
export const FIXED_ROUTES = ['handoff', ...SESSION_NODES, 'supervisor_agent'] as const;
export type FixedRoute = (typeof FIXED_ROUTES)[number];

export function isFixedRoute(value: unknown): value is FixedRoute {
  return typeof value === 'string' && (FIXED_ROUTES as readonly string[]).includes(value);
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
    handoff_target: nodeNameSchema.optional(),
    handoff_from: nodeNameSchema.optional(),
    /** Router mode: the message's further requests, in the customer's order. */
    more_intents: z.array(z.string()).optional(),
    /** Carried for the next turn where `intent` / `active_agent` are not catalogue facts (supervisor, state policy). */
    previous_agent: z.string().nullable().optional(),
    previous_intent: z.string().nullable().optional(),
    transaction_intent: z.string().nullable().optional(),
  })
  .passthrough();
export type RouteMetadata = z.output<typeof routeMetadataSchema>;

export const routeDecisionSchema = z.object({
  /** A domain agent, a fixed route (FIXED_ROUTES), or `blocked` when the input was blocked and no node ran. */
  route: nodeNameSchema,
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
