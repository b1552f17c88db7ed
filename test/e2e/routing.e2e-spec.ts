import { FakeChatRequest, FakeLlmServer, GUARDRAILS_ALLOW } from '../support/fake-llm';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

interface TurnBody {
  answer: string;
  route: string;
  intent: string;
  domain: string | null;
  active_agent: string;
  route_decision: { method: string; mcp_tools: string[]; metadata: Record<string, unknown> };
}

/** The user message the router LLM was asked about. */
function routedMessage(request: FakeChatRequest): string {
  const user = request.messages.filter((m) => m.role === 'user').pop();
  try {
    const payload = JSON.parse(user?.content ?? '') as { message?: unknown };
    return typeof payload.message === 'string' ? payload.message : '';
  } catch {
    return '';
  }
}

/** Benign answer for any other LLM-backed stage (guardrail, judge, ...) these tests do not script. */
const NEUTRAL_JSON = {
  verdict: 'allow',
  score: 1,
  passed: true,
  decision: 'ROUTE',
  confidence: 1,
  reason: 'ok',
  facts: [],
  intent: 'none',
};

describe('Enterprise Router over HTTP', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    app = await startTestApp({ fakeLlm: fake });
  });

  afterAll(async () => {
    await app.close();
    await fake.stop();
  });

  beforeEach(() => {
    fake.reset();
    fake.script({ model: 'agent', reply: { content: 'Certo, vou verificar isso para você.' } });
    fake.script(GUARDRAILS_ALLOW);
    fake.setFallback({ json: NEUTRAL_JSON });
  });

  const conversation = () => {
    const sessionId = uniqueId('route');
    return {
      sessionId,
      send: (text: string) =>
        app.post<TurnBody>('/v1/channels/web/messages', {
          tenant_id: 'acme',
          agent_id: 'retail_orders',
          session_id: sessionId,
          text,
        }),
    };
  };

  it('reaches the billing, product, orders and support agents with the right intents', async () => {
    fake.script({
      model: 'router',
      when: (request) => routedMessage(request) === 'Meu fone chegou com a tela rachada',
      reply: {
        json: { intent: 'retail_support_exchange_return', confidence: 0.92, reason: 'produto danificado' },
      },
    });
    const { sessionId, send } = conversation();
    const turns: [string, string, string, string, string][] = [
      ['Minha fatura veio alta', 'billing_agent', 'billing_invoice_explanation', 'telecom', 'keyword'],
      ['Qual é o meu plano?', 'product_agent', 'product_services_information', 'telecom', 'keyword'],
      ['Quero cancelar meu pedido 123', 'orders_agent', 'retail_order_cancel', 'retail', 'keyword'],
      ['Where is my order?', 'orders_agent', 'retail_order_tracking', 'retail', 'keyword'],
      [
        'El producto llegó con defecto, quiero la devolución',
        'support_agent',
        'retail_support_exchange_return',
        'retail',
        'keyword',
      ],
      [
        'Meu fone chegou com a tela rachada',
        'support_agent',
        'retail_support_exchange_return',
        'retail',
        'llm',
      ],
    ];
    for (const [text, route, intent, domain, method] of turns) {
      const res = await send(text);
      expect(res.status).toBe(200);
      expect({
        text,
        route: res.body.route,
        intent: res.body.intent,
        method: res.body.route_decision.method,
      }).toEqual({
        text,
        route,
        intent,
        method,
      });
      expect(res.body).toMatchObject({
        active_agent: route,
        domain,
        answer: 'Certo, vou verificar isso para você.',
      });
    }
    expect(fake.requestsFor('router')).toHaveLength(1);

    const rows: { payload: Record<string, unknown> }[] = await app.dataSource.query(
      `SELECT payload FROM session_events WHERE conversation_key = $1 AND name = 'router.decision' ORDER BY id`,
      [`acme:${sessionId}`],
    );
    expect(rows.map((r) => [r.payload.route, r.payload.intent, r.payload.method])).toEqual(
      turns.map(([, route, intent, , method]) => [route, intent, method]),
    );
    expect(rows[2].payload).toMatchObject({
      domain: 'retail',
      mcp_tools: ['consultar_pedido', 'cancelar_pedido'],
    });
  });

  it('still routes every turn (keyword or fallback) and answers 200 while the router LLM times out', async () => {
    fake.script({
      model: 'router',
      reply: { json: { intent: 'retail_order_tracking', confidence: 0.99 }, delayMs: 1500 },
    });
    const { send } = conversation();
    const turns: [string, string, string][] = [
      ['Minha fatura veio alta', 'billing_agent', 'keyword'],
      ['bom dia, tudo certo?', 'billing_agent', 'fallback'],
      ['Where is my order?', 'orders_agent', 'keyword'],
      ['e agora, o que faço?', 'billing_agent', 'fallback'],
    ];
    for (const [text, route, method] of turns) {
      const res = await send(text);
      expect(res.status).toBe(200);
      expect(res.body.answer).toBe('Certo, vou verificar isso para você.');
      expect({ text, route: res.body.route, method: res.body.route_decision.method }).toEqual({
        text,
        route,
        method,
      });
      if (method === 'fallback') {
        expect(res.body.intent).toBe('fallback');
        expect(res.body.route_decision.metadata).toMatchObject({ llm_rejection: 'timeout' });
      }
    }
    expect(fake.requestsFor('router')).toHaveLength(2);
  });
});
