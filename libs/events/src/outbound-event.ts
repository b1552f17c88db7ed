/** One committed event on its way out of the process. */
export interface OutboundEvent {
  /** `<conversation_key>:<version>:<seq>`: the same on every delivery of the event, so consumers drop repeats. */
  id: string;
  name: string;
  tenant_id: string;
  conversation_key: string;
  /** The commit (turn log version) the event belongs to, and its position in that commit (from 1). */
  version: number;
  seq: number;
  payload: Record<string, unknown>;
}

/** What a destination receives: the Standard Webhooks body shape, also the data of a NATS message. */
export interface EventDocument {
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

export function eventDocument(event: OutboundEvent): EventDocument {
  const at = event.payload.at;
  return {
    id: event.id,
    type: event.name,
    timestamp: typeof at === 'string' ? at : new Date().toISOString(),
    data: event.payload,
  };
}

/** Where committed events go: a NATS stream, a tenant's webhook endpoint. */
export interface EventDestination {
  /** Unique among destinations; it keys the delivery positions (`nats:<stream>`, `webhook:<endpoint>`). */
  readonly name: string;
  /** Only this tenant's events, or every tenant's when null. */
  readonly tenant: string | null;
  /**
   * Delivers one event, or settles it for good (a dead letter); a rejection leaves it and the rest of its
   * conversation for a later attempt. `signal` aborts waits when the service stops.
   */
  deliver(event: OutboundEvent, signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** The injection token of the configured destinations. */
export const EVENT_DESTINATIONS = Symbol('EVENT_DESTINATIONS');
