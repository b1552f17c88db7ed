import { Injectable, Logger } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import type { EventName, EventPayload, StoredEvent } from '@agent/contracts';
import { TurnContext, TurnContextStore } from './turn-context';

/**
 * The event bus. Inside a turn (or an operator action) an event is only buffered: the commit stores it in its turn log row, and
 * `publishCommitted` hands it to the in-process listeners (@nestjs/event-emitter) afterwards, so a turn that
 * fails with 409 or 503 has announced nothing of what it did. What announces the failure itself (`emitFailure`)
 * is buffered apart and published by `publishFailed` once the failed run is recorded. Outside a turn, or after
 * its commit, an event is published at once. Every payload carries tenant_id, agent_id, session_id,
 * conversation_key, turn, at.
 */
@Injectable()
export class EventBusService {
  private readonly logger = new Logger(EventBusService.name);
  private readonly commitListeners = new Set<(context: TurnContext) => void>();

  constructor(private readonly emitter: EventEmitter2) {}

  /**
   * Calls `listener` after every commit and every failed-run record this process makes (once its events are
   * published), whatever the events: the event relay starts delivering at once instead of at its next poll.
   * Returns the unsubscribe.
   */
  onCommitted(listener: (context: TurnContext) => void): () => void {
    this.commitListeners.add(listener);
    return () => this.commitListeners.delete(listener);
  }

  emit<N extends EventName>(name: N, payload: EventPayload<N>): StoredEvent {
    const context = TurnContextStore.current();
    const event = this.stored(name, payload, context);
    // Work a turn left running past its commit (a shadow comparison) is no longer part of what it stores.
    if (context && context.committed !== true) context.events.push(event);
    else this.publish(event);
    return event;
  }

  /**
   * An event that announces the turn's failure: inside a turn it outlives the turn's buffer, which the failure
   * discards, and waits for `publishFailed`; outside one it is published at once.
   */
  emitFailure<N extends EventName>(name: N, payload: EventPayload<N>): StoredEvent {
    const context = TurnContextStore.current();
    const event = this.stored(name, payload, context);
    if (context && context.committed !== true) (context.failure ??= []).push(event);
    else this.publish(event);
    return event;
  }

  /** Called once the turn's commit succeeded: its buffered events reach the in-process listeners, in order. */
  publishCommitted(context: TurnContext): void {
    context.committed = true;
    for (const event of context.events) this.publish(event);
    this.notify(context);
  }

  /** Called once a failed turn's run is recorded (or could not be): its failure events reach the listeners. */
  publishFailed(context: TurnContext): void {
    for (const event of context.failure ?? []) this.publish(event);
    this.notify(context);
  }

  private stored<N extends EventName>(
    name: N,
    payload: EventPayload<N>,
    context: TurnContext | undefined,
  ): StoredEvent {
    const at = new Date().toISOString();
    const full: Record<string, unknown> = {
      ...(payload as Record<string, unknown>),
      tenant_id: context?.tenant_id ?? (payload as Record<string, unknown>).tenant_id,
      agent_id: context?.agent_id ?? (payload as Record<string, unknown>).agent_id,
      session_id: context?.session_id ?? (payload as Record<string, unknown>).session_id,
      conversation_key: context?.conversation_key ?? (payload as Record<string, unknown>).conversation_key,
      turn: context?.turn ?? (payload as Record<string, unknown>).turn,
      at,
    };
    return { name, payload: full, at };
  }

  private notify(context: TurnContext): void {
    for (const listener of this.commitListeners) {
      try {
        listener(context);
      } catch (error) {
        this.logger.error(`commit listener failed: ${String(error)}`);
      }
    }
  }

  private publish(event: StoredEvent): void {
    try {
      this.emitter.emit(event.name, event.payload);
    } catch (error) {
      // A listener failure must never break the turn that emitted the event.
      this.logger.error(`listener of ${event.name} failed: ${String(error)}`);
    }
  }
}
