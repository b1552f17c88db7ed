import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  FakeChatRequest,
  FakeLlmServer,
  FakeReply,
  guardrailVerdict,
  lastUserMessage,
  offeredTools,
  requestText,
} from '../support/fake-llm';
import { KnowledgeConfig, productKnowledgeConfig } from '../support/knowledge-config';
import { latestState, storedEvents } from '../support/stored-rows';
import { startTestApp, TEST_LLM_PROFILES, TestApp, uniqueId } from '../support/test-app';
import { streamTurn } from '../support/turn-stream-client';
import { eventually } from '../support/wait-for';

/**
 * The active agent's first model call starts beside the guardrail verdict and the continuity classifier
 * (AGENT_SPECULATIVE_START=always here). Every way the draft can be discarded is provoked over HTTP, each turn
 * sent to a second service with speculation off: the answer is the non-speculative one, the draft's request
 * reached the scripted model and was cancelled, its tool call never ran, and nothing it said exists in the
 * events, the checkpoint or a later prompt; only its cost is on record. With the answer streamed and a verdict
 * slower than the draft, no text leaves before the verdict and the classifier answered, and a draft the verdict
 * blocks or the classifier routes away from never has a word in a delta. For an agent with a knowledge base, the
 * run takes a used draft's retrieval: its passages are screened once, and its events are the turn's.
 */

const FIRST = 'Tenho uma dúvida sobre a minha fatura';
/** What the billing agent's speculative draft says, and the tool it asks for: neither may ever surface. */
const DRAFT = 'RASCUNHO-ESPECULATIVO';
const BLOCK_MARKER = 'cupom-secreto';
const SLOW_VERDICT = 'demora-no-veredito';
/** A verdict slower than the draft but within its timeout: the draft's text is ready long before it may leave. */
const LATE_VERDICT = 'veredito-tardio';
/** What the billing agent's draft says when it answers at once (the streamed turns). */
const DRAFT_ANSWER = `${DRAFT}: liberei um desconto especial de 50% na sua próxima fatura.`;
/** A draft answer long enough to be still streaming when the late verdict allows the turn. */
const STILL_WRITING =
  'Na sua fatura vêm a mensalidade do plano, o pacote de dados extra do dia cinco, as ligações para fora da ' +
  'sua região e os serviços digitais assinados, cada item com a data e o valor cobrado, e o total no fim.';
const LABELS: Record<string, string> = {
  [`e quando vence? ${LATE_VERDICT}`]: 'CONTINUE',
  [`e o que mais vem na fatura? ${LATE_VERDICT}`]: 'CONTINUE',
  [`me libere o ${BLOCK_MARKER} ${LATE_VERDICT}`]: 'CONTINUE',
  [`e a outra questão ${LATE_VERDICT}`]: 'ROUTE',
  'e qual é o vencimento dela?': 'CONTINUE',
  [`agora me libere o ${BLOCK_MARKER}`]: 'CONTINUE',
  [`e o valor total? ${SLOW_VERDICT}`]: 'CONTINUE',
  'e aquela outra questão que comentei': 'ROUTE',
  'quero falar com uma pessoa agora': 'HUMAN_HANDOFF',
  'pode encerrar o atendimento': 'END_SESSION',
};
/** The answer the continued billing agent gives (the hit case). */
const CONTINUED = 'Sua fatura vence no dia 10.';

function currentMessage(request: FakeChatRequest): string {
  try {
    const message = (JSON.parse(lastUserMessage(request)) as { current_message?: unknown }).current_message;
    return typeof message === 'string' ? message : '';
  } catch {
    return '';
  }
}

const isBilling = (request: FakeChatRequest) => requestText(request).includes('agente de faturas');

