import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { parseEnvNamespace } from '@agent/config';
import { NatsDestination, OutboundEvent } from '@agent/events';
import { NATS_URL } from '../support/nats';
import { TcpProxy } from '../support/tcp-proxy';
import { uniqueId } from '../support/test-app';
import { waitUntil } from '../support/wait-for';

/**
 * The NATS destination against the shared JetStream server, through a proxy that counts its connections: the
 * relay delivers many conversations at once, and they must share one connection.
 */
describe('NATS destination', () => {
  const id = uniqueId('d').replace(/-/g, '_');
  const stream = `T_${id}`;
  let proxy: TcpProxy;
  let destination: NatsDestination;

  beforeAll(async () => {
    const forwarded = await TcpProxy.forUrl(NATS_URL);
    proxy = forwarded.proxy;
    destination = new NatsDestination({
      ...parseEnvNamespace('events', {}),
      EVENTS_NATS_URL: forwarded.url,
      EVENTS_NATS_STREAM: stream,
      EVENTS_NATS_SUBJECT_PREFIX: `test.${id}`,
    });
  });

  afterAll(async () => {
    await destination.close();
    await proxy.cut();
    const admin = await connect({ servers: NATS_URL, timeout: 2000 });
    try {
      await (await jetstreamManager(admin)).streams.delete(stream).catch(() => false);
    } finally {
      await admin.close();
    }
  });

  const event = (conversation: number): OutboundEvent => ({
    id: `t:c${conversation}:1:1`,
    name: 'AGENT_COMPLETED',
    tenant_id: 't',
    conversation_key: `t:c${conversation}`,
    version: 1,
    seq: 1,
    payload: { at: new Date(0).toISOString() },
  });

  it('opens one connection for deliveries that start together, and none is left after close', async () => {
    await Promise.all(
      Array.from({ length: 20 }, (_, conversation) => destination.deliver(event(conversation))),
    );
    expect(proxy.connections).toBe(1);
    const admin = await connect({ servers: NATS_URL, timeout: 2000 });
    try {
      const info = await (await jetstreamManager(admin)).streams.info(stream);
      expect(info.state.messages).toBe(20);
    } finally {
      await admin.close();
    }

    await destination.close();
    await waitUntil('the connection closed', () => proxy.connections === 0, 5000);
    await expect(destination.deliver(event(0))).rejects.toMatchObject({ code: 'EVENT_DESTINATION_CLOSED' });
  });
});
