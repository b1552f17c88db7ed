import { InMemorySpanExporter, ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { FakeLlmServer, GUARDRAILS_ALLOW } from '../support/fake-llm';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

/**
 * Setting OTEL_EXPORTER_OTLP_ENDPOINT turns tracing on in the app. This suite registers an in-memory provider as
 * the global one first, so the app's spans land here: OpenTelemetry keeps the first global registration, and
 * the app's OTLP exporter (whose transport jest's sandbox cannot load) never receives a span.
 */
describe('tracing (OTEL_EXPORTER_OTLP_ENDPOINT set)', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    provider.register();
    fake = await FakeLlmServer.start();
    app = await startTestApp({
      fakeLlm: fake,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' },
    });
  });

  afterAll(async () => {
    await app.close();
    await fake.stop();
    await provider.shutdown();
  });

  it('traces a turn: the turn span, node spans beneath it, LLM spans beneath a node, with request id and conversation key', async () => {
    fake.script({ model: 'agent', reply: { content: 'Sua fatura é R$ 99,90.' } });
    fake.script(GUARDRAILS_ALLOW);
    fake.setFallback({ json: { intent: 'unknown', confidence: 0, reason: 'no intent' } });
    const sessionId = uniqueId('trace');
    const key = `trace:${sessionId}`;
    const res = await app.post('/v1/channels/web/messages', {
      tenant_id: 'trace',
      agent_id: 'telecom_contas',
      session_id: sessionId,
      text: 'Minha fatura veio alta',
    });
    expect(res.status).toBe(200);
    const requestId = res.headers.get('x-request-id');

    const spans = exporter.getFinishedSpans();
    const root = spans.find((s) => s.name === 'agent.turn' && s.attributes['conversation.key'] === key);
    if (!root) throw new Error(`no agent.turn span; got ${spans.map((s) => s.name).join(', ')}`);
    expect(root.parentSpanContext).toBeUndefined();
    expect(root.attributes).toMatchObject({
      'request.id': requestId,
      'conversation.key': key,
      'tenant.id': 'trace',
      'agent.id': 'telecom_contas',
      channel: 'web',
      'turn.number': 1,
      'turn.route': 'billing_agent',
    });

    const traceId = root.spanContext().traceId;
    const trace = spans.filter((s) => s.spanContext().traceId === traceId);
    const byId = new Map(trace.map((s) => [s.spanContext().spanId, s]));
    const ancestors = (span: ReadableSpan): string[] => {
      const names: string[] = [];
      let parent = span.parentSpanContext ? byId.get(span.parentSpanContext.spanId) : undefined;
      while (parent) {
        names.push(parent.name);
        parent = parent.parentSpanContext ? byId.get(parent.parentSpanContext.spanId) : undefined;
      }
      return names;
    };

    const nodes = trace.filter((s) => s.name.startsWith('workflow.'));
    expect(nodes.map((s) => s.name)).toEqual(
      expect.arrayContaining([
        'workflow.input_guardrails',
        'workflow.routing_decision',
        'workflow.billing_agent',
        'workflow.persist',
      ]),
    );
    for (const node of nodes) {
      expect(node.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
      expect(node.attributes).toMatchObject({
        'request.id': requestId,
        'conversation.key': key,
        'turn.number': 1,
      });
    }
    const llm = trace.find((s) => s.name === 'llm.agent');
    if (!llm) throw new Error(`no llm.agent span; got ${trace.map((s) => s.name).join(', ')}`);
    const chain = ancestors(llm);
    expect(chain[chain.length - 1]).toBe('agent.turn');
    expect(chain).toContain('workflow.billing_agent');
    expect(llm.attributes).toMatchObject({ 'llm.profile': 'agent', 'conversation.key': key });
  });
});
