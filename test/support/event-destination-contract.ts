import { randomUUID } from 'node:crypto';
import { EventDestination, EventDocument, eventDocument, OutboundEvent } from '@agent/events';
import { eventually } from './wait-for';

/** A destination under test, with the far side it delivers to. */
export interface EventDestinationHarness {
  destination: EventDestination;
  /** What the far side holds so far, in arrival order (a repeat included where the far side keeps one). */
  received(): Promise<EventDocument[]>;
  close(): Promise<void>;
}

/** `count` events of one new conversation, in its order. */
function conversation(count: number): OutboundEvent[] {
  const conversationKey = `contract:${randomUUID()}`;
  return Array.from({ length: count }, (_, index) => ({
    id: `${conversationKey}:1:${index + 1}`,
    name: index === 0 ? 'NOC.001' : 'AGENT_COMPLETED',
    tenant_id: 'contract',
    conversation_key: conversationKey,
    version: 1,
    seq: index + 1,
    payload: { at: new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString(), turn: 1, answer_chars: index },
  }));
}

/**
 * What every event destination must do (libs/events/src/outbound-event.ts): deliver each event as its document
 * (id, type, timestamp, data), a conversation's events in the order they are given, concurrent conversations all,
 * and a repeat of an event (a relay that crashed before recording the delivery) under the same id and document,
 * so the far side can drop it.
 */
export function describeEventDestinationContract(
  name: string,
  open: () => Promise<EventDestinationHarness>,
): void {
  describe(`event destination contract: ${name}`, () => {
    let harness: EventDestinationHarness;
    const signal = new AbortController().signal;

    beforeAll(async () => {
      harness = await open();
    }, 60000);

    afterAll(() => harness?.close());

    /** The documents of `events` the far side holds, once the last of them has arrived. */
    async function arrived(events: OutboundEvent[]): Promise<EventDocument[]> {
      const ids = new Set(events.map((event) => event.id));
      const last = events[events.length - 1].id;
      return eventually(`${last} at ${name}`, async () => {
        const documents = (await harness.received()).filter((document) => ids.has(document.id));
        return documents.some((document) => document.id === last) ? documents : undefined;
      });
    }

    it('delivers an event as its document: id, type, timestamp and payload', async () => {
      const [event] = conversation(1);
      await harness.destination.deliver(event, signal);
      expect(await arrived([event])).toEqual([eventDocument(event)]);
    });

    it("delivers a conversation's events in the order given", async () => {
      const events = conversation(5);
      for (const event of events) await harness.destination.deliver(event, signal);
      expect((await arrived(events)).map((document) => document.id)).toEqual(events.map((event) => event.id));
    });

    it('delivers the events of conversations delivered at once', async () => {
      const events = Array.from({ length: 10 }, () => conversation(1)[0]);
      await Promise.all(events.map((event) => harness.destination.deliver(event, signal)));
      const ids = await eventually(`10 conversations at ${name}`, async () => {
        const wanted = new Set(events.map((event) => event.id));
        const got = new Set(
          (await harness.received()).map((document) => document.id).filter((id) => wanted.has(id)),
        );
        return got.size === wanted.size ? [...got].sort() : undefined;
      });
      expect(ids).toEqual(events.map((event) => event.id).sort());
    });

    it('repeats an event under the same id and document, so the far side can drop the repeat', async () => {
      const [first, second] = conversation(2);
      await harness.destination.deliver(first, signal);
      await harness.destination.deliver(first, signal);
      await harness.destination.deliver(second, signal);
      const documents = await arrived([first, second]);
      const distinct = [...new Set(documents.map((document) => document.id))];
      expect(distinct).toEqual([first.id, second.id]);
      for (const document of documents.filter((d) => d.id === first.id)) {
        expect(document).toEqual(eventDocument(first));
      }
    });
  });
}
