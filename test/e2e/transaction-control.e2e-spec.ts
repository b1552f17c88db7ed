import {
  FakeChatRequest,
  FakeLlmServer,
  FakeReply,
  GUARDRAILS_ALLOW,
  hasToolMessage,
  lastUserMessage,
} from '../support/fake-llm';
import { ReferenceMcpProcess } from '../support/reference-mcp';
import { latestState, storedEvents } from '../support/stored-rows';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';

/**
 * The customer in control of a transaction, in Portuguese, English and Spanish: giving the operation up while
 * its parameters are collected or at its confirmation, replacing it with another operation, and correcting
 * one value without losing it; then asking for a person or ending the session in the middle of it, and the
 * message after it ended. The scripted models play what a real one reads from each reply; the runtime's only
 * job is to act on that reading on the same turn.
 */

interface Phrases {
  cancel: string;
  cancelOrder: (id: string) => string;
  abandon: string;
  refuse: string;
  exchange: (id: string) => string;
  replace: string;
  reason: string;
  correction: (id: string) => string;
}

const LANGUAGES: Record<'pt' | 'en' | 'es', Phrases> = {
  pt: {
    cancel: 'Quero cancelar meu pedido',
    cancelOrder: (id) => `Quero cancelar o pedido ${id}`,
    abandon: 'Esquece, não quero mais',
    refuse: 'Deixa pra lá, não precisa cancelar',
    exchange: (id) => `Quero trocar o pedido ${id}`,
    replace: 'Na verdade prefiro devolver, não serviu',
    reason: 'não serviu',
    correction: (id) => `Não, o pedido é o ${id}`,
  },
  en: {
    cancel: 'I want to cancel my order',
    cancelOrder: (id) => `Please cancel order ${id}`,
    abandon: 'Forget it, never mind',
    refuse: "Actually leave it, don't cancel anything",
    exchange: (id) => `I want to exchange order ${id}`,
    replace: "Actually I'd rather return it, it didn't fit",
    reason: "it didn't fit",
    correction: (id) => `No, the order is ${id}`,
  },
  es: {
    cancel: 'Quiero cancelar mi pedido',
    cancelOrder: (id) => `Quiero cancelar mi pedido ${id}`,
    abandon: 'Déjalo, ya no lo quiero',
    refuse: 'Olvídalo, mejor no lo canceles',
    exchange: (id) => `Quiero un cambio por garantía del pedido ${id}`,
    replace: 'Mejor una devolución, no me quedó bien',
    reason: 'no me quedó bien',
    correction: (id) => `No, el pedido es el ${id}`,
  },
};

/** The router model keeps a waiting transaction's intent (the reply only answers it), else reads the topic. */
function routerReply(request: FakeChatRequest): FakeReply {
  const payload = JSON.parse(lastUserMessage(request)) as {
    message: string;
    transaction_context?: { intent?: string | null };
  };
  const intent =
    payload.transaction_context?.intent ??
    (/troc|exchange|cambio/i.test(payload.message)
      ? 'retail_support_exchange_return'
      : 'retail_order_cancel');
  return { json: { intent, confidence: 0.95, reason: 'scripted' } };
}

