import { Injectable } from '@nestjs/common';
import { createHash, randomUUID } from 'node:crypto';
import {
  canonicalJson,
  CheckpointService,
  ConversationIdentity,
  SessionStatus,
  turnSummary,
} from '@agent/checkpoint';
import { z } from 'zod';
import {
  AgentState,
  ClientMetadata,
  continuitySignalSchema,
  conversationKeyOf,
  TurnFrame,
  TurnState,
  routeDecisionSchema,
  SESSION_CONTROLS,
  TRANSACTION_STATUSES,
  turnTransactionStatus,
  TURN_SCRATCH_KEYS,
  UnavailableDependency,
  unavailableDependencies,
  unavailableDependencySchema,
  routingFactsOf,
  turnAnswer,
} from '@agent/contracts';
import { GuardrailsService } from '@agent/guardrails';
import { MetricsService, TurnStream } from '@agent/observability';
import { firstTextMs } from './answer-stream';
import { ConversationWork } from './conversation-work';
import { IdempotencyKeyReusedError } from './workflow.errors';
import { WorkflowService } from './workflow.service';

export interface TurnInput {
  request_id: string;
  channel: string;
  tenant_id: string;
  agent_id: string;
  session_id: string;
  text: string;
  message_id?: string;
  user_id?: string;
  metadata?: ClientMetadata;
  /** The client streams the answer (`Accept: text/event-stream`): where the turn sends it as it goes. */
  stream?: TurnStream;
}

/**
 * The HTTP response of a turn (docs/api.md); the idempotency record stores it and a replay parses it back. The
 * HTTP layer derives its OpenAPI description from this schema: a field added here is documented with it.
 */
export const turnResponseSchema = z.object({
  session_id: z.string(),
  conversation_key: z.string(),
  message_id: z.string(),
  turn: z.number().int(),
  answer: z.string(),
  route: z.string().nullable(),
  intent: z.string().nullable(),
  domain: z.string().nullable(),
  active_agent: z.string().nullable(),
  route_bypassed: z.boolean(),
  route_decision: routeDecisionSchema.nullable(),
  continuity_signal: continuitySignalSchema.nullable(),
  session_control: z.enum(SESSION_CONTROLS).nullable(),
  session_ended: z.boolean(),
  human_handoff_requested: z.boolean(),
  next_state: z.string().nullable(),
  /** Responses stored before the field existed replay it as null. */
  transaction_status: z.enum(TRANSACTION_STATUSES).nullable().default(null),
  blocked: z.boolean(),
  /** Responses stored before the field existed replay it as empty. */
  unavailable: z.array(unavailableDependencySchema).default([]),
  latency_ms: z.number(),
});
export type TurnResponse = z.output<typeof turnResponseSchema>;

export interface TurnOutcome {
  response: TurnResponse;
  replayed: boolean;
}

/** What identifies a message's body besides its conversation: a resend must carry the same. */
function bodyFingerprint(input: TurnInput): string {
  return createHash('sha256')
    .update(
      canonicalJson([
        input.channel,
        input.agent_id,
        input.text,
        input.user_id ?? null,
        input.metadata ?? null,
      ]),
    )
    .digest('hex');
}

/**
 * One turn end to end: idempotency, then the graph as the unit of work under the conversation's lease
 * (ConversationWork), whose commit holds checkpoint, session row, events and idempotency record.
 */
@Injectable()
export class TurnService {
  constructor(
    private readonly checkpoints: CheckpointService,
    private readonly work: ConversationWork,
    private readonly workflow: WorkflowService,
    private readonly metrics: MetricsService,
    private readonly guardrails: GuardrailsService,
  ) {}

