import { EventEmitter2 } from '@nestjs/event-emitter';
import { CheckpointService, CheckpointStore, ConversationIdentity } from '@agent/checkpoint';
import { parseEnvNamespace } from '@agent/config';
import { conversationKeyOf, type AgentState } from '@agent/contracts';
import { EventBusService, MetricsService } from '@agent/observability';

export interface SeenEvent {
  name: string;
  payload: Record<string, unknown>;
}

/** A CheckpointService on `store` with fast retries, and every event it publishes. */
export function checkpointServiceFor(store: CheckpointStore, env: Record<string, string> = {}) {
  const emitter = new EventEmitter2();
  const seen: SeenEvent[] = [];
  emitter.onAny((name, payload) =>
    seen.push({ name: String(name), payload: payload as Record<string, unknown> }),
  );
  const config = parseEnvNamespace('checkpoint', {
    CHECKPOINT_RETRY_BASE_MS: '5',
    CHECKPOINT_RETRY_JITTER_MS: '5',
    ...env,
  });
  const metrics = new MetricsService();
  const service = new CheckpointService(store, config, new EventBusService(emitter), metrics);
  return { service, seen, config, metrics };
}

let counter = 0;
/** A conversation no other test uses. */
export function conversationIdentity(prefix = 'svc'): ConversationIdentity {
  const session = `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter++}`;
  return {
    conversation_key: conversationKeyOf('acme', session),
    tenant_id: 'acme',
    session_id: session,
    agent_id: 'telecom_contas',
    user_id: 'u-1',
    channel: 'web',
  };
}

/** One turn the way TurnService runs it: lease with the head, load (with recovery), next state, commit. */
export async function runCheckpointTurn(
  service: CheckpointService,
  who: ConversationIdentity,
  next: (previous: AgentState, turn: number) => AgentState = (previous, turn) => ({
    ...previous,
    user_text: `message ${turn}`,
    turn,
  }),
): Promise<{ version: number; restoredFrom: number | null; state: AgentState }> {
  const lease = await service.acquire(who);
  try {
    const loaded = await service.load(lease);
    const turn = lease.session.turn_count + 1;
    const state = next(loaded?.state ?? {}, turn);
    const version = await service.commit({
      identity: who,
      leaseToken: lease.token,
      parentVersion: loaded?.version ?? null,
      turn,
      state,
      status: 'active',
      events: [],
    });
    return { version, restoredFrom: loaded?.version ?? null, state };
  } finally {
    await lease.release();
  }
}

/** The store with some methods replaced, to provoke failures a store cannot be made to produce on cue. */
export function storeWith(store: CheckpointStore, overrides: Partial<CheckpointStore>): CheckpointStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      const override = (overrides as Record<PropertyKey, unknown>)[property];
      if (override !== undefined) return override;
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** What pg throws when the connection drops. */
export function connectionReset(): Error {
  return Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
}
