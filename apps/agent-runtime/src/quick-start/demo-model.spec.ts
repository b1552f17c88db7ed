import { join } from 'node:path';
import { confirmationOutput } from '@agent/agents';
import { loadYamlFile, routingFileSchema } from '@agent/config';
import { classifierInput, CONTINUITY_SYSTEM_PROMPT, continuityOutput } from '@agent/continuity';
import { judgeVerdict } from '@agent/judges';
import type { StructuredOutput } from '@agent/llm';
import { routerOutput } from '@agent/routing';
import { turnStateOf } from '@agent/testing/states';
import { DemoModel, DemoReply, demoRequestSchema, languageOf } from './demo-model';

const routing = loadYamlFile(
  join(__dirname, '..', '..', '..', '..', 'config', 'routing.yaml'),
  routingFileSchema,
);
const model = new DemoModel(routing.intents, 'pt');

type Message = {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: unknown;
};

function ask<T>(output: StructuredOutput<T>, messages: Message[]): T {
  const request = demoRequestSchema.parse({
    model: 'demo',
    messages,
    response_format: { type: 'json_schema', json_schema: output.jsonSchema },
  });
  const reply = model.reply(request);
  if (!('content' in reply)) throw new Error('a structured stage got tool calls');
  // The stage's own validation, as the runtime applies it.
  return output.schema.parse(JSON.parse(reply.content));
}

/** The classifier's verdict on `text` with the runtime's own payload, `active` keeping the conversation. */
function continuity(text: string, active?: string, previousIntent?: string) {
  const state = turnStateOf({ active_agent: active, intent: previousIntent });
  const { payload } = classifierInput(state, routing.intents, text, 3);
  return ask(continuityOutput, [
    { role: 'system', content: CONTINUITY_SYSTEM_PROMPT },
    { role: 'user', content: payload },
  ]);
}

function agent(messages: Message[], tools: string[] = []): DemoReply {
  return model.reply(
    demoRequestSchema.parse({
      model: 'demo',
      messages: [{ role: 'system', content: 'Você é o agente.' }, ...messages],
      ...(tools.length > 0
        ? { tools: tools.map((name) => ({ type: 'function', function: { name, description: name } })) }
        : {}),
    }),
  );
}

describe('the demo model', () => {
  it('classifies the stickiness examples as the specification labels them, in Portuguese and English', () => {
    const product = 'product_services_information';
    expect(continuity('Qual é o meu plano?')).toMatchObject({
      decision: 'ROUTE',
      target: 'planos e serviços',
    });
    expect(continuity('o que está incluso?', 'product_agent', product).decision).toBe('CONTINUE');
    expect(continuity('agora quero contestar uma cobrança', 'product_agent', product)).toMatchObject({
      decision: 'ROUTE',
      target: 'fatura e pagamentos',
    });
    expect(continuity('quero falar com uma pessoa', 'billing_agent').decision).toBe('HUMAN_HANDOFF');
    expect(continuity('obrigado, pode encerrar', 'billing_agent').decision).toBe('END_SESSION');
    expect(continuity('what does it include?', 'product_agent', product).decision).toBe('CONTINUE');
    expect(continuity('I want to talk to a person', 'product_agent').decision).toBe('HUMAN_HANDOFF');
    expect(continuity('thanks, you can close this', 'product_agent').decision).toBe('END_SESSION');
    expect(continuity('Quiero hablar con un asesor', 'product_agent').decision).toBe('HUMAN_HANDOFF');
    // Accepted by the runtime: at or above the default threshold, and said to be the demo model's.
    const verdict = continuity('o que está incluso?', 'product_agent', product);
    expect(verdict.confidence).toBeGreaterThanOrEqual(0.9);
    expect(verdict.reason).toMatch(/^\[demo model\]/);
  });

  it("answers the router, the judges, the confirmation and the guardrail model in each stage's own contract", () => {
    const router = (message: string) =>
      ask(routerOutput, [
        { role: 'system', content: 'router' },
        { role: 'user', content: JSON.stringify({ message, allowed_intents: routing.intents }) },
      ]);
    expect(router('Minha fatura veio alta')).toMatchObject({ intent: 'billing_invoice_explanation' });
    expect(router('Bom dia').intent).toBe('none');
    expect(ask(judgeVerdict, [{ role: 'user', content: 'judge this' }])).toMatchObject({ passed: true });
    const confirm = confirmationOutput(['order_id']);
    expect(ask(confirm, [{ role: 'user', content: 'Sim, pode cancelar' }]).decision).toBe('CONFIRM');
    expect(ask(confirm, [{ role: 'user', content: 'Não, esquece' }]).decision).toBe('REJECT');
    const verdicts = model.reply(
      demoRequestSchema.parse({
        model: 'demo',
        messages: [{ role: 'user', content: 'texto' }],
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'guardrail_verdict_pinj_tox',
            schema: { type: 'object', properties: { PINJ: {}, TOX: {} } },
          },
        },
      }),
    );
    expect('content' in verdicts && JSON.parse(verdicts.content)).toEqual({
      PINJ: { verdict: 'allow', confidence: 0.99, reason: null },
      TOX: { verdict: 'allow', confidence: 0.99, reason: null },
    });
  });

  it('as an agent, calls the offered tool the message names, then answers with its result, saying it is the demo', () => {
    const question = { role: 'user' as const, content: 'Quais serviços eu tenho?' };
    expect(agent([question], ['consultar_plano', 'listar_servicos'])).toEqual({
      toolCalls: [{ name: 'listar_servicos', arguments: '{}' }],
    });
    const called = {
      role: 'assistant' as const,
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'consultar_plano', arguments: '{}' } }],
    };
    const result = {
      role: 'tool' as const,
      content: JSON.stringify({
        ok: true,
        result: { plan: { name: 'Controle 30GB', monthly_fee: 79.9, benefits: ['Deezer Premium'] } },
      }),
    };
    expect(agent([question, called, result], ['consultar_plano'])).toEqual({
      content:
        '[modelo de demonstração] consultei consultar_plano: name: Controle 30GB · monthly_fee: 79.9 · benefits: Deezer Premium.',
    });
    const failed = { role: 'tool' as const, content: JSON.stringify({ ok: false, error: 'MCP down' }) };
    expect(agent([{ role: 'user', content: 'What is my plan?' }, called, failed])).toEqual({
      content: '[demo model] I could not look up consultar_plano (MCP down).',
    });
    expect(agent([{ role: 'user', content: 'Bom dia' }])).toMatchObject({
      content: expect.stringMatching(/^\[modelo de demonstração\] Recebi "Bom dia"/),
    });
  });

  it('answers in the language of the message, else the default one', () => {
    expect(languageOf('What is my plan?', 'pt')).toBe('en');
    expect(languageOf('¿Cuál es mi plan?', 'pt')).toBe('es');
    expect(languageOf('Qual é o meu plano?', 'en')).toBe('pt');
    expect(languageOf('ok', 'es')).toBe('es');
  });
});
