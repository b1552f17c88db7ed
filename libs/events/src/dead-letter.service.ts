import { Inject, Injectable } from '@nestjs/common';
import { DeadLetter, DeadLetterStore } from './dead-letter.store';
import {
  DeadLetterNotFoundError,
  RedeliveryInProgressError,
  WebhookDeliveryFailedError,
  WebhookEndpointUnknownError,
} from './events.errors';
import { EVENT_DESTINATIONS, EventDestination } from './outbound-event';
import { WebhookDestination } from './webhook.destination';

/** How much longer than the endpoint's timeout a redelivery's claim holds the letter. */
const REDELIVERY_CLAIM_MARGIN_MS = 30_000;

/** The admin side of dead letters: list them, send one again, purge them with their conversation. */
@Injectable()
export class DeadLetterService {
  constructor(
    private readonly store: DeadLetterStore,
    @Inject(EVENT_DESTINATIONS) private readonly destinations: EventDestination[],
  ) {}

  list(filter: { tenantId?: string; redelivered?: boolean; limit: number }): Promise<DeadLetter[]> {
    return this.store.list(filter);
  }

  /** Privacy: a purged conversation's letters go with it; returns how many went. */
  purgeConversation(conversationKey: string): Promise<number> {
    return this.store.deleteConversation(conversationKey);
  }

  /** Privacy: the letters of a subject's conversations (see DeadLetterStore.deleteSubject). */
  purgeSubject(subject: Parameters<DeadLetterStore['deleteSubject']>[0]): Promise<number> {
    return this.store.deleteSubject(subject);
  }

  /**
   * One signed attempt now, with the stored body and the original `webhook-id` (so a receiver that got it after
   * all drops it), to the letter's endpoint if it still is one of the letter's tenant. `tenants` null allows any
   * tenant; another tenant's letter is not found, like a missing one. One redelivery of a letter at a time (across
   * replicas): a call while one is in flight is refused, and a letter already redelivered is answered as it is.
   */
  async redeliver(id: string, tenants: readonly string[] | null): Promise<DeadLetter> {
    const letter = await this.store.get(id);
    if (!letter || (tenants !== null && !tenants.includes(letter.tenant_id))) {
      throw new DeadLetterNotFoundError();
    }
    if (letter.redelivered_at !== null) return letter;
    const destination = this.destinations.find(
      (candidate): candidate is WebhookDestination =>
        candidate instanceof WebhookDestination &&
        candidate.name === letter.destination &&
        candidate.tenant === letter.tenant_id,
    );
    if (!destination) throw new WebhookEndpointUnknownError(letter.destination, letter.tenant_id);
    // The claim outlasts the attempt (its timeout bounds it); it lapses only for a replica that died meanwhile.
    const attempt = await this.store.claimRedelivery(id, destination.timeoutMs + REDELIVERY_CLAIM_MARGIN_MS);
    if (attempt === null) return this.unclaimed(id, destination);
    const result = await destination.send(letter.body);
    const updated = await this.store.redeliveryDone(id, attempt, {
      delivered: result.ok,
      error: result.ok ? null : result.error,
    });
    if (!updated) return this.unclaimed(id, destination);
    if (!result.ok) throw new WebhookDeliveryFailedError(updated);
    return updated;
  }

  /** A letter this call could not (or no longer) hold: gone, delivered by another call, or in another's hands. */
  private async unclaimed(id: string, destination: WebhookDestination): Promise<DeadLetter> {
    const current = await this.store.get(id);
    if (!current) throw new DeadLetterNotFoundError();
    if (current.redelivered_at !== null) return current;
    throw new RedeliveryInProgressError(destination.timeoutMs);
  }
}
