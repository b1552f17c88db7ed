import { Injectable, Logger } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import type { EventName, EventPayload, StoredEvent } from '@agent/contracts';
import { TurnContextStore } from './turn-context';

/**
 * Publishes events on @nestjs/event-emitter and, inside a turn, buffers them so the turn's commit stores
 * them in its turn log row. Every payload carries tenant_id, agent_id, session_id, conversation_key, turn, at.
 */
@Injectable()
export class EventBusService {
  private readonly logger = new Logger(EventBusService.name);

  constructor(private readonly emitter: EventEmitter2) {}

  emit<N extends EventName>(name: N, payload: EventPayload<N>): StoredEvent {
    const context = TurnContextStore.current();
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
    const event: StoredEvent = { name, payload: full, at };
    context?.events.push(event);
    this.publish(event);
    return event;
  }

  /** Publishes an already-built event (for events stored outside a turn, e.g. admin operations). */
  publish(event: StoredEvent): void {
    try {
      this.emitter.emit(event.name, event.payload);
    } catch (error) {
      // A listener failure must never break the turn that emitted the event.
      this.logger.error(`listener of ${event.name} failed: ${String(error)}`);
    }
  }
}
