import { EventEmitter2 } from '@nestjs/event-emitter';
import { EventBusService, MetricsListener, MetricsService } from '@agent/observability';

/** The metadata key @OnEvent writes on a listener method (what Nest's explorer reads at bootstrap). */
const LISTENER_METADATA = 'EVENT_LISTENER_METADATA';

/**
 * An event bus outside Nest with the metrics listener subscribed the way the app subscribes it (from its @OnEvent
 * decorators), so a test of one stage sees the counters its committed events move.
 */
export function listeningBus(): { events: EventBusService; metrics: MetricsService } {
  const emitter = new EventEmitter2();
  const metrics = new MetricsService();
  const listener = new MetricsListener(metrics);
  const prototype = Object.getPrototypeOf(listener) as Record<string, unknown>;
  for (const name of Object.getOwnPropertyNames(prototype)) {
    const method = prototype[name];
    if (typeof method !== 'function') continue;
    const subscriptions = (Reflect.getMetadata(LISTENER_METADATA, method) ?? []) as { event: string }[];
    for (const { event } of subscriptions) {
      emitter.on(event, (payload: unknown) => (method as (payload: unknown) => void).call(listener, payload));
    }
  }
  return { events: new EventBusService(emitter), metrics };
}
