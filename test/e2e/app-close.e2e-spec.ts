import { connect, Socket } from 'node:net';
import { FakeLlmServer } from '../support/fake-llm';
import { scriptStages } from '../support/scripted-stages';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';
import { waitUntil } from '../support/wait-for';

/**
 * Closing the app lets the requests under way answer, then closes every connection left, so close() ends once
 * the last answer has left. Node's own close drops only the connections idle at that instant: a client's spare
 * connection that has sent nothing yet (what a fetch client opens after an aborted stream) or one whose answer
 * ends during the close would stay open until the client hung up, up to the keep-alive it was told (72 s).
 */
describe('closing the app', () => {
  let fake: FakeLlmServer;
  let app: TestApp;
  /** The test's own close, which afterAll awaits instead of closing the app a second time. */
  let closed: Promise<void> | undefined;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    app = await startTestApp({ fakeLlm: fake, env: { RAG_INGEST_ON_START: 'false' } });
  });

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await (closed ?? app?.close());
    await fake?.stop();
  });

  /** A raw connection to the app, once the server accepted it; `received` is what came back, `closed` its end. */
  async function rawConnection() {
    const server = app.app.getHttpServer();
    const accepted = new Promise<void>((resolve) => server.once('connection', () => resolve()));
    const socket = connect(Number(new URL(app.baseUrl).port), '127.0.0.1');
    sockets.push(socket);
    const connection = { socket, received: '', closed: false };
    socket.on('data', (data: Buffer) => (connection.received += data.toString('utf8')));
    socket.on('close', () => (connection.closed = true));
    await accepted;
    return connection;
  }

  it('ends once the request under way answered, closing its connection and one that never sent a request', async () => {
    const spare = await rawConnection();
    const body = JSON.stringify({
      tenant_id: 'acme',
      agent_id: 'telecom_contas',
      session_id: uniqueId('close'),
      text: 'Minha fatura veio alta',
    });
    // Under way when the close starts: its body is still arriving.
    const server = app.app.getHttpServer();
    const received = new Promise<void>((resolve) => server.once('request', () => resolve()));
    const underWay = await rawConnection();
    underWay.socket.write(
      'POST /v1/channels/web/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
    );
    await received;
    closed = app.close();
    await waitUntil('the server to stop listening', () => !server.listening);
    underWay.socket.write(body.slice(10));
    await closed;
    await waitUntil('both connections to close', () => underWay.closed && spare.closed);
    // Answered (keep-alive, as any answer) before the server closed it; the spare one closed with nothing.
    expect(underWay.received).toMatch(/^HTTP\/1\.1 \d{3} /);
    expect(underWay.received).toMatch(/\r\nConnection: keep-alive\r\n/i);
    expect(spare.received).toBe('');
  });
});

/**
 * A turn under way when the app closes (a rolling update's SIGTERM) finishes with its models: the model clients
 * close only after the server answered it, not before.
 */
describe('closing the app during a turn', () => {
  let fake: FakeLlmServer;
  let app: TestApp;
  let closed: Promise<void> | undefined;
  const ANSWER = 'Sua fatura vence no dia 10.';

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    // First, so it answers the agent before the pipeline's echo does.
    fake.script({ model: 'agent', reply: { content: ANSWER, delayMs: 800 } });
    scriptStages(fake, {});
    app = await startTestApp({ fakeLlm: fake, env: { RAG_INGEST_ON_START: 'false' } });
  });

  afterAll(async () => {
    await (closed ?? app?.close());
    await fake?.stop();
  });

  it("answers the turn with its agent's reply, its model call finishing after the close began", async () => {
    const answered = app.post<{ answer: string }>('/v1/channels/web/messages', {
      tenant_id: 'acme',
      agent_id: 'telecom_contas',
      session_id: uniqueId('close-turn'),
      text: 'Minha fatura veio alta',
    });
    await waitUntil('the agent model call to start', () => fake.requestsFor('agent').length > 0);
    closed = app.close();
    const res = await answered;
    await closed;
    expect(res.status).toBe(200);
    expect(res.body.answer).toBe(ANSWER);
    expect(fake.cancelledFor('agent')).toEqual([]);
  });
});
