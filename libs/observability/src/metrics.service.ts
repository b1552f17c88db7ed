import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics of the runtime; one registry per app instance (tests create several apps). */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  readonly turns = new Counter({
    name: 'agent_turns_total',
    help: 'Turns processed, by route, routing method and outcome',
    labelNames: ['route', 'method', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly turnDuration = new Histogram({
    name: 'agent_turn_duration_seconds',
    help: 'Whole-turn latency',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly nodeDuration = new Histogram({
    name: 'agent_node_duration_seconds',
    help: 'Workflow node latency',
    labelNames: ['node', 'outcome'] as const,
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly continuityDecisions = new Counter({
    name: 'agent_continuity_decisions_total',
    help: 'Continuity classifier outcomes, by label, acceptance and fallback reason',
    labelNames: ['decision', 'accepted', 'fallback_reason'] as const,
    registers: [this.registry],
  });
  readonly routerCallsAvoided = new Counter({
    name: 'agent_router_llm_calls_avoided_total',
    help: 'Turns routed by an accepted continuity decision, so the Enterprise Router did not run',
    registers: [this.registry],
  });
  readonly continuityShadow = new Counter({
    name: 'agent_continuity_shadow_total',
    help: 'Shadow router runs on accepted CONTINUE turns, by agreement with the continuity decision',
    labelNames: ['agreed'] as const,
    registers: [this.registry],
  });
  readonly llmCalls = new Counter({
    name: 'agent_llm_calls_total',
    help: 'LLM calls by profile and outcome',
    labelNames: ['profile', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly llmLatency = new Histogram({
    name: 'agent_llm_latency_seconds',
    help: 'LLM call latency by profile',
    labelNames: ['profile'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [this.registry],
  });
  readonly llmTokens = new Counter({
    name: 'agent_llm_tokens_total',
    help: 'LLM tokens by profile and kind (prompt|cached_prompt|completion; cached_prompt is part of prompt)',
    labelNames: ['profile', 'kind'] as const,
    registers: [this.registry],
  });
  readonly guardrailActions = new Counter({
    name: 'agent_guardrail_actions_total',
    help: 'Guardrail results by stage, rail code and action',
    labelNames: ['stage', 'code', 'action'] as const,
    registers: [this.registry],
  });
  readonly checkpointWriteDuration = new Histogram({
    name: 'agent_checkpoint_write_seconds',
    help: 'Latency of the atomic turn commit (checkpoint, session, events, idempotency record)',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  readonly checkpointSize = new Histogram({
    name: 'agent_checkpoint_size_bytes',
    help: 'Size of the stored checkpoint state',
    buckets: [1024, 4096, 16384, 65536, 262144, 1048576, 4194304],
    registers: [this.registry],
  });
  readonly lockWait = new Histogram({
    name: 'agent_turn_lock_wait_seconds',
    help: 'Time a turn waited for its conversation lease',
    buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly lockTimeouts = new Counter({
    name: 'agent_turn_lock_timeouts_total',
    help: 'Turns refused with 409 because the conversation lease was not obtained in time',
    registers: [this.registry],
  });
  readonly sessionsEnded = new Counter({
    name: 'agent_sessions_ended_total',
    help: 'Sessions ended, by source (continuity|admin)',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });
  readonly sessionsHandedOff = new Counter({
    name: 'agent_sessions_handed_off_total',
    help: 'Sessions handed to a human, by source (continuity|admin)',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });
  readonly eventsDelivered = new Counter({
    name: 'agent_events_delivered_total',
    help: 'Committed events delivered out of the process, by destination (a dead letter counts as settled)',
    labelNames: ['destination'] as const,
    registers: [this.registry],
  });
  readonly eventDeliveryFailures = new Counter({
    name: 'agent_events_delivery_failures_total',
    help: 'Relay batches that stopped on a failed delivery, by destination (retried later)',
    labelNames: ['destination'] as const,
    registers: [this.registry],
  });
  readonly eventsDeadLettered = new Counter({
    name: 'agent_events_dead_lettered_total',
    help: 'Webhook deliveries that failed every attempt and became dead letters, by destination',
    labelNames: ['destination'] as const,
    registers: [this.registry],
  });
  readonly eventRelayLagEvents = new Gauge({
    name: 'agent_events_relay_lag_events',
    help: 'Committed events a destination has not received yet',
    labelNames: ['destination'] as const,
    registers: [this.registry],
  });
  readonly eventRelayLagSeconds = new Gauge({
    name: 'agent_events_relay_lag_seconds',
    help: 'Age of the oldest committed event a destination has not received yet (0 when none)',
    labelNames: ['destination'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }
}
