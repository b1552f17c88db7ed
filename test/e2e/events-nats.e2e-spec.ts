import { freePort, spawnAppProcess, stopAppProcess, waitUntilReady } from '../support/app-process';
import {
  DurableReader,
  expectedEventIds,
  NATS_URL,
  NatsServerProcess,
  outOfOrder,
  ReceivedEvent,
} from '../support/nats';
import { TcpProxy } from '../support/tcp-proxy';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';
import { eventually, waitUntil } from '../support/wait-for';

/**
 * Committed events reach a NATS JetStream stream through the relay: complete, once per id, in each
 * conversation's order, across a relaying process killed mid-way and a NATS server that goes away.
 */
const databaseUrl = process.env.DATABASE_URL;
const describeWithPostgres = databaseUrl
  ? describe
  : (name: string, body: () => void) => describe.skip(`${name} (needs DATABASE_URL; CI sets it)`, body);

/** A stream and subject prefix of this test only, so tests sharing the server never see each other's messages. */
function natsEnv(url: string) {
  const id = uniqueId('n').replace(/-/g, '_');
  return {
    stream: `T_${id}`,
    prefix: `test.${id}`,
    env: {
      EVENTS_NATS_URL: url,
      EVENTS_NATS_STREAM: `T_${id}`,
      EVENTS_NATS_SUBJECT_PREFIX: `test.${id}`,
      EVENTS_RELAY_POLL_MS: '50',
    },
  };
}

/** `conversations` conversations of `turns` turns each, the conversations at once, each one's turns in order. */
async function runTurns(app: TestApp, tenant: string, conversations: number, turns: number): Promise<void> {
  await Promise.all(
    Array.from({ length: conversations }, async (_, c) => {
      for (let t = 0; t < turns; t++) {
        const message = {
          tenant_id: tenant,
          agent_id: 'telecom_contas',
          session_id: `c${c}`,
          message_id: `m${t}`,
          text: `mensagem ${t} da conversa ${c}`,
        };
        // A connection a loaded machine drops is resent with the same message_id, as a channel would: it runs once.
        const response = await app
          .post('/v1/channels/web/messages', message)
          .catch(() => app.post('/v1/channels/web/messages', message));
        expect(response.status).toBe(200);
      }
    }),
  );
}

function idsOf(received: ReceivedEvent[]): string[] {
  return received.map((event) => event.id).sort();
}

