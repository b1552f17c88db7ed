import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import type { MetricsService } from '@agent/observability';
import type { DeadLetterStore } from './dead-letter.store';
import { EventDestination, EventDocument, eventDocument, OutboundEvent } from './outbound-event';
import { acceptsEvent, WebhookEndpointConfig } from './webhooks.config';

/** Retry settings of one endpoint (its own, else the EVENTS_WEBHOOK_* defaults). */
export interface WebhookRetry {
  timeoutMs: number;
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
}

/** The wait before attempt `attempt + 1`: exponential, capped, with half of it random so retries spread out. */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number, random = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** The outcome of one HTTP attempt. */
export type AttemptResult = { ok: true } | { ok: false; error: string };

/**
 * One tenant's webhook endpoint: its events (through its filter) as Standard Webhooks requests (`webhook-id` is
 * the event id, `webhook-timestamp`, `webhook-signature` an HMAC-SHA256 of id, timestamp and body). A 2xx answer
 * delivers; anything else (a redirect included: it is never followed), a timeout or a network error is retried
 * with backoff, and after the last attempt the event becomes a dead letter (visible and redeliverable through the
 * admin API) so the conversation's later events are not held up for ever. The count of failed attempts is stored, so it survives restarts.
 */
export class WebhookDestination implements EventDestination {
  readonly name: string;
  readonly tenant: string;
  private readonly signer: Webhook;

  constructor(
    private readonly endpoint: WebhookEndpointConfig,
    secret: string,
    private readonly retry: WebhookRetry,
    private readonly deadLetters: DeadLetterStore,
    private readonly metrics: MetricsService,
  ) {
    this.name = `webhook:${endpoint.id}`;
    this.tenant = endpoint.tenant_id;
    this.signer = new Webhook(secret);
  }

  /** How long one attempt may wait for an answer. */
  get timeoutMs(): number {
    return this.retry.timeoutMs;
  }

  async deliver(event: OutboundEvent, signal: AbortSignal): Promise<void> {
    if (!acceptsEvent(this.endpoint.events, event.name)) return;
    const document = eventDocument(event);
    // Attempts are counted in the database: a restarted replica (or the one taking over) continues the backoff.
    const earlier = await this.deadLetters.pendingAttempts(this.name, event.id);
    let attempts = earlier?.attempts ?? 0;
    let error = earlier?.last_error ?? '';
    let due = earlier?.next_attempt_at.getTime() ?? 0;
    while (attempts < this.retry.maxAttempts) {
      // Stopping the service rejects here, between attempts: the conversation is left for the next replica, which
      // continues the count. An attempt in flight is not aborted but let finish (its timeout bounds it) and
      // counted, so a stop never lets an endpoint see more than max_attempts requests for one event.
      signal.throwIfAborted();
      if (due > Date.now()) await sleep(due - Date.now(), undefined, { signal });
      const result = await this.send(document);
      if (result.ok) {
        if (attempts > 0) await this.deadLetters.attemptsSettled(this.name, event.id);
        return;
      }
      attempts += 1;
      error = result.error;
      if (attempts < this.retry.maxAttempts) {
        due = Date.now() + backoffDelay(attempts, this.retry.backoffBaseMs, this.retry.backoffMaxMs);
        await this.deadLetters.attemptFailed(this.name, event, {
          attempts,
          next_attempt_at: new Date(due),
          last_error: error,
        });
      }
    }
    await this.deadLetters.record({
      destination: this.name,
      tenant_id: event.tenant_id,
      conversation_key: event.conversation_key,
      version: event.version,
      event_id: event.id,
      event_name: event.name,
      body: document,
      attempts,
      last_error: error,
    });
    this.metrics.eventsDeadLettered.inc({ destination: this.name });
  }

  /** One signed request; never throws. */
  async send(document: EventDocument): Promise<AttemptResult> {
    const body = JSON.stringify(document);
    const now = new Date();
    const timeout = AbortSignal.timeout(this.retry.timeoutMs);
    try {
      const response = await fetch(this.endpoint.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': document.id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': this.signer.sign(document.id, now, body),
        },
        body,
        signal: timeout,
        // A signed event goes only to the configured URL: a redirect (even a 307 keeping the method and body) is
        // the endpoint refusing it, never somewhere else to send it.
        redirect: 'manual',
      });
      await response.body?.cancel();
      if (response.ok) return { ok: true };
      const redirect = response.status >= 300 && response.status < 400;
      return {
        ok: false,
        error: `HTTP ${response.status}${redirect ? ' (redirects are not followed)' : ''}`,
      };
    } catch (error) {
      if (timeout.aborted) return { ok: false, error: `no answer within ${this.retry.timeoutMs} ms` };
      // fetch reports a refused connection as `fetch failed` with the reason as its cause.
      return { ok: false, error: String(error instanceof Error ? (error.cause ?? error.message) : error) };
    }
  }

  async close(): Promise<void> {
    // Nothing held open: each request is its own.
  }
}