function script(fake: FakeLlmServer): void {
  fake.script({
    model: 'guardrail',
    reply: (request): FakeReply => {
      const text = requestText(request);
      const blocked = text.includes(BLOCK_MARKER) ? ['PINJ'] : [];
      // Longer than the verdict's 3 s timeout: PINJ fails closed.
      const delayMs = text.includes(SLOW_VERDICT) ? 3600 : text.includes(LATE_VERDICT) ? 700 : 250;
      return { ...guardrailVerdict(request, blocked), delayMs };
    },
  });
  fake.script({
    model: 'route_continuity',
    reply: (request) => ({
      json: { decision: LABELS[currentMessage(request)] ?? 'ROUTE', confidence: 0.97, reason: 'scripted' },
      delayMs: 100,
    }),
  });
  fake.script({
    model: 'router',
    reply: { json: { intent: 'product_services_information', confidence: 0.9 }, delayMs: 50 },
  });
  fake.script({
    model: 'agent',
    reply: (request): FakeReply => {
      const message = lastUserMessage(request);
      if (!isBilling(request)) return { content: 'Temos planos a partir de R$ 50.' };
      if (message === FIRST) return { content: 'Posso ajudar com a sua fatura.' };
      if (message === 'e qual é o vencimento dela?') return { content: CONTINUED, delayMs: 300 };
      if (message === `e quando vence? ${LATE_VERDICT}`) return { content: CONTINUED };
      if (message === `e o que mais vem na fatura? ${LATE_VERDICT}`) return { content: STILL_WRITING };
      if (message.includes(LATE_VERDICT)) return { content: DRAFT_ANSWER };
      // Slow enough to be in flight when the turn is decided elsewhere.
      return {
        content: DRAFT,
        tool_calls: [{ name: 'consultar_fatura', arguments: { msisdn: '11999990000' } }],
        delayMs: 2000,
      };
    },
  });
  fake.setFallback({ json: { verdict: 'allow', confidence: 0.99, reason: 'ok', score: 1, passed: true } });
}

interface TurnBody {
  answer: string;
  route: string;
  intent: string;
  blocked: boolean;
  route_bypassed: boolean;
}

