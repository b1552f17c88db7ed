import type { StoredEventRow } from '@agent/checkpoint';
import { AgentState, unavailableDependencies } from '@agent/contracts';
import {
  adminActions,
  eventsByTurn,
  eventView,
  isRecord,
  numberOr,
  stringOr,
  turnDecision,
} from './session-view';
import type {
  CheckpointRecoveryDto,
  GuardrailRailDto,
  GuardrailVerdictDto,
  ModelUsageDto,
  NodeTimingDto,
  TimelineTurnDto,
} from './timeline.dto';

/**
 * Every processed turn with its decision (see `turnDecision`), the messages the bounded history still holds,
 * the guardrail verdicts, node timings, model calls, checkpoint recoveries, the operator actions that followed
 * it and all its events. The head state gives the newest turn's messages even when history is off. Operator
 * actions store their events under the turn they follow, so a recovery an action ran into is listed there too.
 */
export function timelineTurns(events: StoredEventRow[], head: AgentState): TimelineTurnDto[] {
  const messages = messagesByTurn(head);
  const actions = adminActions(events);
  return eventsByTurn(events).flatMap(([turn, list]) => {
    const decision = turnDecision(turn, list);
    if (!decision) return [];
    return [
      {
        ...decision,
        user_message: messages.get(turn)?.user ?? null,
        answer: messages.get(turn)?.assistant ?? null,
        guardrails: list.flatMap(guardrailVerdictOf),
        nodes: nodesOf(list),
        model_usage: modelUsageOf(list),
        unavailable: unavailableDependencies(list),
        recoveries: list.flatMap(recoveryOf),
        admin_actions: actions.filter((action) => action.after_turn === turn),
        events: list.map(eventView),
      },
    ];
  });
}

/** The oldest turn the bounded history still has messages of. */
export function oldestMessageTurn(head: AgentState): number | null {
  const turns = [...messagesByTurn(head).keys()];
  return turns.length > 0 ? Math.min(...turns) : null;
}

function messagesByTurn(head: AgentState): Map<number, { user?: string; assistant?: string }> {
  const byTurn = new Map<number, { user?: string; assistant?: string }>();
  for (const message of head.history ?? []) {
    if (typeof message.turn !== 'number') continue;
    const entry = byTurn.get(message.turn) ?? {};
    entry[message.role] = message.content;
    byTurn.set(message.turn, entry);
  }
  if (typeof head.turn === 'number' && !byTurn.has(head.turn)) {
    byTurn.set(head.turn, { user: head.user_text, assistant: head.final_answer ?? head.answer });
  }
  return byTurn;
}

function guardrailVerdictOf(event: StoredEventRow): GuardrailVerdictDto[] {
  const stage =
    event.name === 'guardrails.input.completed'
      ? 'input'
      : event.name === 'guardrails.output.completed'
        ? 'output'
        : null;
  if (!stage) return [];
  const payload = event.payload;
  return [
    {
      stage,
      attempt: numberOr(payload.attempt),
      blocked: payload.blocked === true,
      codes: Array.isArray(payload.codes) ? payload.codes.filter((c) => typeof c === 'string') : [],
      rails: Array.isArray(payload.decisions) ? payload.decisions.flatMap(railOf) : [],
    },
  ];
}

function railOf(record: unknown): GuardrailRailDto[] {
  if (!isRecord(record)) return [];
  const code = stringOr(record.code);
  if (!code) return [];
  return [
    {
      code,
      action: stringOr(record.action) ?? (record.allowed === false ? 'block' : 'allow'),
      reason: stringOr(record.reason),
      latency_ms: numberOr(record.latency_ms),
    },
  ];
}

/** From AGENT_COMPLETED's `nodes`, else from per-node events (turns that failed before completing). */
function nodesOf(list: StoredEventRow[]): NodeTimingDto[] {
  const completed = list.find((event) => event.name === 'AGENT_COMPLETED')?.payload.nodes;
  const source = Array.isArray(completed)
    ? completed
    : list.filter((event) => event.name === 'workflow.node.completed').map((event) => event.payload);
  return source.flatMap((record: unknown) => {
    if (!isRecord(record)) return [];
    const node = stringOr(record.node);
    const duration = numberOr(record.duration_ms);
    if (!node || duration === null) return [];
    return [{ node, duration_ms: duration, outcome: stringOr(record.outcome) ?? 'ok' }];
  });
}

function modelUsageOf(list: StoredEventRow[]): ModelUsageDto[] {
  const byProfile = new Map<string, ModelUsageDto>();
  for (const event of list) {
    if (event.name !== 'llm.call') continue;
    const payload = event.payload;
    const profile = stringOr(payload.profile) ?? 'unknown';
    const usage = byProfile.get(profile) ?? {
      profile,
      model: 'unknown',
      calls: 0,
      failed: 0,
      prompt_tokens: 0,
      completion_tokens: 0,
      latency_ms: 0,
    };
    usage.model = stringOr(payload.model) ?? usage.model;
    usage.calls++;
    if ((stringOr(payload.outcome) ?? 'ok') !== 'ok') usage.failed++;
    usage.prompt_tokens += numberOr(payload.prompt_tokens) ?? 0;
    usage.completion_tokens += numberOr(payload.completion_tokens) ?? 0;
    usage.latency_ms = Math.round((usage.latency_ms + (numberOr(payload.latency_ms) ?? 0)) * 100) / 100;
    byProfile.set(profile, usage);
  }
  return [...byProfile.values()];
}

function recoveryOf(event: StoredEventRow): CheckpointRecoveryDto[] {
  const none = { version: null, reason: null, skipped: null, found_version: null };
  switch (event.name) {
    case 'checkpoint.recovery.skip_corrupt':
      return [
        {
          ...none,
          kind: 'skip_corrupt',
          version: numberOr(event.payload.version),
          reason: stringOr(event.payload.reason),
        },
      ];
    case 'checkpoint.recovery.clean_start':
      return [{ ...none, kind: 'clean_start', skipped: numberOr(event.payload.skipped) }];
    case 'checkpoint.recovery.version_gap':
      return [
        {
          ...none,
          kind: 'version_gap',
          version: numberOr(event.payload.expected_version),
          skipped: numberOr(event.payload.missing_versions),
          found_version: numberOr(event.payload.found_version),
        },
      ];
    default:
      return [];
  }
}
