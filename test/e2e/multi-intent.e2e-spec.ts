import {
  FakeChatRequest,
  FakeLlmServer,
  GUARDRAILS_ALLOW,
  lastUserMessage,
  offeredTools,
} from '../support/fake-llm';
import { latestState, storedEvents } from '../support/stored-rows';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

/**
 * Several requests in one message in router mode, in Portuguese and English: the router's model names both, the
 * first is served and the second offered at the end of the answer; a "yes" on the next turn is no follow-up
 * for the agent that answered (stickiness sees the pending topic) and the router serves the pending topic.
 */
interface TurnBody {
  answer: string;
  route: string;
  intent: string;
  route_decision: { method: string; metadata: Record<string, unknown> };
}

const CONVERSATIONS = {
  pt: {
    both: 'Quero a segunda via da fatura e saber quanto de internet tem no meu plano',
    yes: 'sim, por favor',
  },
  en: {
    both: 'I need a copy of my bill and also want to know what my plan includes',
    yes: 'yes please',
  },
};

const payloadOf = (request: FakeChatRequest): Record<string, unknown> =>
  JSON.parse(lastUserMessage(request)) as Record<string, unknown>;

describe('several requests in one message (router mode)', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    app = await startTestApp({ fakeLlm: fake, env: { ENABLE_ROUTE_STICKINESS: 'true' } });
  }, 240000);

  afterAll(async () => {
    await app?.close();
    await fake?.stop();
  });

  beforeEach(() => {
    fake.reset();
    fake.script(GUARDRAILS_ALLOW);
    // The scripted classifier: an offered topic makes any reply a ROUTE; otherwise the active agent keeps it.
    fake.script({
      model: 'route_continuity',
      reply: (request) => {
        const payload = payloadOf(request);
        const decision = payload.pending_topics || !payload.active_agent ? 'ROUTE' : 'CONTINUE';
        return { json: { decision, confidence: 0.95, reason: 'scripted' } };
      },
    });
    // The scripted router: two requests in the first message; an accepted offer names the pending topic.
    fake.script({
      model: 'router',
      reply: (request) => {
        const payload = payloadOf(request);
        const pending = payload.pending_topics as { intent: string }[] | undefined;
        if (pending) {
          return { json: { intent: pending[0].intent, confidence: 0.9, reason: 'accepts the offer' } };
        }
        return {
          json: {
            intent: 'billing_invoice_explanation',
            confidence: 0.94,
            reason: 'two requests',
            more_intents: [{ intent: 'product_services_information', confidence: 0.9 }],
          },
        };
      },
    });
    fake.script({
      model: 'agent',
      reply: (request) => ({
        content: offeredTools(request).includes('consultar_fatura')
          ? 'A segunda via da sua fatura foi enviada.'
          : 'Seu plano tem 30GB de internet.',
      }),
    });
    fake.script({ model: 'judge', reply: { json: { score: 1, passed: true, reason: 'ok' } } });
    fake.setFallback({ json: { facts: [] } });
  });

  it.each(Object.entries(CONVERSATIONS))(
    'serves the first request, offers the second and serves it on a yes (%s)',
    async (language, say) => {
      const sessionId = uniqueId(`multi-${language}`);
      const key = `acme:${sessionId}`;
      const send = (text: string) =>
        app.post<TurnBody>('/v1/channels/web/messages', {
          tenant_id: 'acme',
          agent_id: 'telecom_contas',
          session_id: sessionId,
          text,
        });

      const first = await send(say.both);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ route: 'billing_agent', intent: 'billing_invoice_explanation' });
      expect(first.body.route_decision.metadata.more_intents).toEqual(['product_services_information']);
      expect(first.body.answer).toBe(
        'A segunda via da sua fatura foi enviada.\n\nAinda está pendente: planos e serviços. Quer que eu siga com isso agora?',
      );
      expect((await latestState(app.dataSource, key)).pending_topics).toEqual([
        expect.objectContaining({
          intent: 'product_services_information',
          agent: 'product_agent',
          status: 'offered',
          source_text: say.both,
        }),
      ]);

      const second = await send(say.yes);
      expect(second.body).toMatchObject({ route: 'product_agent', intent: 'product_services_information' });
      expect(second.body.route_decision.method).toBe('llm');
      expect(second.body.answer).toBe('Seu plano tem 30GB de internet.');
      const classified = fake.requestsFor('route_continuity').map(payloadOf);
      expect(classified[1]).toMatchObject({
        active_agent: 'billing_agent',
        current_message: say.yes,
        pending_topics: [{ topic: 'planos e serviços', agent: 'product_agent' }],
      });
      const state = await latestState(app.dataSource, key);
      expect(state.pending_topics).toEqual([]);
      expect(state.handled_topics).toEqual([
        expect.objectContaining({ intent: 'billing_invoice_explanation', first_turn: 1, last_turn: 1 }),
        expect.objectContaining({ intent: 'product_services_information', first_turn: 2, last_turn: 2 }),
      ]);
      // Nothing pending any more: the next message is an ordinary follow-up that stays with the agent.
      const third = await send('ok');
      expect(third.body.route_decision.method).toBe('continuity');
      expect(
        (await storedEvents(app.dataSource, key)).filter((e) => e.name === 'router.decision'),
      ).toHaveLength(2);
    },
  );
});
