import { HistoryMessage, TurnState } from '@agent/contracts';
import type { ContinuityService } from '@agent/continuity';
import type { DatasetCatalogue, ContinuityDataset, DatasetConversation } from './continuity-dataset';
import type { TurnOutcome } from './continuity-metrics';
import { CaseRun, pool, PriceOf, runCase } from './stage';
import { turnStateOf } from '../test/support/states';

interface PreparedTurn {
  conversation: DatasetConversation;
  index: number;
  state: TurnState;
}

/** The state ContinuityService receives for turn `index`: the labelled context and the real previous turns. */
export function stateForTurn(
  conversation: DatasetConversation,
  index: number,
  catalogue: DatasetCatalogue,
): TurnState {
  const turn = conversation.turns[index];
  const history: HistoryMessage[] = conversation.turns.slice(0, index).flatMap((previous, i) => [
    { role: 'user' as const, content: previous.user, turn: i + 1 },
    { role: 'assistant' as const, content: previous.assistant ?? '', turn: i + 1 },
  ]);
  const state = turnStateOf({
    tenant_id: 'eval',
    agent_id: 'eval',
    session_id: conversation.id,
    turn: index + 1,
    user_text: turn.user,
    sanitized_input: turn.user,
    history,
    next_state: turn.next_state ?? null,
  });
  if (turn.active_agent !== null && turn.previous_intent !== null) {
    const tools = catalogue.intents.find((i) => i.name === turn.previous_intent)?.mcp_tools ?? [];
    state.active_agent = turn.active_agent;
    state.intent = turn.previous_intent;
    state.domain = turn.previous_domain ?? undefined;
    state.mcp_tools = [...tools];
    // The decision that made the agent active; a name that serves no intent has none (the classifier ignores it).
    if (catalogue.intents.some((intent) => intent.agent === turn.active_agent)) {
      state.route_decision = {
        route: turn.active_agent,
        agent: turn.active_agent,
        intent: turn.previous_intent,
        domain: turn.previous_domain,
        mcp_tools: [...tools],
        confidence: 1,
        method: 'keyword',
        reason: 'the evaluation dataset',
        next_state: null,
        route_bypassed: false,
        metadata: {},
      };
    }
  }
  return state;
}

export interface ContinuityRunOptions {
  concurrency: number;
  priceOf: PriceOf;
  /** Only the first turns, in the order of the set. */
  limit?: number;
  onProgress?: (done: number, total: number) => void;
}

export interface EvaluatedTurn {
  turn: TurnOutcome;
  run: CaseRun<unknown>;
}

/**
 * Every labelled turn through the real ContinuityService of the context, which runs with threshold 0 so every
 * label and confidence is recorded (see EVAL_OVERRIDES).
 */
export async function runContinuityTurns(
  service: ContinuityService,
  dataset: ContinuityDataset,
  catalogue: DatasetCatalogue,
  options: ContinuityRunOptions,
): Promise<EvaluatedTurn[]> {
  const prepared: PreparedTurn[] = dataset.conversations
    .flatMap((conversation) =>
      conversation.turns.map((_, index) => ({
        conversation,
        index,
        state: stateForTurn(conversation, index, catalogue),
      })),
    )
    .slice(0, options.limit);
  const results = new Array<EvaluatedTurn | undefined>(prepared.length);
  let done = 0;
  await pool(prepared, options.concurrency, async (turn, position) => {
    results[position] = await evaluateTurn(service, turn, options.priceOf);
    options.onProgress?.(++done, prepared.length);
  });
  return results.filter((r): r is EvaluatedTurn => r !== undefined);
}

async function evaluateTurn(
  service: ContinuityService,
  prepared: PreparedTurn,
  priceOf: PriceOf,
): Promise<EvaluatedTurn> {
  const { conversation, index, state } = prepared;
  const turn = conversation.turns[index];
  const run = await runCase(`${conversation.id}-${index + 1}`, priceOf, () => service.evaluate(state));
  const outcome = run.value;
  if (!outcome) {
    throw new Error(
      `ContinuityService returned no signal for ${conversation.id} turn ${index + 1}: is stickiness off?`,
    );
  }
  const { signal } = outcome;
  const result: TurnOutcome = {
    conversation_id: conversation.id,
    depth: index + 1,
    language: conversation.language,
    domain: conversation.domain,
    tags: [...turn.tags],
    label: turn.label,
    has_active_agent: turn.active_agent !== null,
    user: turn.user,
    decision: signal.decision,
    confidence: signal.confidence,
    accepted: signal.accepted,
    fallback_reason: signal.fallback_reason,
    reason: signal.reason,
    latency_ms: signal.latency_ms,
    prompt_tokens: run.usage.prompt_tokens,
    completion_tokens: run.usage.completion_tokens,
    expected_intent: turn.label === 'ROUTE' ? (conversation.turns[index + 1]?.previous_intent ?? null) : null,
    named_intent: outcome.route?.intent ?? null,
  };
  return { turn: result, run };
}