  async handle(sent: TurnInput): Promise<TurnOutcome> {
    const started = performance.now();
    // Before anything else sees the message: from here on the turn, its fingerprint, its events and everything
    // stored hold the text as the personal-data policy left it, never the card number as sent.
    const masking = this.guardrails.protectMessage(sent.text, sent.tenant_id, sent.agent_id);
    const input: TurnInput = { ...sent, text: masking.text };
    const key = conversationKeyOf(input.tenant_id, input.session_id);
    const identity: ConversationIdentity = {
      conversation_key: key,
      tenant_id: input.tenant_id,
      session_id: input.session_id,
      agent_id: input.agent_id,
      user_id: input.user_id ?? null,
      channel: input.channel,
    };
    const fingerprint = input.message_id ? bodyFingerprint(input) : undefined;
    // One statement: a processed message_id answers from its record (a duplicate that waited behind the original
    // gets the original's response); otherwise the lease is taken and the head checkpoint read.
    const acquired = await this.checkpoints.acquireFor(identity, input.message_id);
    if ('replay' in acquired) {
      const { response, fingerprint: stored } = acquired.replay;
      if (stored !== null && stored !== fingerprint) {
        throw new IdempotencyKeyReusedError(key, input.message_id ?? '');
      }
      return { response: storedTurnResponse(response, key), replayed: true };
    }
    const turn = acquired.session.turn_count + 1;
    const messageId = input.message_id ?? randomUUID();
    const done = await this.work.run({
      lease: acquired,
      request_id: input.request_id,
      turn,
      reading: 'carried over',
      failures: 'recorded',
      ...(input.stream ? { stream: input.stream } : {}),
      work: async (loaded, context) => {
        const initial: TurnState = {
          ...this.initialState(loaded?.state ?? {}, input, {
            tenant_id: input.tenant_id,
            agent_id: input.agent_id,
            session_id: input.session_id,
            conversation_key: key,
            channel: input.channel,
            turn,
            message_id: messageId,
            user_text: input.text,
          }),
          ...(masking.findings.length > 0 ? { personal_data_masked: masking.findings } : {}),
        };
        const final = await this.workflow.runTurn(initial).catch((error: unknown) => {
          this.metrics.turns.inc({ route: 'none', method: 'none', outcome: 'error' });
          throw error;
        });
        const latencyMs = performance.now() - started;
        const unavailable = unavailableDependencies(context.events);
        const response = this.response(final, latencyMs, unavailable);
        return {
          result: { final, response },
          commit: {
            // Lineage only: the lease fences the commit on the head it saw.
            parentVersion: loaded?.version ?? null,
            state: final,
            status: statusOf(final),
            summary: turnSummary(final, 'turn', latencyMs),
            firstTextMs: firstTextMs(input.stream, started),
            idempotency: input.message_id
              ? { message_id: input.message_id, response, fingerprint }
              : undefined,
          },
        };
      },
    });
    const { final, response } = done.result;
    const method = final.route_decision?.method ?? 'none';
    this.metrics.turns.inc({
      route: final.route ?? 'none',
      method,
      outcome: final.blocked ? 'blocked' : 'ok',
    });
    if (method === 'continuity') this.metrics.routerCallsAvoided.inc();
    this.metrics.turnDuration.observe((performance.now() - started) / 1000);
    return { response, replayed: false };
  }

  /** The state the graph starts from: what carries over, the turn's frame, and the facts re-derived each turn. */
  private initialState(previous: AgentState, input: TurnInput, frame: TurnFrame): TurnState {
    const state: AgentState = { ...previous };
    for (const key of TURN_SCRATCH_KEYS) delete state[key];
    return {
      ...state,
      ...frame,
      user_id: input.user_id ?? previous.user_id,
      // A business customer key (channel metadata) identifies the person better than a channel user id.
      long_term_memory_subject_key:
        (typeof input.metadata?.customer_key === 'string' ? input.metadata.customer_key : undefined) ??
        input.user_id ??
        previous.long_term_memory_subject_key,
      metadata: input.metadata ?? {},
      // Session-control facts are re-derived every turn; only an ended session or a held handoff carries over.
      session_control: previous.session_ended
        ? 'END_SESSION'
        : previous.human_handoff_held
          ? 'HUMAN_HANDOFF'
          : '',
      human_handoff_requested: previous.human_handoff_held === true,
      history: previous.history ?? [],
    };
  }

  private response(state: TurnState, latencyMs: number, unavailable: UnavailableDependency[]): TurnResponse {
    const facts = routingFactsOf(state);
    return {
      session_id: state.session_id,
      conversation_key: state.conversation_key,
      message_id: state.message_id,
      turn: state.turn,
      answer: turnAnswer(state),
      route: facts.route,
      intent: facts.intent,
      domain: state.domain ?? null,
      active_agent: facts.active_agent,
      route_bypassed: state.route_bypassed === true,
      route_decision: state.route_decision ?? null,
      continuity_signal: state.continuity_signal ?? null,
      session_control: state.session_control ? state.session_control : null,
      session_ended: state.session_ended === true,
      human_handoff_requested: state.human_handoff_requested === true,
      next_state: facts.next_state,
      transaction_status: turnTransactionStatus(state),
      blocked: state.blocked === true,
      unavailable,
      latency_ms: Math.round(latencyMs),
    };
  }
}

/** A stored response parses back to the turn response it was; anything else is a damaged record, not an answer. */
function storedTurnResponse(stored: unknown, conversationKey: string): TurnResponse {
  const parsed = turnResponseSchema.safeParse(stored);
  if (!parsed.success) {
    throw new Error(`the stored response of a message in ${conversationKey} is not a turn response`);
  }
  return parsed.data;
}

function statusOf(state: AgentState): SessionStatus {
  if (state.session_ended) return 'ended';
  if (state.human_handoff_requested) return 'handoff';
  return 'active';
}