describe('speculative agent start (e2e)', () => {
  let speculative: { fake: FakeLlmServer; app: TestApp };
  let plain: { fake: FakeLlmServer; app: TestApp };

  const start = async (mode: string) => {
    const fake = await FakeLlmServer.start();
    script(fake);
    const app = await startTestApp({
      fakeLlm: fake,
      env: { ENABLE_ROUTE_STICKINESS: 'true', AGENT_SPECULATIVE_START: mode, RAG_INGEST_ON_START: 'false' },
    });
    return { fake, app };
  };

  beforeAll(async () => {
    // One after the other: an app reads its environment while it starts.
    speculative = await start('always');
    plain = await start('off');
  }, 240000);

  afterAll(async () => {
    for (const side of [speculative, plain]) {
      await side?.app.close();
      await side?.fake.stop();
    }
  });

  /** Sends the same turns to both services; returns the speculative service's session and both answers. */
  async function conversation(texts: string[]) {
    const sessionId = uniqueId('spec-agent');
    const bodies: { speculative: TurnBody; plain: TurnBody }[] = [];
    for (const text of texts) {
      // Both services share the database: each has its own conversation.
      const send = (app: TestApp, session: string) =>
        app.post<TurnBody>('/v1/channels/web/messages', {
          tenant_id: 'acme',
          agent_id: 'telecom_contas',
          session_id: session,
          text,
        });
      const [a, b] = await Promise.all([
        send(speculative.app, sessionId),
        send(plain.app, `${sessionId}-plain`),
      ]);
      expect(a.status).toBe(200);
      bodies.push({ speculative: a.body, plain: b.body });
    }
    return { key: `acme:${sessionId}`, bodies };
  }

  const answerOf = ({ answer, route, intent, blocked, route_bypassed }: TurnBody) => ({
    answer,
    route,
    intent,
    blocked,
    route_bypassed,
  });

  /** The discarded draft: cancelled at the scripted model, absent from everything but the cost on record. */
  async function expectDiscarded(key: string, text: string, turn: number) {
    await eventually('the draft request cancelled at the model', () =>
      speculative.fake.cancelledFor('agent').some((r) => lastUserMessage(r) === text && isBilling(r))
        ? true
        : undefined,
    );
    const events = await storedEvents(speculative.app.dataSource, key);
    const ofTurn = events.filter((e) => e.turn === turn);
    const agentCalls = ofTurn.filter((e) => e.name === 'llm.call' && e.payload.profile === 'agent');
    const drafts = agentCalls.filter((e) => e.payload.speculative_agent === 'discarded');
    expect(drafts).toHaveLength(1);
    // Its prompt is billed as input: the provider had it.
    expect(drafts[0].payload).toMatchObject({ outcome: 'cancelled', completion_tokens: 0 });
    expect(Number(drafts[0].payload.prompt_tokens)).toBeGreaterThan(100);
    expect(events.map((e) => e.name)).not.toContain('mcp.tool_call.completed');
    expect(JSON.stringify(events)).not.toContain(DRAFT);
    expect(JSON.stringify(await latestState(speculative.app.dataSource, key))).not.toContain(DRAFT);
  }

  it('uses the draft when the verdict allows and the classifier keeps the agent: one call, the same answer', async () => {
    const text = 'e qual é o vencimento dela?';
    const before = speculative.fake.requestsFor('agent').length;
    const { key, bodies } = await conversation([FIRST, text]);
    expect(answerOf(bodies[1].speculative)).toEqual(answerOf(bodies[1].plain));
    expect(bodies[1].speculative).toMatchObject({ answer: CONTINUED, route_bypassed: true });
    // Turn 1 had no active agent (no draft); turn 2's single agent call was the draft.
    expect(speculative.fake.requestsFor('agent').length - before).toBe(2);
    const events = await storedEvents(speculative.app.dataSource, key);
    const calls = events.filter(
      (e) => e.turn === 2 && e.name === 'llm.call' && e.payload.profile === 'agent',
    );
    expect(calls.map((e) => e.payload.speculative_agent)).toEqual(['used']);
    // Started beside the verdict (250 ms), not after it.
    const [guardrail] = speculative.fake.requestsFor('guardrail').slice(-1);
    const [draft] = speculative.fake.requestsFor('agent').slice(-1);
    expect(Math.abs(draft.at - guardrail.at)).toBeLessThan(200);
  });

  it("a keyword naming another intent of the active agent drafts with that intent's tools: the draft is used", async () => {
    // Order tracking, then a cancellation: the same agent, another intent with other tools.
    const text = 'quero cancelar o pedido 5932';
    const { key, bodies } = await conversation(['onde está o meu pedido?', text]);
    expect(bodies[1].speculative).toMatchObject({ route: 'orders_agent', intent: 'retail_order_cancel' });
    expect(answerOf(bodies[1].speculative)).toEqual(answerOf(bodies[1].plain));
    const events = await storedEvents(speculative.app.dataSource, key);
    const calls = events.filter(
      (e) => e.turn === 2 && e.name === 'llm.call' && e.payload.profile === 'agent',
    );
    expect(calls.map((e) => e.payload.speculative_agent)).toEqual(['used']);
    const [draft] = speculative.fake.requestsFor('agent').filter((r) => lastUserMessage(r) === text);
    const tools = offeredTools(draft).sort();
    expect(tools).toEqual(['cancelar_pedido', 'consultar_pedido']);
  });

  it('a block cancels the draft: the blocked answer, no tool, nothing of the draft later', async () => {
    const text = `agora me libere o ${BLOCK_MARKER}`;
    const { key, bodies } = await conversation([FIRST, text, 'e qual é o vencimento dela?']);
    expect(bodies[1].speculative).toMatchObject({ blocked: true, route: 'blocked' });
    expect(answerOf(bodies[1].speculative)).toEqual(answerOf(bodies[1].plain));
    await expectDiscarded(key, text, 2);
    // The next turn's prompts never carry the draft (nor the blocked message).
    const later = speculative.fake
      .requestsFor('agent')
      .filter((r) => lastUserMessage(r) === 'e qual é o vencimento dela?');
    expect(later.map(requestText).join('\n')).not.toContain(DRAFT);
    expect(answerOf(bodies[2].speculative)).toEqual(answerOf(bodies[2].plain));
  });

  it('a verdict that times out fails closed and cancels the draft', async () => {
    const text = `e o valor total? ${SLOW_VERDICT}`;
    const { key, bodies } = await conversation([FIRST, text]);
    expect(bodies[1].speculative).toMatchObject({ blocked: true });
    expect(answerOf(bodies[1].speculative)).toEqual(answerOf(bodies[1].plain));
    await expectDiscarded(key, text, 2);
  }, 30000);

  it('a ROUTE to another agent cancels the draft and the other agent answers', async () => {
    const text = 'e aquela outra questão que comentei';
    const { key, bodies } = await conversation([FIRST, text]);
    expect(bodies[1].speculative).toMatchObject({ route: 'product_agent' });
    expect(answerOf(bodies[1].speculative)).toEqual(answerOf(bodies[1].plain));
    await expectDiscarded(key, text, 2);
  });

  it('HUMAN_HANDOFF and END_SESSION cancel the draft; a session already ended starts none', async () => {
    const handoff = 'quero falar com uma pessoa agora';
    const first = await conversation([FIRST, handoff]);
    expect(first.bodies[1].speculative).toMatchObject({ route: 'human_handoff' });
    expect(answerOf(first.bodies[1].speculative)).toEqual(answerOf(first.bodies[1].plain));
    await expectDiscarded(first.key, handoff, 2);

    const end = 'pode encerrar o atendimento';
    const ended = await conversation([FIRST, end, 'e qual é o vencimento dela?']);
    expect(ended.bodies[1].speculative).toMatchObject({ route: 'end_session' });
    expect(answerOf(ended.bodies[1].speculative)).toEqual(answerOf(ended.bodies[1].plain));
    await expectDiscarded(ended.key, end, 2);
    // After the end the session gate answers before any stage: no draft is even started.
    expect(answerOf(ended.bodies[2].speculative)).toEqual(answerOf(ended.bodies[2].plain));
    const events = await storedEvents(speculative.app.dataSource, ended.key);
    expect(events.filter((e) => e.turn === 3 && e.name === 'llm.call')).toEqual([]);
  });
});

