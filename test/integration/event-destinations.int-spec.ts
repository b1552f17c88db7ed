import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { parseEnvNamespace } from '@agent/config';
import { createDataSource, DatabaseService, runMigrationsExclusively } from '@agent/database';
import {
  DeadLetterEntity,
  DeadLetterStore,
  DeliveryAttemptEntity,
  EventDocument,
  EVENTS_ENTITIES,
  NatsDestination,
  WebhookDestination,
} from '@agent/events';
import { MetricsService } from '@agent/observability';
import { describeEventDestinationContract } from '../support/event-destination-contract';
import { NATS_URL } from '../support/nats';
import { uniqueId } from '../support/test-app';
import { WebhookReceiver } from '../support/webhook-receiver';

/** The event destination contract on every adapter: a JetStream stream of the shared server, a webhook endpoint. */
describeEventDestinationContract('NATS JetStream', async () => {
  const id = uniqueId('contract').replace(/-/g, '_');
  const stream = `CONTRACT_${id}`;
  const destination = new NatsDestination({
    ...parseEnvNamespace('events', {}),
    EVENTS_NATS_URL: NATS_URL,
    EVENTS_NATS_STREAM: stream,
    EVENTS_NATS_SUBJECT_PREFIX: `contract.${id}`,
  });
  const reader = await connect({ servers: NATS_URL, timeout: 2000 });
  const manager = await jetstreamManager(reader);
  return {
    destination,
    received: async () => {
      // The stream exists once the destination delivered its first event.
      const info = await manager.streams.info(stream).catch(() => null);
      if (info === null) return [];
      const documents: EventDocument[] = [];
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const message = await manager.streams.getMessage(stream, { seq });
        if (message) documents.push(message.json<EventDocument>());
      }
      return documents;
    },
    close: async () => {
      await destination.close();
      await manager.streams.delete(stream).catch(() => false);
      await reader.close();
    },
  };
});

const url = process.env.DATABASE_URL;
if (url) {
  describeEventDestinationContract('webhook', async () => {
    const receiver = await WebhookReceiver.start();
    const dataSource = await createDataSource({
      url,
      poolSize: 2,
      embedded: false,
      entities: EVENTS_ENTITIES,
    });
    await runMigrationsExclusively(dataSource, 0);
    const database = new DatabaseService(dataSource, null);
    const deadLetters = new DeadLetterStore(
      database,
      dataSource.getRepository(DeadLetterEntity),
      dataSource.getRepository(DeliveryAttemptEntity),
    );
    const destination = new WebhookDestination(
      {
        id: uniqueId('contract'),
        tenant_id: 'contract',
        url: receiver.url('/hook'),
        secret_env: 'CONTRACT_WEBHOOK_SECRET',
        events: ['*'],
        enabled: true,
      },
      `whsec_${randomBytes(32).toString('base64')}`,
      { timeoutMs: 5000, maxAttempts: 3, backoffBaseMs: 10, backoffMaxMs: 50 },
      deadLetters,
      new MetricsService(),
    );
    return {
      destination,
      received: () => Promise.resolve(receiver.delivered(() => true).map((request) => request.document)),
      close: async () => {
        await destination.close();
        await receiver.stop();
        await database.onApplicationShutdown();
      },
    };
  });
} else {
  describe('the webhook destination contract', () => {
    it.skip('needs DATABASE_URL (CI sets it) for the delivery attempts the destination records', () =>
      undefined);
  });
}
