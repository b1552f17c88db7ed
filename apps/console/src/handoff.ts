import type { components } from './api/openapi';

type SessionTimeline = components['schemas']['SessionTimelineDto'];

/** What a person needs to pick up a conversation that waits for them. */
export interface PickUp {
  /** When the latest hand-off was asked for (ISO), by the customer or an operator. */
  requestedAt: string | null;
  requestedBy: 'customer' | 'operator' | null;
  reason: string | null;
  /** The agent that last served the customer before the hand-off, and on what. */
  agent: string | null;
  intent: string | null;
  /** Customer messages held since (answered only with the waiting message). */
  heldMessages: number;
  /** The last exchanges, oldest first. */
  lastMessages: { turn: number; role: 'customer' | 'answer'; text: string }[];
}

const LAST_TURNS = 3;

function stringField(payload: Record<string, unknown>, field: string): string | null {
  const value = payload[field];
  return typeof value === 'string' && value !== '' ? value : null;
}

/** The pick-up summary of a held conversation, from its timeline. */
export function pickUpOf(timeline: SessionTimeline): PickUp {
  let pickUp: PickUp = {
    requestedAt: null,
    requestedBy: null,
    reason: null,
    agent: null,
    intent: null,
    heldMessages: 0,
    lastMessages: [],
  };
  let served: { agent: string | null; intent: string | null } = { agent: null, intent: null };
  for (const turn of timeline.turns) {
    if (turn.session_control === null && !turn.blocked) served = { agent: turn.route, intent: turn.intent };
    const request = turn.events.find((event) => event.name === 'session.human_handoff.requested');
    if (request) {
      pickUp = {
        ...pickUp,
        ...served,
        requestedAt: stringField(request.payload, 'at') ?? turn.at,
        requestedBy: 'customer',
        reason: stringField(request.payload, 'reason'),
        heldMessages: 0,
      };
    }
    if (turn.events.some((event) => event.name === 'session.message.held_for_human')) pickUp.heldMessages++;
    for (const action of turn.admin_actions) {
      if (action.action !== 'handoff') continue;
      pickUp = {
        ...pickUp,
        ...served,
        requestedAt: action.at,
        requestedBy: 'operator',
        reason: action.reason,
        heldMessages: 0,
      };
    }
  }
  pickUp.lastMessages = timeline.turns
    .slice(-LAST_TURNS)
    .flatMap((turn) => [
      ...(turn.user_message ? [{ turn: turn.turn, role: 'customer' as const, text: turn.user_message }] : []),
      ...(turn.answer ? [{ turn: turn.turn, role: 'answer' as const, text: turn.answer }] : []),
    ]);
  return pickUp;
}

/** Oldest hand-off first; sessions whose request time is unknown go last. */
export function byLongestWait<T extends { pickUp: PickUp | null }>(a: T, b: T): number {
  const at = (entry: T) => (entry.pickUp?.requestedAt ? Date.parse(entry.pickUp.requestedAt) : null);
  const [left, right] = [at(a), at(b)];
  if (left === null || right === null) return left === right ? 0 : left === null ? 1 : -1;
  return left - right;
}