describe('speculative agent start with the answer streamed (e2e)', () => {
  let fake: FakeLlmServer;
  let app: TestApp;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
    script(fake);
    // About 2 s for the long draft: still writing when the late verdict answers.
    fake.streaming = { firstTokenMs: 0, tokenIntervalMs: 40, chunkChars: 4 };
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        ENABLE_ROUTE_STICKINESS: 'true',
        AGENT_SPECULATIVE_START: 'always',
        RAG_INGEST_ON_START: 'false',
      },
    });
  }, 120000);

  afterAll(async () => {
    await app?.close();
    await fake?.stop();
  });

  /** A first turn as JSON (the billing agent becomes active), then `text` streamed; the second turn's events. */
  async function streamedFollowUp(text: string) {
    const sessionId = uniqueId('spec-stream');
    const message = { tenant_id: 'acme', agent_id: 'telecom_contas', session_id: sessionId };
    expect((await app.post('/v1/channels/web/messages', { ...message, text: FIRST })).status).toBe(200);
    const streamed = await streamTurn(app.baseUrl, { ...message, text });
    const events = await storedEvents(app.dataSource, `acme:${sessionId}`);
    const drafts = events
      .filter((e) => e.turn === 2 && e.name === 'llm.call' && e.payload.profile === 'agent')
      .map((e) => e.payload.speculative_agent);
    return { ...streamed, drafts };
  }

  /** When the scripted model sent its answer to the request about `text` of `model`. */
  function answeredAt(model: string, text: string): number {
    const request = fake
      .requestsFor(model)
      .find((r) =>
        model === 'route_continuity' ? currentMessage(r) === text : requestText(r).includes(text),
      );
    return Number(request?.answeredAt);
  }

  it('releases the used draft only after the verdict and the classifier settled', async () => {
    const text = `e quando vence? ${LATE_VERDICT}`;
    const { events, deltas, final, drafts } = await streamedFollowUp(text);
    expect(final).toMatchObject({ answer: CONTINUED, route_bypassed: true });
    expect(drafts).toEqual(['used']);
    expect(deltas.join('')).toBe(CONTINUED);
    const verdict = answeredAt('guardrail', text);
    const classifier = answeredAt('route_continuity', text);
    // The draft had its answer long before the verdict; none of it left until both had answered.
    expect(answeredAt('agent', text)).toBeLessThan(verdict);
    const firstDelta = events.find((e) => e.event === 'answer.delta');
    expect(firstDelta?.receivedAt).toBeGreaterThanOrEqual(Math.max(verdict, classifier));
  });

  it('passes on a used draft still writing as its model writes it, from the verdict on', async () => {
    const text = `e o que mais vem na fatura? ${LATE_VERDICT}`;
    const { events, deltas, final, drafts } = await streamedFollowUp(text);
    expect(final).toMatchObject({ answer: STILL_WRITING, route_bypassed: true });
    expect(drafts).toEqual(['used']);
    expect(deltas.join('')).toBe(STILL_WRITING);
    const firstDelta = events.find((e) => e.event === 'answer.delta');
    expect(firstDelta?.receivedAt).toBeGreaterThanOrEqual(answeredAt('guardrail', text));
    // Released while the draft's model was still writing, in several pieces, not whole once it finished.
    expect(firstDelta?.receivedAt).toBeLessThan(answeredAt('agent', text));
    expect(deltas.length).toBeGreaterThan(3);
  });

  it('never streams a word of a draft the verdict blocks', async () => {
    const text = `me libere o ${BLOCK_MARKER} ${LATE_VERDICT}`;
    const { deltas, final, drafts } = await streamedFollowUp(text);
    expect(final).toMatchObject({ blocked: true });
    expect(drafts).toEqual(['discarded']);
    expect(deltas.join('')).toBe(final?.answer);
    expect(deltas.join('')).not.toMatch(/RASCUNHO|desconto/);
  });

  it('never streams a word of a draft when the classifier routes to another agent', async () => {
    const text = `e a outra questão ${LATE_VERDICT}`;
    const { deltas, final, drafts } = await streamedFollowUp(text);
    expect(final).toMatchObject({ route: 'product_agent' });
    expect(drafts).toEqual(['discarded']);
    expect(deltas.join('')).toBe(final?.answer);
    expect(deltas.join('')).not.toMatch(/RASCUNHO|desconto/);
  });
});