describe('transaction control in the customer’s words', () => {
  let fake: FakeLlmServer;
  let mcp: ReferenceMcpProcess;
  let app: TestApp;
  const tenant = 'acme';

  beforeAll(async () => {
    [fake, mcp] = await Promise.all([FakeLlmServer.start(), ReferenceMcpProcess.start()]);
    app = await startTestApp({
      fakeLlm: fake,
      env: { ...mcp.appEnv, RAG_INGEST_ON_START: 'false', ENABLE_ROUTE_STICKINESS: 'true' },
    });
  }, 240000);

  afterAll(async () => {
    await app?.close();
    await mcp?.dispose();
    await fake?.stop();
  }, 60000);

  /** The stickiness classifier's verdicts by message; any other message is a ROUTE, so the router decides. */
  let verdicts: Record<string, { decision: string; confidence: number }> = {};
  const classifierPayload = (request: FakeChatRequest) =>
    JSON.parse(lastUserMessage(request)) as { current_message: string } & Record<string, unknown>;

  beforeEach(() => {
    fake.reset();
    verdicts = {};
    fake.script({
      model: 'route_continuity',
      reply: (request) => ({
        json: {
          ...(verdicts[classifierPayload(request).current_message] ?? {
            decision: 'ROUTE',
            confidence: 0.99,
          }),
          reason: 'scripted',
        },
      }),
    });
    fake.script(GUARDRAILS_ALLOW);
    fake.script({ model: 'router', reply: routerReply });
    fake.script({ model: 'memory_extraction', reply: { json: { facts: [] } } });
  });

  /** The agent's model starts `tool` on the first message of the conversation. */
  const agentStarts = (tool: string, message: string) =>
    fake.script({
      model: 'agent',
      when: (r) => !hasToolMessage(r) && lastUserMessage(r) === message,
      reply: { content: null, tool_calls: [{ name: tool, arguments: {} }] },
    });
  /** How the extraction model (the `default` test profile) reads `message`. */
  const extractionReads = (message: string, json: Record<string, unknown>) =>
    fake.script({ model: 'default', when: (r) => lastUserMessage(r) === message, reply: { json } });
  const confirmationReads = (message: string, json: Record<string, unknown>) =>
    fake.script({ model: 'confirmation', when: (r) => lastUserMessage(r) === message, reply: { json } });

  const send = (sessionId: string, text: string) =>
    app.post<Record<string, unknown>>('/v1/channels/web/messages', {
      tenant_id: tenant,
      agent_id: 'retail_orders',
      session_id: sessionId,
      text,
    });
  const stateOf = (sessionId: string) => latestState(app.dataSource, `${tenant}:${sessionId}`);
  const events = (sessionId: string) => storedEvents(app.dataSource, `${tenant}:${sessionId}`);

  describe.each(Object.entries(LANGUAGES))('in %s', (language, say) => {
    it('ends the operation on the first turn when the customer gives it up while it collects parameters', async () => {
      agentStarts('cancelar_pedido', say.cancel);
      extractionReads(say.abandon, {
        action: 'ABANDON',
        confidence: 0.93,
        operation: null,
        values: { order_id: null },
      });
      const sessionId = uniqueId(`abandon-collect-${language}`);
      const first = await send(sessionId, say.cancel);
      expect(first.body.next_state).toBe('COLLECTING_ORDER_PARAMETERS');

      const second = await send(sessionId, say.abandon);
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({ route: 'orders_agent', next_state: null });
      expect(second.body.answer).toBe(
        'Tudo bem, o cancelamento do pedido não foi realizado. Posso ajudar em algo mais?',
      );
      const state = await stateOf(sessionId);
      expect(state).toMatchObject({
        agent_profile: { agent_id: 'retail_orders', name: 'Agente Retail Pedidos', domain: 'retail' },
        active_transaction: null,
        pending_tool_call: null,
        transaction_status: 'CANCELLED',
        last_transaction: {
          tool_name: 'cancelar_pedido',
          status: 'CANCELLED',
          interruption: 'explicit_abandonment',
          finished_turn: 2,
        },
      });
      expect(state.operation_results).toEqual({
        [String(state.last_transaction?.transaction_id)]: expect.objectContaining({
          tool_name: 'cancelar_pedido',
          status: 'CANCELLED',
          finished_turn: 2,
        }),
      });
      const cancelled = (await events(sessionId)).filter((e) => e.name === 'IC.TRANSACTION_CANCELLED');
      expect(cancelled).toEqual([
        expect.objectContaining({
          turn: 2,
          payload: expect.objectContaining({ source: 'customer', stage: 'collecting_parameters' }),
        }),
      ]);
      // The next message is no parameter answer: no transaction waits any more.
      fake.script({ model: 'agent', reply: { content: 'Claro.' } });
      const third = await send(sessionId, '123456');
      expect(third.body).toMatchObject({ answer: 'Claro.', next_state: null });
      expect((third.body.route_decision as { method: string }).method).not.toBe('state_policy');
    });

    it('ends the operation when the customer gives it up at the confirmation, and nothing runs', async () => {
      agentStarts('cancelar_pedido', say.cancelOrder('100238'));
      confirmationReads(say.refuse, { decision: 'REJECT', confidence: 0.94 });
      const sessionId = uniqueId(`abandon-confirm-${language}`);
      const first = await send(sessionId, say.cancelOrder('100238'));
      expect(first.body.next_state).toBe('WAITING_ORDER_CONFIRMATION');

      const second = await send(sessionId, say.refuse);
      expect(second.body).toMatchObject({ route: 'orders_agent', next_state: null });
      expect(second.body.answer).toBe(
        'Tudo bem, o cancelamento do pedido não foi realizado. Posso ajudar em algo mais?',
      );
      expect(await stateOf(sessionId)).toMatchObject({
        active_transaction: null,
        pending_tool_call: null,
        transaction_status: 'CANCELLED',
      });
      const cancelled = (await events(sessionId)).filter((e) => e.name === 'IC.TRANSACTION_CANCELLED');
      expect(cancelled.map((e) => e.turn)).toEqual([2]);
      expect(await mcp.orderStatus('100238')).toBe('processing');
    });

    it('replaces the operation while collecting, carrying over what the new one shares', async () => {
      agentStarts('solicitar_troca', say.exchange('100233'));
      extractionReads(say.replace, {
        action: 'REPLACE',
        confidence: 0.9,
        operation: 'solicitar_devolucao',
        values: { reason: say.reason },
      });
      const sessionId = uniqueId(`replace-${language}`);
      const first = await send(sessionId, say.exchange('100233'));
      expect(first.body).toMatchObject({
        route: 'support_agent',
        next_state: 'COLLECTING_SUPPORT_PARAMETERS',
      });
      const exchange = (await stateOf(sessionId)).active_transaction as Record<string, unknown>;
      expect(exchange).toMatchObject({ tool_name: 'solicitar_troca', arguments: { order_id: '100233' } });

      const second = await send(sessionId, say.replace);
      expect(second.body).toMatchObject({
        route: 'support_agent',
        next_state: 'WAITING_SUPPORT_CONFIRMATION',
      });
      expect(second.body.answer).toBe(
        `Confirma a devolução do pedido (pedido 100233, motivo ${say.reason})? Responda sim ou não.`,
      );
      const state = await stateOf(sessionId);
      expect(state).toMatchObject({
        active_transaction: {
          tool_name: 'solicitar_devolucao',
          status: 'AWAITING_CONFIRMATION',
          arguments: { order_id: '100233', reason: say.reason },
          replaces: exchange.transaction_id,
          carried_over: ['order_id'],
          intent: 'retail_support_exchange_return',
        },
        pending_tool_call: { tool_name: 'solicitar_devolucao' },
        last_transaction: {
          transaction_id: exchange.transaction_id,
          tool_name: 'solicitar_troca',
          status: 'CANCELLED',
          interruption: 'replaced',
        },
      });
      expect(state.operation_results).toEqual({
        [String(exchange.transaction_id)]: expect.objectContaining({
          tool_name: 'solicitar_troca',
          status: 'CANCELLED',
        }),
      });
      const names = (await events(sessionId)).filter((e) => e.turn === 2).map((e) => e.name);
      expect(names).toEqual(
        expect.arrayContaining(['IC.TRANSACTION_INTERRUPTED', 'IC.TRANSACTION_REPLACED']),
      );
    });

    it('corrects one value at the confirmation and keeps the same transaction', async () => {
      agentStarts('cancelar_pedido', say.cancelOrder('100236'));
      confirmationReads(say.correction('100239'), {
        decision: 'CORRECT',
        confidence: 0.92,
        operation: null,
        values: { order_id: '100239', reason: null },
      });
      const sessionId = uniqueId(`correct-${language}`);
      await send(sessionId, say.cancelOrder('100236'));
      const before = await stateOf(sessionId);
      expect(before.pending_tool_call).toMatchObject({ arguments: { order_id: '100236' } });

      const second = await send(sessionId, say.correction('100239'));
      expect(second.body).toMatchObject({ route: 'orders_agent', next_state: 'WAITING_ORDER_CONFIRMATION' });
      expect(second.body.answer).toBe(
        'O pedido ainda não foi despachado e pode ser cancelado. Confirma o cancelamento do pedido (pedido 100239)? Responda sim ou não.',
      );
      const after = await stateOf(sessionId);
      expect(after.active_transaction).toMatchObject({
        transaction_id: (before.active_transaction as Record<string, unknown>).transaction_id,
        arguments: { order_id: '100239' },
      });
      expect(after.pending_tool_call).toMatchObject({ arguments: { order_id: '100239' }, requested_turn: 2 });
      expect((await events(sessionId)).map((e) => e.name)).toContain('IC.TRANSACTION_CORRECTED');
      expect(await mcp.orderStatus('100236')).toBe('processing');
      expect(await mcp.orderStatus('100239')).toBe('processing');
    });
  });
  describe('a person, the end of the session and the next message', () => {
    const cancelOrder = (orderId: string) => `Quero cancelar o pedido ${orderId}`;
    /** Turn 1: the order's cancellation waits for the confirmation. */
    const waitingConfirmation = async (sessionId: string, orderId: string) => {
      agentStarts('cancelar_pedido', cancelOrder(orderId));
      fake.script({ model: 'agent', reply: { content: 'Posso ajudar em algo mais?' } });
      const first = await send(sessionId, cancelOrder(orderId));
      expect(first.body).toMatchObject({
        next_state: 'WAITING_ORDER_CONFIRMATION',
        transaction_status: 'AWAITING_CONFIRMATION',
      });
      return (await stateOf(sessionId)).active_transaction as Record<string, unknown>;
    };

    it.each([
      [
        'human_handoff',
        'Quero falar com uma pessoa',
        'HUMAN_HANDOFF',
        '100237',
        {
          session_control: 'HUMAN_HANDOFF',
          human_handoff_requested: true,
          next_state: 'HUMAN_HANDOFF_REQUESTED',
        },
        'session.human_handoff.requested',
      ],
      [
        'end_session',
        'Pode encerrar o atendimento',
        'END_SESSION',
        '100238',
        { session_control: 'END_SESSION', session_ended: true, next_state: 'SESSION_ENDED' },
        'session.end.requested',
      ],
    ])(
      '%s during the confirmation ends the operation interrupted, and a later yes runs nothing',
      async (reason, message, decision, orderId, contract, sessionEvent) => {
        verdicts[message] = { decision, confidence: 0.97 };
        confirmationReads('Sim, pode cancelar', { decision: 'CONFIRM', confidence: 0.97 });
        const sessionId = uniqueId(reason);
        const transaction = await waitingConfirmation(sessionId, orderId);

        const second = await send(sessionId, message);
        expect(second.body).toMatchObject({ ...contract, transaction_status: 'CANCELLED' });
        const state = await stateOf(sessionId);
        expect(state).toMatchObject({
          active_transaction: null,
          pending_tool_call: null,
          confirmation_required: false,
          transaction_status: 'CANCELLED',
          last_transaction: {
            transaction_id: transaction.transaction_id,
            status: 'CANCELLED',
            interruption: reason,
            finished_turn: 2,
          },
        });
        expect(state.operation_results).toEqual({
          [String(transaction.transaction_id)]: expect.objectContaining({
            status: 'CANCELLED',
            finished_turn: 2,
          }),
        });
        const turn2 = (await events(sessionId)).filter((e) => e.turn === 2);
        const names = turn2.map((e) => e.name);
        // The session event first: a handoff's summary shows the operation the customer was in the middle of.
        expect(names.indexOf(sessionEvent)).toBeGreaterThanOrEqual(0);
        expect(names.indexOf('IC.TRANSACTION_INTERRUPTED')).toBeGreaterThan(names.indexOf(sessionEvent));
        expect(turn2.find((e) => e.name === 'IC.TRANSACTION_INTERRUPTED')?.payload).toMatchObject({
          transaction_id: transaction.transaction_id,
          tool_name: 'cancelar_pedido',
          agent: 'orders_agent',
          reason,
        });

        const third = await send(sessionId, 'Sim, pode cancelar');
        expect(third.body.transaction_status).toBeNull();
        expect((await events(sessionId)).map((e) => e.name)).not.toContain('IC.TRANSACTION_EXECUTED');
        expect(await mcp.orderStatus(orderId)).toBe('processing');
      },
    );

    it('an operator ending the session ends the collection the same way', async () => {
      agentStarts('cancelar_pedido', 'Quero cancelar um pedido');
      const sessionId = uniqueId('admin-end');
      const first = await send(sessionId, 'Quero cancelar um pedido');
      expect(first.body.transaction_status).toBe('COLLECTING_PARAMETERS');
      const ended = await app.post<{ events: string[] }>(
        `/v1/admin/sessions/${sessionId}/end?tenant_id=${tenant}`,
        { reason: 'closing the queue' },
      );
      expect(ended.status).toBe(200);
      expect(ended.body.events).toEqual(['session.end.requested', 'IC.TRANSACTION_INTERRUPTED']);
      expect(await stateOf(sessionId)).toMatchObject({
        active_transaction: null,
        transaction_status: 'CANCELLED',
        last_transaction: { status: 'CANCELLED', interruption: 'end_session' },
      });
    });

    it('the message after a completed operation is classified knowing it ended, once', async () => {
      confirmationReads('Sim, pode cancelar', { decision: 'CONFIRM', confidence: 0.97 });
      verdicts['E o estorno, quando cai?'] = { decision: 'CONTINUE', confidence: 0.95 };
      const sessionId = uniqueId('after-completion');
      await waitingConfirmation(sessionId, '100231');
      const completed = await send(sessionId, 'Sim, pode cancelar');
      expect(completed.body).toMatchObject({ next_state: null, transaction_status: 'COMPLETED' });
      expect(await mcp.orderStatus('100231')).toBe('cancelled');

      // A new question for the agent that ended the operation: the classifier keeps it, on its own intent.
      const question = await send(sessionId, 'E o estorno, quando cai?');
      expect(question.body).toMatchObject({
        route: 'orders_agent',
        route_bypassed: true,
        next_state: null,
        transaction_status: null,
        route_decision: { method: 'continuity', intent: 'retail_order_cancel', next_state: null },
      });
      // A bare acknowledgement two turns later: nothing ended on the turn before, so nothing is said about it.
      await send(sessionId, 'ok');
      const payloads = fake.requestsFor('route_continuity').map(classifierPayload);
      expect(payloads.map((p) => p.current_message)).toEqual([
        cancelOrder('100231'),
        'Sim, pode cancelar',
        'E o estorno, quando cai?',
        'ok',
      ]);
      expect(payloads.map((p) => p.finished_operation ?? null)).toEqual([
        null,
        null,
        { operation: 'cancelar_pedido', status: 'COMPLETED' },
        null,
      ]);
      expect(Object.keys(payloads[2]).at(-1)).toBe('finished_operation');
    });

    it('a bare follow-up right after the operation ended goes to the router when the classifier says so', async () => {
      confirmationReads('Sim, pode cancelar', { decision: 'REJECT', confidence: 0.97 });
      const sessionId = uniqueId('after-cancel');
      await waitingConfirmation(sessionId, '100239');
      const cancelled = await send(sessionId, 'Sim, pode cancelar');
      expect(cancelled.body.transaction_status).toBe('CANCELLED');
      const followUp = await send(sessionId, 'ok');
      expect(followUp.body).toMatchObject({ route_bypassed: false, transaction_status: null });
      expect((followUp.body.route_decision as { method: string }).method).not.toBe('continuity');
      expect(classifierPayload(fake.requestsFor('route_continuity')[2]).finished_operation).toEqual({
        operation: 'cancelar_pedido',
        status: 'CANCELLED',
      });
    });
  });
});
