import { Inject, Injectable } from '@nestjs/common';
import { DeadLetter, DeadLetterStore } from './dead-letter.store';
import {
  DeadLetterNotFoundError,
  WebhookDeliveryFailedError,
  WebhookEndpointUnknownError,
} from './events.errors';
import { EVENT_DESTINATIONS, EventDestination } from './outbound-event';
import { WebhookDestination } from './webhook.destination';

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
   * all drops it). `tenants` null allows any tenant; another tenant's letter is not found, like a missing one.
   */
  async redeliver(id: string, tenants: readonly string[] | null): Promise<DeadLetter> {
    const letter = await this.store.get(id);
    if (!letter || (tenants !== null && !tenants.includes(letter.tenant_id))) {
      throw new DeadLetterNotFoundError();
    }
    const destination = this.destinations.find(
      (candidate): candidate is WebhookDestination =>
        candidate instanceof WebhookDestination && candidate.name === letter.destination,
    );
    if (!destination) throw new WebhookEndpointUnknownError(letter.destination);
    const result = await destination.send(letter.body);
    const updated = await this.store.attempted(id, {
      delivered: result.ok,
      error: result.ok ? null : result.error,
    });
    if (!result.ok) throw new WebhookDeliveryFailedError(updated);
    return updated;
  }
}
