import { CodedError } from '@agent/contracts';
import type { DeadLetter } from './dead-letter.store';

export const EVENTS_ERROR_CODES = [
  'DEAD_LETTER_NOT_FOUND',
  'WEBHOOK_ENDPOINT_UNKNOWN',
  'REDELIVERY_IN_PROGRESS',
  'WEBHOOK_DELIVERY_FAILED',
  'EVENT_DESTINATION_CLOSED',
] as const;
export type EventsErrorCode = (typeof EVENTS_ERROR_CODES)[number];

export class DeadLetterNotFoundError extends CodedError<EventsErrorCode> {
  constructor() {
    super('DEAD_LETTER_NOT_FOUND', 'dead letter not found');
  }
}

/**
 * The endpoint of a dead letter is no longer in webhooks.yaml (or is disabled), or its id now names an endpoint of
 * another tenant: nowhere the letter's tenant may be sent it.
 */
export class WebhookEndpointUnknownError extends CodedError<EventsErrorCode> {
  constructor(
    readonly destination: string,
    tenantId: string,
  ) {
    super(
      'WEBHOOK_ENDPOINT_UNKNOWN',
      `${destination} is not a configured webhook endpoint of tenant ${tenantId}`,
    );
  }
}

/** Another redelivery of the letter is in flight; it ends within the endpoint's timeout. */
export class RedeliveryInProgressError extends CodedError<EventsErrorCode> {
  constructor(timeoutMs: number) {
    super('REDELIVERY_IN_PROGRESS', 'another redelivery of this dead letter is in flight', {
      retryAfterSeconds: Math.ceil(timeoutMs / 1000),
    });
  }
}

/** A redelivery the endpoint did not accept; the letter stays dead with one more attempt counted. */
export class WebhookDeliveryFailedError extends CodedError<EventsErrorCode> {
  constructor(letter: DeadLetter) {
    super('WEBHOOK_DELIVERY_FAILED', `the endpoint did not accept the event: ${letter.last_error}`, {
      details: { attempts: letter.attempts, last_error: letter.last_error },
    });
  }
}

/** A delivery asked of a destination the service has already closed (it is stopping). */
export class EventDestinationClosedError extends CodedError<EventsErrorCode> {
  constructor(destination: string) {
    super('EVENT_DESTINATION_CLOSED', `${destination} is closed`);
  }
}
