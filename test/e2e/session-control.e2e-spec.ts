import { CheckpointService, ConversationIdentity } from '@agent/checkpoint';
import { conversationKeyOf } from '@agent/contracts';
import { SessionControlService } from '@agent/session-control';
import { FakeChatRequest, FakeLlmServer, GUARDRAILS_ALLOW, lastUserMessage } from '../support/fake-llm';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

/** Booting the app with a fresh embedded PGlite can take minutes on a busy machine. */
const APP_START_TIMEOUT_MS = 240_000;
const TENANT = 'acme';
const AGENT_ID = 'telecom_contas';
const HANDOFF_MESSAGE = 'I will transfer your request to a person.';
const PENDING_MESSAGE = 'A person will answer you shortly.';

interface TurnBody {
  turn: number;
  answer: string;
  route: string | null;
  route_bypassed: boolean;
  continuity_signal: Record<string, unknown> | null;
  session_control: string | null;
  session_ended: boolean;
  human_handoff_requested: boolean;
  next_state: string | null;
  blocked: boolean;
}

function currentMessage(request: FakeChatRequest): string {
  try {
    const payload = JSON.parse(lastUserMessage(request)) as { current_message?: unknown };
    return typeof payload.current_message === 'string' ? payload.current_message : '';
  } catch {
    return '';
  }
}

describe('HUMAN_HANDOFF_MODE=hold over HTTP', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        ENABLE_ROUTE_STICKINESS: 'true',
        HUMAN_HANDOFF_MODE: 'hold',
        HUMAN_HANDOFF_MESSAGE: HANDOFF_MESSAGE,
        HUMAN_HANDOFF_PENDING_MESSAGE: PENDING_MESSAGE,
      },
    });
  }, APP_START_TIMEOUT_MS);

  afterAll(async () => {
    await app?.close();
    await fake.stop();
  });

  beforeEach(() => {
    fake.reset();
    fake.script({
      model: 'route_continuity',
      reply: (request) =>
        currentMessage(request) === 'I want to talk to a person'
          ? { json: { decision: 'HUMAN_HANDOFF', confidence: 0.99, reason: 'asks for a person' } }
          : { json: { decision: 'ROUTE', confidence: 0.99, reason: 'new subject' } },
    });
    fake.script({ model: 'router', reply: { json: { intent: 'unknown', confidence: 0 } } });
    fake.script({ model: 'agent', reply: { content: 'How can I help with your plan?' } });
    fake.script(GUARDRAILS_ALLOW);
    fake.script({ model: 'judge', reply: { json: { score: 1, passed: true, reason: 'ok' } } });
  });

  function session(sessionId = uniqueId('hold')) {
    const conversationKey = conversationKeyOf(TENANT, sessionId);
    return {
      sessionId,
      conversationKey,
      async send(text: string) {
        const before = fake.requests.length;
        const res = await app.post<TurnBody>('/v1/channels/web/messages', {
          tenant_id: TENANT,
          agent_id: AGENT_ID,
          session_id: sessionId,
          text,
        });
        expect(res.status).toBe(200);
        const rows: { name: string }[] = await app.dataSource.query(
          'SELECT name FROM session_events WHERE conversation_key = $1 AND turn = $2 ORDER BY id',
          [conversationKey, res.body.turn],
        );
        return { body: res.body, requests: fake.requests.slice(before), names: rows.map((r) => r.name) };
      },
    };
  }

  it('holds every later turn with the pending message until an operator resumes', async () => {
    const chat = session();
    const handoff = await chat.send('I want to talk to a person');
    expect(handoff.body).toMatchObject({
      answer: HANDOFF_MESSAGE,
      route: 'human_handoff',
      session_control: 'HUMAN_HANDOFF',
      human_handoff_requested: true,
      session_ended: false,
      next_state: 'HUMAN_HANDOFF_REQUESTED',
    });
    expect(handoff.names).toContain('session.human_handoff.requested');

    for (const text of ['hello?', 'is anyone there? I want to check my plan']) {
      const held = await chat.send(text);
      expect(held.body).toMatchObject({
        answer: PENDING_MESSAGE,
        blocked: true,
        route: 'human_handoff',
        route_bypassed: false,
        continuity_signal: null,
        session_control: 'HUMAN_HANDOFF',
        human_handoff_requested: true,
        session_ended: false,
        next_state: 'HUMAN_HANDOFF_REQUESTED',
      });
      // No classifier, router, agent or tool: the bot stays silent for the person.
      expect(held.requests).toHaveLength(0);
      expect(held.names).toContain('session.message.held_for_human');
      expect(held.names).not.toContain('router.continuity');
      expect(held.names).not.toContain('router.decision');
    }
    const rows: { status: string }[] = await app.dataSource.query(
      'SELECT status FROM sessions WHERE conversation_key = $1',
      [chat.conversationKey],
    );
    expect(rows[0].status).toBe('handoff');

    // The operator hands the conversation back (what the admin resume endpoint commits).
    const checkpoints = app.app.get(CheckpointService);
    const identity: ConversationIdentity = {
      conversation_key: chat.conversationKey,
      tenant_id: TENANT,
      session_id: chat.sessionId,
      agent_id: AGENT_ID,
      channel: 'web',
    };
    const lease = await checkpoints.acquire(identity);
    try {
      const loaded = await checkpoints.loadLatest(chat.conversationKey);
      await checkpoints.commit({
        identity,
        leaseToken: lease.token,
        parentVersion: loaded?.version ?? null,
        turn: lease.session.turn_count,
        state: { ...(loaded?.state ?? {}), ...app.app.get(SessionControlService).resume() },
        status: 'active',
        events: [],
      });
    } finally {
      await lease.release();
    }

    const resumed = await chat.send('what is my plan?');
    expect(resumed.body).toMatchObject({
      blocked: false,
      answer: 'How can I help with your plan?',
      session_control: null,
      human_handoff_requested: false,
    });
    expect(resumed.requests.map((r) => r.model)).toEqual(
      expect.arrayContaining(['route_continuity', 'agent']),
    );
    expect(resumed.names).not.toContain('session.message.held_for_human');
  });
});