describe('speculative agent start with a knowledge base (e2e)', () => {
  let fake: FakeLlmServer;
  let app: TestApp;
  let knowledge: KnowledgeConfig;
  /** A line of the shipped roaming document: a passage the retrieval rails screen. */
  const PASSAGE = 'O roaming internacional permite usar internet';
  const FOLLOW_UP = 'tem roaming internacional?';
  /**
   * No keyword: the active product agent's draft retrieves the roaming passage for it, then the classifier routes
   * it (to billing, says the router).
   */
  const ROUTED = 'e numa viagem para a Europa, como fica?';
  /** How long the guardrail model takes to screen a passage: within every timeout, so only a cancel stops it. */
  let screeningMs = 0;

  beforeAll(async () => {
    knowledge = productKnowledgeConfig('productspec');
    const { configDir } = knowledge;
    // The guardrail model screens every passage, so each screening is a request the scripted model counts.
    const guardrailsPath = join(configDir, 'guardrails.yaml');
    const guardrails = readFileSync(guardrailsPath, 'utf8');
    const retrieval = guardrails.indexOf('\nretrieval:');
    writeFileSync(
      guardrailsPath,
      guardrails.slice(0, retrieval) +
        guardrails.slice(retrieval).replace('params: { llm: false }', 'params: { llm: true }'),
    );
    // A guardrail model slow enough to screen a passage for 2 s without its 1 s test timeout cutting it short.
    const profilesPath = join(configDir, 'test_llm_profiles.yaml');
    writeFileSync(
      profilesPath,
      readFileSync(TEST_LLM_PROFILES, 'utf8').replace(
        /(guardrail:\s*\{[^}]*timeout_seconds: )1 \}/,
        (_line, start: string) => `${start}5 }`,
      ),
    );
    fake = await FakeLlmServer.start();
    fake.script({
      model: 'guardrail',
      reply: (request): FakeReply => ({
        ...guardrailVerdict(request),
        delayMs: requestText(request).includes(PASSAGE) ? screeningMs : 0,
      }),
    });
    fake.script({
      model: 'route_continuity',
      reply: (request) => ({
        json: {
          decision: currentMessage(request) === FOLLOW_UP ? 'CONTINUE' : 'ROUTE',
          confidence: 0.97,
          reason: 'scripted',
        },
        // The draft's retrieval has sent its screening before the classifier's ROUTE discards the draft.
        delayMs: 300,
      }),
    });
    fake.script({
      model: 'router',
      reply: (request) => ({
        json: {
          intent: requestText(request).includes(ROUTED)
            ? 'billing_invoice_explanation'
            : 'product_services_information',
          confidence: 0.9,
        },
      }),
    });
    fake.script({ model: 'agent', reply: { content: 'Temos roaming nas Américas nos planos Pós.' } });
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        CONFIG_DIR: configDir,
        LLM_PROFILES_PATH: profilesPath,
        ENABLE_ROUTE_STICKINESS: 'true',
        AGENT_SPECULATIVE_START: 'always',
      },
    });
  }, 240000);

  afterAll(async () => {
    await knowledge?.remove(app?.dataSource);
    await app?.close();
    await fake?.stop();
  });

  /** Sends a turn of the session to the telecom deployment. */
  const sender = (sessionId: string) => (text: string) =>
    app.post<TurnBody>('/v1/channels/web/messages', {
      tenant_id: 'acme',
      agent_id: 'telecom_contas',
      session_id: sessionId,
      text,
    });

  it('a used draft retrieves once: the run takes its passages, screened once, with their events', async () => {
    const sessionId = uniqueId('spec-rag');
    const send = sender(sessionId);
    expect((await send('quais pacotes de dados vocês têm?')).body).toMatchObject({ route: 'product_agent' });
    const screenings = () =>
      fake.requestsFor('guardrail').filter((r) => requestText(r).includes(PASSAGE)).length;
    const before = screenings();

    const res = await send(FOLLOW_UP);
    expect(res.body).toMatchObject({ route: 'product_agent', route_bypassed: true });
    const events = (await storedEvents(app.dataSource, `acme:${sessionId}`)).filter((e) => e.turn === 2);
    const drafts = events.filter((e) => e.name === 'llm.call' && e.payload.profile === 'agent');
    expect(drafts.map((e) => e.payload.speculative_agent)).toEqual(['used']);
    // The passage reached the guardrail model once (the draft's retrieval), not again for the run.
    expect(screenings() - before).toBe(1);
    const [prompt] = fake.requestsFor('agent').filter((r) => lastUserMessage(r) === FOLLOW_UP);
    expect(requestText(prompt)).toContain(PASSAGE);
    // The draft's retrieval is the turn's: its RAG events and the rails' decisions on the passage.
    expect(events.filter((e) => e.name === 'IC.PRODUCT_RAG_CONTEXT_RETRIEVED')).toHaveLength(1);
    const roaming = events.filter(
      (e) => e.payload.stage === 'retrieval' && String(e.payload.source).startsWith('roaming.md'),
    );
    // One screening's decisions (PINJ's deterministic and model verdicts, the masking), adopted from the draft.
    expect(
      roaming
        .filter((e) => e.name === 'GRL.002')
        .map((e) => e.payload.code)
        .sort(),
    ).toEqual(['MSK', 'PINJ', 'PINJ']);
  });

  it('a discarded draft does not hold the turn for its retrieval: its screening is cancelled', async () => {
    const sessionId = uniqueId('spec-rag-routed');
    const send = sender(sessionId);
    expect((await send('quais pacotes de dados vocês têm?')).body).toMatchObject({ route: 'product_agent' });
    screeningMs = 2000;
    try {
      const res = await send(ROUTED);
      expect(res.body).toMatchObject({ route: 'billing_agent', route_bypassed: false });
      // The screening the product agent's draft asked for was cancelled when routing discarded the draft, not
      // left to answer while the turn waited for it.
      await eventually('the passage screening cancelled at the model', () =>
        fake.cancelledFor('guardrail').some((r) => requestText(r).includes(PASSAGE)) ? true : undefined,
      );
      const events = (await storedEvents(app.dataSource, `acme:${sessionId}`)).filter((e) => e.turn === 2);
      expect(events.filter((e) => e.name.startsWith('IC.PRODUCT_RAG'))).toEqual([]);
      const screening = events.filter(
        (e) =>
          e.name === 'llm.call' && e.payload.profile === 'guardrail' && e.payload.outcome === 'cancelled',
      );
      expect(screening.map((e) => e.payload.speculative_agent)).toEqual(['discarded']);
    } finally {
      screeningMs = 0;
    }
  });
});
