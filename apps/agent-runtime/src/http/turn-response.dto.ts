import {
  continuitySignalSchema,
  routeDecisionSchema,
  routeMetadataSchema,
  unavailableDependencySchema,
} from '@agent/contracts';
import { turnResponseSchema } from '@agent/workflow';
import { zodDto } from './zod-dto';

/** `route_decision.metadata`: the facts later nodes act on; a stage's diagnostics may come beside them. */
export const RouteMetadataDto = zodDto('RouteMetadataDto', routeMetadataSchema);

/** How the turn was routed (docs/architecture.md#semantic-route-stickiness-and-global-session-control). */
export const RouteDecisionDto = zodDto('RouteDecisionDto', routeDecisionSchema, {
  route: { example: 'billing_agent', description: 'The node that served the turn (`blocked`: none)' },
  agent: { description: "The agent that serves the turn; a session node's name for handoff and end" },
  confidence: { example: 0.92 },
  route_bypassed: { description: 'Continuity kept the active agent; the router was not called' },
});

/** The continuity classifier's verdict on the turn. */
export const ContinuitySignalDto = zodDto('ContinuitySignalDto', continuitySignalSchema, {
  accepted: {
    description: 'False: overruled (below the threshold, invalid output, …) and the router decided',
  },
  reason: { description: "The classifier's stated reason" },
});

/** A dependency the turn could not use (docs/api.md#dependency-outages). */
export const UnavailableDependencyDto = zodDto('UnavailableDependencyDto', unavailableDependencySchema, {
  code: {
    description:
      'MODEL_UNAVAILABLE: a model stage failed and took its fallback; GUARDRAIL_MODEL_UNAVAILABLE: no guardrail verdict, so fail-closed rails stopped the message without judging it; MCP_UNAVAILABLE: a tool server did not serve a call',
  },
});

/** 200 of POST /v1/channels/:channel/messages (docs/api.md). */
export const TurnResponseDto = zodDto('TurnResponseDto', turnResponseSchema, {
  session_id: { example: 'web-7f3a' },
  conversation_key: { example: 'acme:web-7f3a', description: '`${tenant_id}:${session_id}`' },
  message_id: { description: 'The client message id, or a generated one' },
  turn: { example: 1, description: '1-based number of the turn in its conversation' },
  route: { example: 'billing_agent' },
  route_bypassed: { description: 'True when continuity kept the active agent and the router was not called' },
  transaction_status: {
    description:
      'The operation this turn worked on: the status it waits in, else the one it ended with on this turn; null when the turn touched none',
  },
  unavailable: {
    description:
      'The models and MCP servers this turn needed and could not use, with their cause; empty when everything answered',
  },
  latency_ms: { description: 'Server-side latency of the turn' },
});
