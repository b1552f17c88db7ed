import { AsyncLocalStorage } from 'node:async_hooks';
import type { StoredEvent } from '@agent/contracts';
import type { TurnStream } from './turn-stream';

export interface NodeTiming {
  node: string;
  duration_ms: number;
  outcome: 'ok' | 'error';
}

/** Per-turn facts carried through async calls: who the turn belongs to and what it emitted. */
export interface TurnContext {
  request_id: string;
  tenant_id: string;
  agent_id: string;
  session_id: string;
  conversation_key: string;
  turn: number;
  events: StoredEvent[];
  /**
   * Events about the turn's failure (`EventBusService.emitFailure`): kept apart from `events`, which a failed turn
   * discards, and published with the failed run's record.
   */
  failure?: StoredEvent[];
  nodes: NodeTiming[];
  /** Set when the commit succeeded and the events were published; later events are published at once. */
  committed?: boolean;
  /** Present while the client streams the turn's answer (`Accept: text/event-stream`). */
  stream?: TurnStream;
}

const storage = new AsyncLocalStorage<TurnContext>();

export const TurnContextStore = {
  run<T>(context: TurnContext, work: () => Promise<T>): Promise<T> {
    return storage.run(context, work);
  },
  current(): TurnContext | undefined {
    return storage.getStore();
  },
};