describe('event relay to NATS JetStream', () => {
  it('delivers 200 turns over 20 conversations complete, once, and in order to a durable consumer', async () => {
    const nats = natsEnv(NATS_URL);
    const app = await startTestApp({ env: nats.env });
    const tenant = uniqueId('t');
    const reader = await DurableReader.open(NATS_URL, nats.stream, 'reader', `${nats.prefix}.${tenant}.>`);
    try {
      // Registered before the app served: the commits of its very first turns are the destination's too.
      const registered = await app.dataSource.query(
        'SELECT destination FROM event_relay_destinations WHERE destination = $1',
        [`nats:${nats.stream}`],
      );
      expect(registered).toHaveLength(1);
      await runTurns(app, tenant, 20, 10);
      const expected = await expectedEventIds((sql, params) => app.dataSource.query(sql, params), tenant);
      expect(expected.length).toBeGreaterThan(200);
      const received = await reader.readUntil((all) => all.length >= expected.length, 60000);
      expect(idsOf(received)).toEqual([...expected].sort());
      expect(outOfOrder(received)).toEqual([]);
      for (const event of received) {
        expect(event.msgId).toBe(event.id);
        expect(event.subject).toBe(`${nats.prefix}.${tenant}.${event.type}`);
        expect(event.data.tenant_id).toBe(tenant);
      }
      const ready = await app.get<{ details: { events: { destinations: { destination: string }[] } } }>(
        '/health/ready',
      );
      expect(ready.body.details.events.destinations).toEqual([
        expect.objectContaining({ destination: `nats:${nats.stream}` }),
      ]);
    } finally {
      await reader.close(true);
      await app.close();
    }
  }, 180000);

  it('keeps turns fast while NATS is down and catches up once it is back', async () => {
    const server = new NatsServerProcess(await freePort());
    await server.start();
    const nats = natsEnv(server.url);
    const app = await startTestApp({ env: nats.env });
    const tenant = uniqueId('t');
    let reader = await DurableReader.open(server.url, nats.stream, 'reader', `${nats.prefix}.${tenant}.>`);
    try {
      await runTurns(app, tenant, 2, 2);
      let expected = await expectedEventIds((sql, params) => app.dataSource.query(sql, params), tenant);
      await reader.readUntil((all) => all.length >= expected.length, 30000);
      await reader.close(false);

      await server.stop();
      await runTurns(app, tenant, 4, 3);
      expected = await expectedEventIds((sql, params) => app.dataSource.query(sql, params), tenant);
      // The lag is visible (and readiness still passes) while the events wait.
      await waitUntil(
        'the relay lag on /health/ready',
        async () => {
          const ready = await app.get<{ details: { events: { destinations: { lag_events: number }[] } } }>(
            '/health/ready',
          );
          expect(ready.status).toBe(200);
          return ready.body.details.events.destinations[0].lag_events > 0;
        },
        20000,
        100,
      );
      const metrics = await app.get<string>('/metrics');
      expect(metrics.body).toMatch(/agent_events_relay_lag_events\{destination="nats:T_[^"]+"\} [1-9]/);

      await server.start();
      // A second durable consumer reads the whole stream from its start.
      reader = await DurableReader.open(server.url, nats.stream, 'after', `${nats.prefix}.${tenant}.>`);
      const received = await reader.readUntil((all) => all.length >= expected.length, 60000);
      expect(new Set(idsOf(received))).toEqual(new Set(expected));
      expect(outOfOrder(received)).toEqual([]);
    } finally {
      await reader.close(true).catch(() => undefined);
      await app.close();
      await server.dispose();
    }
  }, 180000);
});

describe('a NATS server that hangs', () => {
  it('keeps turns fast, says so in readiness, and delivers every event once and in order after', async () => {
    // Between the app and the shared server: a black hole accepts and never answers, unlike a server that is down.
    const { proxy, url } = await TcpProxy.forUrl(NATS_URL);
    const nats = natsEnv(url);
    const app = await startTestApp({ env: nats.env });
    const tenant = uniqueId('t');
    const reader = await DurableReader.open(NATS_URL, nats.stream, 'reader', `${nats.prefix}.${tenant}.>`);
    type Ready = { details: { events: { degraded: boolean; destinations: DestinationStatus[] } } };
    type DestinationStatus = { lag_events: number; last_error: string | null };
    try {
      await runTurns(app, tenant, 2, 2);
      let expected = await expectedEventIds((sql, params) => app.dataSource.query(sql, params), tenant);
      await reader.readUntil((all) => all.length >= expected.length, 30000);

      proxy.blackHole();
      const started = Date.now();
      await runTurns(app, tenant, 4, 3);
      // Three turns in a row per conversation: none waited for a publish (5 s each).
      expect(Date.now() - started).toBeLessThan(5000);
      const hung = await eventually('readiness to show the failing destination', async () => {
        const ready = await app.get<Ready>('/health/ready');
        expect(ready.status).toBe(200);
        const [destination] = ready.body.details.events.destinations;
        // The error is recorded at the failed publish, the lag at the relay's next measurement: wait for both.
        return destination.last_error !== null && destination.lag_events > 0
          ? ready.body.details.events
          : undefined;
      });
      expect(hung.degraded).toBe(true);

      await proxy.restore();
      expected = await expectedEventIds((sql, params) => app.dataSource.query(sql, params), tenant);
      const received = await reader.readUntil((all) => all.length >= expected.length, 60000);
      expect(idsOf(received)).toEqual([...expected].sort());
      expect(outOfOrder(received)).toEqual([]);
      await eventually('readiness to clear', async () => {
        const ready = await app.get<Ready>('/health/ready');
        return ready.body.details.events.degraded ? undefined : true;
      });
    } finally {
      await reader.close(true);
      await app.close();
      await proxy.stop();
    }
  }, 180000);
});

describe('a relay pass whose acknowledgements fail', () => {
  it('gives its claims up and delivers the commits again, in order, once the acknowledgements go through', async () => {
    const nats = natsEnv(NATS_URL);
    const destination = `nats:${nats.stream}`;
    const app = await startTestApp({ env: nats.env });
    const tenant = uniqueId('t');
    const reader = await DurableReader.open(NATS_URL, nats.stream, 'reader', `${nats.prefix}.${tenant}.>`);
    // The database refuses the first two acknowledgement statements of this destination (a sequence, because
    // the refusal rolls back whatever else the statement did).
    const name = `refuse_${nats.stream.toLowerCase()}`;
    const query = (sql: string) => app.dataSource.query(sql);
    await query(`CREATE SEQUENCE ${name}`);
    await query(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.destination = '${destination}' AND NEW.next_position IS DISTINCT FROM OLD.next_position
           AND nextval('${name}') <= 2 THEN
          RAISE EXCEPTION 'acknowledgement refused by the test';
        END IF;
        RETURN NEW;
      END $$`);
    await query(
      `CREATE TRIGGER ${name} BEFORE UPDATE ON event_relay_backlog FOR EACH ROW EXECUTE FUNCTION ${name}()`,
    );
    try {
      await runTurns(app, tenant, 4, 3);
      const expected = await expectedEventIds((sql, params) => app.dataSource.query(sql, params), tenant);
      const received = await reader.readUntil((all) => all.length >= expected.length, 60000);
      expect(idsOf(received)).toEqual([...expected].sort());
      expect(outOfOrder(received)).toEqual([]);
      const [refused] = await app.dataSource.query<{ refused: string }[]>(
        `SELECT last_value AS refused FROM ${name}`,
      );
      expect(Number(refused.refused)).toBeGreaterThan(2);
      const metrics = await app.get<string>('/metrics');
      expect(metrics.body).toMatch(
        new RegExp(`agent_events_delivery_failures_total\\{destination="${destination}"\\} [1-9]`),
      );
      await eventually('no claim held and every commit acknowledged', async () => {
        const [row] = await app.dataSource.query<{ held: number; behind: number }[]>(
          `SELECT count(*) FILTER (WHERE lease_owner IS NOT NULL)::integer AS held,
                  count(*) FILTER (WHERE next_position <= last_position)::integer AS behind
             FROM event_relay_backlog WHERE destination = $1`,
          [destination],
        );
        return row.held === 0 && row.behind === 0 ? true : undefined;
      });
    } finally {
      await query(`DROP TRIGGER IF EXISTS ${name} ON event_relay_backlog`);
      await query(`DROP FUNCTION IF EXISTS ${name}()`);
      await query(`DROP SEQUENCE IF EXISTS ${name}`);
      await reader.close(true);
      await app.close();
    }
  }, 180000);
});

describeWithPostgres('a relaying process killed mid-way', () => {
  it('loses nothing: the restarted relay resumes from the last acknowledged commit', async () => {
    const nats = natsEnv(NATS_URL);
    // Turns are served by this process, which relays nothing; the relay is its own OS process.
    const app = await startTestApp();
    const tenant = uniqueId('t');
    const port = await freePort();
    const relayEnv = {
      ...nats.env,
      DATABASE_URL: databaseUrl ?? '',
      PORT: String(port),
      LOG_LEVEL: 'error',
      EVENTS_RELAY_LEASE_MS: '1000',
    };
    let relay = spawnAppProcess('apps/agent-runtime/src/main.ts', [], relayEnv);
    const reader = await DurableReader.open(NATS_URL, nats.stream, 'reader', `${nats.prefix}.${tenant}.>`);
    try {
      await waitUntilReady(relay, port);
      const turns = runTurns(app, tenant, 20, 5);
      await reader.readUntil((all) => all.length > 0, 60000);
      relay.child.kill('SIGKILL');
      await relay.exited;
      const atKill = reader.received.length;
      await turns;
      const expected = await expectedEventIds((sql, params) => app.dataSource.query(sql, params), tenant);
      expect(atKill).toBeLessThan(expected.length);

      relay = spawnAppProcess('apps/agent-runtime/src/main.ts', [], relayEnv);
      await waitUntilReady(relay, port);
      const received = await reader.readUntil((all) => all.length >= expected.length, 90000);
      expect(idsOf(received)).toEqual([...expected].sort());
      expect(outOfOrder(received)).toEqual([]);
    } finally {
      await stopAppProcess(relay);
      await reader.close(true);
      await app.close();
    }
  }, 300000);
});

describeWithPostgres('two relaying processes', () => {
  /** What a relay process counts as delivered to `destination` (its /metrics). */
  async function deliveredBy(port: number, destination: string): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith(`agent_events_delivered_total{destination="${destination}"}`));
    return line ? Number(line.split(' ').pop()) : 0;
  }

  it('share the conversations: every event once and in order, and no claim is left held', async () => {
    const nats = natsEnv(NATS_URL);
    const destination = `nats:${nats.stream}`;
    // Turns are served by this process, which relays nothing; the two relays are OS processes of their own.
    const app = await startTestApp();
    const tenant = uniqueId('t');
    const ports = [await freePort(), await freePort()];
    const relays = ports.map((port) =>
      spawnAppProcess('apps/agent-runtime/src/main.ts', [], {
        ...nats.env,
        DATABASE_URL: databaseUrl ?? '',
        PORT: String(port),
        LOG_LEVEL: 'error',
      }),
    );
    const reader = await DurableReader.open(NATS_URL, nats.stream, 'reader', `${nats.prefix}.${tenant}.>`);
    try {
      await Promise.all(relays.map((relay, index) => waitUntilReady(relay, ports[index])));
      await runTurns(app, tenant, 20, 5);
      const expected = await expectedEventIds((sql, params) => app.dataSource.query(sql, params), tenant);
      const received = await reader.readUntil((all) => all.length >= expected.length, 90000);
      expect(idsOf(received)).toEqual([...expected].sort());
      expect(outOfOrder(received)).toEqual([]);
      const counts = await Promise.all(ports.map((port) => deliveredBy(port, destination)));
      expect(counts.every((count) => count > 0)).toBe(true);
      // Each pass gives up the claims of the conversations it delivered (the last acknowledgement does).
      await eventually('no claim held', async () => {
        const [row] = await app.dataSource.query<{ held: number }[]>(
          `SELECT count(*)::integer AS held FROM event_relay_backlog WHERE destination = $1 AND lease_owner IS NOT NULL`,
          [destination],
        );
        return row.held === 0 ? true : undefined;
      });
    } finally {
      await Promise.all(relays.map((relay) => stopAppProcess(relay)));
      await reader.close(true);
      await app.close();
    }
  }, 300000);
});
