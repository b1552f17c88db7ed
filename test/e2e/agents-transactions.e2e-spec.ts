import { AgentsService } from '@agent/agents';
import { decisionOf, turnStateOf } from '../support/states';
import { conversationKeyOf, type AgentState } from '@agent/contracts';
import { GuardrailsService } from '@agent/guardrails';
import { TurnContextStore } from '@agent/observability';
import {
  FakeChatRequest,
  FakeLlmServer,
  FakeReply,
  GUARDRAILS_ALLOW,
  hasToolMessage,
  lastUserMessage,
  offeredTools,
  requestText,
  scriptInvoiceLookup,
} from '../support/fake-llm';
import { ReferenceMcpProcess } from '../support/reference-mcp';
import { TcpProxy } from '../support/tcp-proxy';
import { startTestApp, TestApp, uniqueId } from '../support/test-app';
import { waitUntil } from '../support/wait-for';

/**
 * Domain agents against the real reference MCP server process: a read-only tool call, the whole
 * cancellation transaction (collect → pre-validate → confirm → execute), rejection, out-of-scope,
 * at-most-once execution, intent shift, and the server going down and coming back.
 */

type Row = { name: string; turn: number; payload: Record<string, unknown> };

/** The router LLM stage's payload: the message and, while a transaction waits, its context. */
function routerPayload(request: FakeChatRequest): {
  message: string;
  transaction_context?: { intent?: string | null };
} {
  const raw = lastUserMessage(request);
  try {
    const parsed = JSON.parse(raw) as { message?: unknown; transaction_context?: { intent?: string | null } };
    return { ...parsed, message: typeof parsed.message === 'string' ? parsed.message : raw };
  } catch {
    return { message: raw };
  }
}

/**
 * Keyword-free routing: the scripted router model decides, whatever the keyword stage does. Like the real
 * prompt asks, a message that only answers a waiting transaction keeps the transaction's intent.
 */
function routerReply(request: FakeChatRequest): FakeReply {
  const payload = routerPayload(request);
  const message = payload.message.toLowerCase();
  const topic = /fatura|conta|boleto/.test(message)
    ? 'billing_invoice_explanation'
    : /plano|roaming|servi/.test(message)
      ? 'product_services_information'
      : /troc|defeito|devol/.test(message)
        ? 'retail_support_exchange_return'
        : /cancel/.test(message)
          ? 'retail_order_cancel'
          : null;
  const intent = topic ?? payload.transaction_context?.intent ?? 'retail_order_cancel';
  return { json: { intent, confidence: 0.95, reason: 'scripted' } };
}

describe('domain agents with the reference MCP server', () => {
  let fake: FakeLlmServer;
  let mcp: ReferenceMcpProcess;
  /** Between the app and the server, to count the server's tools/list requests. */
  let proxy: TcpProxy;
  let app: TestApp;
  const tenant = 'acme';

  beforeAll(async () => {
    [fake, mcp] = await Promise.all([FakeLlmServer.start(), ReferenceMcpProcess.start()]);
    const proxied = await TcpProxy.forUrl(mcp.url);
    proxy = proxied.proxy;
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        MCP_SERVER_TELECOM_URL: proxied.url,
        MCP_SERVER_RETAIL_URL: proxied.url,
        MCP_CALL_TIMEOUT_MS: '5000',
        MCP_CONNECT_TIMEOUT_MS: '3000',
        RAG_INGEST_ON_START: 'false',
      },
    });
  }, 240000);

  afterAll(async () => {
    await app?.close();
    await proxy?.stop();
    await mcp?.dispose();
    await fake?.stop();
  }, 60000);

  beforeEach(() => {
    fake.reset();
    fake.script(GUARDRAILS_ALLOW);
    fake.script({ model: 'router', reply: routerReply });
  });

  const send = (sessionId: string, text: string, agentId = 'retail_orders', messageId?: string) =>
    app.post<Record<string, unknown>>('/v1/channels/web/messages', {
      tenant_id: tenant,
      agent_id: agentId,
      session_id: sessionId,
      text,
      ...(messageId ? { message_id: messageId } : {}),
    });

  const latestState = async (sessionId: string): Promise<AgentState> => {
    const rows: { state: AgentState }[] = await app.dataSource.query(
      'SELECT state::jsonb AS state FROM checkpoints WHERE conversation_key = $1 ORDER BY version DESC LIMIT 1',
      [`${tenant}:${sessionId}`],
    );
    return rows[0].state;
  };

  const events = async (sessionId: string): Promise<Row[]> =>
    app.dataSource.query(
      'SELECT name, turn, payload FROM session_events WHERE conversation_key = $1 ORDER BY id',
      [`${tenant}:${sessionId}`],
    );

  it("offers the agent's tools on every turn from one tools/list", async () => {
    fake.script({ model: 'agent', reply: { content: 'Sua fatura está em dia.' } });
    const sessionId = uniqueId('list');
    for (const text of ['Quanto está a minha fatura?', 'E a fatura anterior?', 'Minha fatura venceu?']) {
      expect((await send(sessionId, text, 'telecom_contas')).status).toBe(200);
    }
    const offers = fake.requestsFor('agent').map(offeredTools);
    expect(offers).toHaveLength(3);
    for (const offer of offers) expect(offer).toContain('consultar_fatura');
    expect(proxy.sent.split('"method":"tools/list"').length - 1).toBe(1);
  });

  it('answers a billing question with data from consultar_fatura', async () => {
    scriptInvoiceLookup(
      fake,
      '11999990001',
      (invoice) =>
        `billing_agent: Sua fatura ${invoice.invoice_id} está em R$ ${invoice.amount} e vence em ${invoice.due_date}.`,
    );
    const sessionId = uniqueId('bill');
    const res = await send(
      sessionId,
      'Quero entender minha fatura, meu número é 11 99999-0001',
      'telecom_contas',
    );
    expect(res.status).toBe(200);
    expect(res.body.route).toBe('billing_agent');
    // Data from the seeded database, read through MCP, and no agent-name prefix.
    expect(res.body.answer).toBe('Sua fatura FAT-202603-0001 está em R$ 132.37 e vence em 2026-04-10.');

    const agentCalls = fake.requestsFor('agent');
    expect(agentCalls).toHaveLength(2);
    expect(offeredTools(agentCalls[0]).sort()).toEqual(['consultar_fatura', 'consultar_pagamentos']);
    const second = agentCalls[1];
    const assistant = second.messages.find((m) => m.role === 'assistant' && m.tool_calls);
    const toolMessage = second.messages.find((m) => m.role === 'tool');
    expect(assistant).toBeDefined();
    expect(toolMessage?.tool_call_id).toBe((assistant?.tool_calls as { id: string }[])[0].id);
    expect(toolMessage?.content).toContain('FAT-202603-0001');

    const state = await latestState(sessionId);
    expect(state.mcp_results).toEqual([
      expect.objectContaining({ ok: true, tool_name: 'consultar_fatura', server: 'telecom', error: null }),
    ]);
    const completed = (await events(sessionId)).filter((e) => e.name === 'mcp.tool_call.completed');
    expect(completed).toHaveLength(1);
    expect(completed[0].payload).toMatchObject({
      tool_name: 'consultar_fatura',
      server: 'telecom',
      ok: true,
    });
    expect(typeof completed[0].payload.latency_ms).toBe('number');
  });

  it('collects the order id, pre-validates, asks to confirm and cancels on a yes, exactly once', async () => {
    fake.script({
      model: 'agent',
      when: (r) => !hasToolMessage(r) && /cancelar meu pedido/.test(lastUserMessage(r)),
      reply: { content: null, tool_calls: [{ name: 'cancelar_pedido', arguments: {} }] },
    });
    fake.script({
      model: 'agent',
      when: (r) => requestText(r).includes('foi executada após a confirmação'),
      reply: (request) => {
        const protocol = /"protocol":"(CAN-\d+)"/.exec(requestText(request))?.[1] ?? 'sem protocolo';
        return { content: `Pedido cancelado com sucesso. Protocolo ${protocol}.` };
      },
    });
    fake.script({ model: 'agent', reply: { content: 'Posso ajudar em algo mais?' } });
    fake.script({
      model: 'confirmation',
      when: (r) => /^sim/i.test(lastUserMessage(r)),
      reply: { json: { decision: 'CONFIRM', confidence: 0.97 } },
    });
    const sessionId = uniqueId('cancel');

    const first = await send(sessionId, 'Quero cancelar meu pedido');
    expect(first.status).toBe(200);
    // retail_orders has its own orders_agent prompt (agents.yaml prompts_dir), after its system_prefix.
    const system = String(fake.requestsFor('agent')[0].messages[0].content);
    expect(system).toContain('Você atende clientes de varejo');
    expect(system).toContain('Os números de pedido têm seis dígitos');
    expect(first.body).toMatchObject({ route: 'orders_agent', next_state: 'COLLECTING_ORDER_PARAMETERS' });
    expect(first.body.answer).toBe(
      'Para seguir com o cancelamento do pedido, preciso de: o número do pedido.',
    );
    const collecting = await latestState(sessionId);
    expect(collecting).toMatchObject({
      transaction_status: 'COLLECTING_PARAMETERS',
      missing_parameters: ['order_id'],
      active_transaction: {
        tool_name: 'cancelar_pedido',
        status: 'COLLECTING_PARAMETERS',
        state_domain: 'ORDER',
      },
    });

    const second = await send(sessionId, 'É o pedido 100236');
    expect(second.body).toMatchObject({ route: 'orders_agent', next_state: 'WAITING_ORDER_CONFIRMATION' });
    expect((second.body.route_decision as { method: string }).method).toBe('state_policy');
    expect(second.body.answer).toBe(
      'O pedido ainda não foi despachado e pode ser cancelado. Confirma o cancelamento do pedido (pedido 100236)? Responda sim ou não.',
    );
    const waiting = await latestState(sessionId);
    expect(waiting).toMatchObject({
      transaction_status: 'AWAITING_CONFIRMATION',
      confirmation_required: true,
      pending_tool_call: {
        tool_name: 'cancelar_pedido',
        arguments: { order_id: '100236' },
        requested_turn: 2,
      },
      transaction_pre_validation: { tool_name: 'validar_cancelamento_pedido', ok: true, eligible: true },
    });
    expect(await mcp.orderStatus('100236')).toBe('processing');

    const third = await send(sessionId, 'sim, pode cancelar', 'retail_orders', 'confirm-1');
    expect(third.status).toBe(200);
    expect(third.body).toMatchObject({ route: 'orders_agent', next_state: null });
    expect(third.body.answer).toBe('Pedido cancelado com sucesso. Protocolo CAN-100236.');
    expect(await mcp.orderStatus('100236')).toBe('cancelled');
    const done = await latestState(sessionId);
    expect(done).toMatchObject({
      transaction_status: 'COMPLETED',
      active_transaction: null,
      pending_tool_call: null,
      confirmation_received: true,
      last_transaction: { tool_name: 'cancelar_pedido', status: 'COMPLETED', finished_turn: 3 },
    });
    expect(done.transaction_evidence).toHaveLength(1);
    const evidence = done.transaction_evidence?.[0] as Record<string, unknown>;
    expect(evidence).toMatchObject({
      status: 'COMPLETED',
      ok: true,
      idempotent_replay: false,
      executed_turn: 3,
    });
    expect(String(evidence.idempotency_key)).toMatch(/^txn-[0-9a-f]{64}$/);

    // The same delivery again: the stored response, nothing runs.
    const before = (await events(sessionId)).length;
    const replay = await send(sessionId, 'sim, pode cancelar', 'retail_orders', 'confirm-1');
    expect(replay.body).toEqual(third.body);
    expect((await events(sessionId)).length).toBe(before);

    // A new "sim" after the transaction finished: no pending call, so no second cancellation.
    const again = await send(sessionId, 'sim');
    expect(again.status).toBe(200);
    expect(again.body.next_state).toBeNull();
    const turn5 = (await events(sessionId)).filter((e) => e.turn === 5).map((e) => e.payload.tool_name);
    expect(turn5).not.toContain('cancelar_pedido');
    expect((await latestState(sessionId)).transaction_evidence).toHaveLength(1);

    // A retried confirmation turn (the commit lost after the call): the same idempotency key reaches the
    // server, which returns the first outcome instead of acting again.
    const agents = app.app.get(AgentsService);
    const retried = await TurnContextStore.run(
      {
        request_id: 'retry',
        tenant_id: tenant,
        agent_id: 'retail_orders',
        session_id: sessionId,
        conversation_key: `${tenant}:${sessionId}`,
        turn: 3,
        events: [],
        nodes: [],
      },
      () =>
        agents.run(
          'orders_agent',
          turnStateOf({
            ...waiting,
            conversation_key: conversationKeyOf(tenant, sessionId),
            user_text: 'sim, pode cancelar',
            sanitized_input: 'sim, pode cancelar',
            turn: 3,
            route_decision: decisionOf({
              route: 'orders_agent',
              agent: 'orders_agent',
              intent: 'state:WAITING_ORDER_CONFIRMATION',
              method: 'state_policy',
            }),
          }),
          app.app.get(GuardrailsService).contentScreen(),
        ),
    );
    expect(retried.transaction_status).toBe('COMPLETED');
    expect(retried.last_transaction_evidence).toMatchObject({
      idempotency_key: evidence.idempotency_key,
      idempotent_replay: true,
      result: expect.objectContaining({ previous_status: 'processing', status: 'cancelled' }),
    });
    expect(await mcp.orderStatus('100236')).toBe('cancelled');
  });

  it('cancels nothing when the customer says no', async () => {
    fake.script({
      model: 'agent',
      when: (r) => !hasToolMessage(r),
      reply: { content: null, tool_calls: [{ name: 'cancelar_pedido', arguments: { order_id: '100237' } }] },
    });
    fake.script({ model: 'confirmation', reply: { json: { decision: 'REJECT', confidence: 0.93 } } });
    const sessionId = uniqueId('reject');
    const first = await send(sessionId, 'Preciso cancelar a compra 100237');
    expect(first.body.next_state).toBe('WAITING_ORDER_CONFIRMATION');
    const second = await send(sessionId, 'não, mudei de ideia');
    expect(second.body).toMatchObject({ route: 'orders_agent', next_state: null });
    expect(second.body.answer).toBe(
      'Tudo bem, o cancelamento do pedido não foi realizado. Posso ajudar em algo mais?',
    );
    expect(await latestState(sessionId)).toMatchObject({
      transaction_status: 'CANCELLED',
      active_transaction: null,
      pending_tool_call: null,
      last_transaction: { status: 'CANCELLED' },
    });
    expect(await mcp.orderStatus('100237')).toBe('processing');
    const calls = (await events(sessionId)).filter((e) => e.name === 'mcp.tool_call.completed');
    expect(calls.map((e) => e.payload.tool_name)).toEqual(['validar_cancelamento_pedido']);
  });

  it('asks again on an unclear answer and ends out of scope when pre-validation refuses', async () => {
    fake.script({
      model: 'agent',
      when: (r) => !hasToolMessage(r) && /100238/.test(lastUserMessage(r)),
      reply: { content: null, tool_calls: [{ name: 'cancelar_pedido', arguments: { order_id: '100238' } }] },
    });
    fake.script({
      model: 'agent',
      when: (r) => !hasToolMessage(r) && /100232/.test(lastUserMessage(r)),
      reply: { content: null, tool_calls: [{ name: 'cancelar_pedido', arguments: { order_id: '100232' } }] },
    });
    fake.script({ model: 'confirmation', reply: { json: { decision: 'OTHER', confidence: 0.9 } } });
    const unclear = uniqueId('unclear');
    await send(unclear, 'Quero cancelar o pedido 100238');
    const again = await send(unclear, 'quanto tempo demora o estorno?');
    expect(again.body.next_state).toBe('WAITING_ORDER_CONFIRMATION');
    expect(again.body.answer).toBe(
      'Só para confirmar: deseja seguir com o cancelamento do pedido (pedido 100238)? Responda sim ou não.',
    );
    expect(await mcp.orderStatus('100238')).toBe('processing');

    const shipped = uniqueId('shipped');
    const res = await send(shipped, 'Quero cancelar o pedido 100232');
    expect(res.body.next_state).toBeNull();
    expect(res.body.answer).toContain(
      'Não é possível seguir com o cancelamento do pedido: O pedido já foi despachado',
    );
    expect(await latestState(shipped)).toMatchObject({
      transaction_status: 'OUT_OF_SCOPE',
      active_transaction: null,
      transaction_pre_validation: { eligible: false, reason: 'order_shipped' },
    });
    expect(await mcp.orderStatus('100232')).toBe('shipped');
  });

  it('drops the pending transaction when the router shifts to another intent', async () => {
    fake.script({
      model: 'agent',
      when: (r) => !hasToolMessage(r) && /100231/.test(lastUserMessage(r)),
      reply: { content: null, tool_calls: [{ name: 'cancelar_pedido', arguments: { order_id: '100231' } }] },
    });
    fake.script({ model: 'agent', reply: { content: 'Sua fatura atual vence dia 10.' } });
    const sessionId = uniqueId('shift');
    const first = await send(sessionId, 'Quero cancelar o pedido 100231');
    expect(first.body.next_state).toBe('WAITING_ORDER_CONFIRMATION');
    const second = await send(sessionId, 'Na verdade, me explica a minha fatura deste mês');
    expect(second.body.route).toBe('billing_agent');
    expect(second.body.next_state).toBeNull();
    expect(second.body.answer).toBe('Sua fatura atual vence dia 10.');
    expect(await latestState(sessionId)).toMatchObject({
      active_transaction: null,
      pending_tool_call: null,
      transaction_status: 'CANCELLED',
      last_transaction: { tool_name: 'cancelar_pedido', status: 'CANCELLED', interruption: 'intent_shift' },
    });
    expect(await mcp.orderStatus('100231')).toBe('processing');
  });

  it('collects two parameters for an exchange (pattern and LLM extraction) and opens it on confirmation', async () => {
    fake.script({
      model: 'agent',
      when: (r) => !hasToolMessage(r) && /trocar/.test(lastUserMessage(r)),
      reply: { content: null, tool_calls: [{ name: 'solicitar_troca', arguments: {} }] },
    });
    fake.script({
      model: 'agent',
      when: (r) => requestText(r).includes('foi executada após a confirmação'),
      reply: (request) => ({
        content: `Troca aberta: ${/"request_id":"(TRC-\d+)"/.exec(requestText(request))?.[1] ?? '?'}.`,
      }),
    });
    // parameter_extraction is not a test profile, so the `default` profile answers the extraction.
    fake.script({
      model: 'default',
      when: (r) => requestText(r).includes('solicitar_troca'),
      reply: { json: { values: { reason: 'veio com defeito', order_id: null } } },
    });
    fake.script({ model: 'confirmation', reply: { json: { decision: 'CONFIRM', confidence: 0.9 } } });
    const sessionId = uniqueId('exchange');
    const first = await send(sessionId, 'Quero trocar um produto');
    expect(first.body).toMatchObject({ route: 'support_agent', next_state: 'COLLECTING_SUPPORT_PARAMETERS' });
    expect(first.body.answer).toBe(
      'Para seguir com a troca do pedido, preciso de: o número do pedido e o motivo.',
    );

    const second = await send(sessionId, 'O pedido 100233 veio com defeito');
    expect(second.body.next_state).toBe('WAITING_SUPPORT_CONFIRMATION');
    expect(second.body.answer).toBe(
      'Confirma a troca do pedido (pedido 100233, motivo veio com defeito)? Responda sim ou não.',
    );
    const extraction = fake.requestsFor('default').find((r) => requestText(r).includes('solicitar_troca'));
    // Only what the pattern did not find goes to the model.
    expect(String(extraction?.messages[0].content)).toContain('- reason (string)');
    expect(String(extraction?.messages[0].content)).not.toContain('- order_id');

    const third = await send(sessionId, 'sim');
    expect(third.body.next_state).toBeNull();
    expect(third.body.answer).toMatch(/^Troca aberta: TRC-\d+\.$/);
    expect(await latestState(sessionId)).toMatchObject({
      transaction_status: 'COMPLETED',
      last_transaction: { tool_name: 'solicitar_troca', state_domain: 'SUPPORT', status: 'COMPLETED' },
    });
  });

  it('reports tool calls refused before they run (not allowed, malformed arguments) with NOC.MCP_TOOL_FAILED', async () => {
    fake.script({
      model: 'agent',
      when: (r) => !hasToolMessage(r),
      reply: {
        content: null,
        tool_calls: [
          { name: 'cancelar_pedido', arguments: { order_id: '100231' } },
          { name: 'consultar_fatura', arguments: '{not json' },
        ],
      },
    });
    fake.script({ model: 'agent', reply: { content: 'Não consegui consultar agora.' } });
    const sessionId = uniqueId('refused');
    const res = await send(sessionId, 'Qual o valor da minha fatura?', 'telecom_contas');
    expect(res.status).toBe(200);
    expect(res.body.answer).toBe('Não consegui consultar agora.');
    const failed = (await events(sessionId)).filter((e) => e.name === 'NOC.MCP_TOOL_FAILED');
    expect(failed.map((e) => e.payload)).toEqual([
      expect.objectContaining({
        tool_name: 'cancelar_pedido',
        server: 'retail',
        error: 'tool cancelar_pedido is not available for this request',
        stage: 'preparation',
        code: 'tool_not_allowed',
      }),
      expect.objectContaining({
        tool_name: 'consultar_fatura',
        server: 'telecom',
        error: 'arguments are not a JSON object',
        stage: 'preparation',
        code: 'malformed_arguments',
      }),
    ]);
    // Neither call reached a server, and the order is untouched.
    expect((await events(sessionId)).filter((e) => e.name === 'mcp.tool_call.completed')).toEqual([]);
    expect(await mcp.orderStatus('100231')).toBe('processing');
  });

  it('bounds the tool-call loop by max_tool_steps and then asks for an answer without tools', async () => {
    fake.script({
      model: 'agent',
      when: (r) => offeredTools(r).length > 0,
      reply: {
        content: null,
        tool_calls: [{ name: 'consultar_pagamentos', arguments: { msisdn: '11999990001' } }],
      },
    });
    fake.script({ model: 'agent', reply: { content: 'Seu último pagamento foi de R$ 84,89.' } });
    const res = await send(
      uniqueId('loop'),
      'Quais pagamentos da minha conta vocês receberam?',
      'telecom_contas',
    );
    expect(res.body.answer).toBe('Seu último pagamento foi de R$ 84,89.');
    const calls = fake.requestsFor('agent');
    // agents.yaml billing_agent.max_tool_steps: 4 rounds with tools, then one without.
    expect(calls.map((r) => offeredTools(r).length > 0)).toEqual([true, true, true, true, false]);
    expect(calls[4].messages.filter((m) => m.role === 'tool')).toHaveLength(4);
  });

  /** The billing agent calls consultar_fatura once, then answers by the tool's outcome. */
  function scriptBillingLookup(): void {
    fake.script({
      model: 'agent',
      when: (r) => !hasToolMessage(r),
      reply: {
        content: null,
        tool_calls: [{ name: 'consultar_fatura', arguments: { msisdn: '5511999990001' } }],
      },
    });
    fake.script({
      model: 'agent',
      when: hasToolMessage,
      reply: (request) => {
        const tool = JSON.parse(String(request.messages.find((m) => m.role === 'tool')?.content)) as {
          ok: boolean;
          error?: string;
        };
        return {
          content: tool.ok ? 'Sua fatura está disponível.' : 'Não consegui consultar sua fatura agora.',
        };
      },
    });
  }

  it('answers with ok:false and NOC.MCP_TOOL_FAILED while the server is down, and reconnects after', async () => {
    scriptBillingLookup();
    await mcp.stop();
    try {
      const sessionId = uniqueId('down');
      const res = await send(sessionId, 'Qual o valor da minha fatura?', 'telecom_contas');
      expect(res.status).toBe(200);
      expect(res.body.answer).toBe('Não consegui consultar sua fatura agora.');
      const toolMessage = fake.requestsFor('agent')[1].messages.find((m) => m.role === 'tool');
      expect(JSON.parse(String(toolMessage?.content))).toMatchObject({
        ok: false,
        error: 'MCP Tool Router unavailable',
      });
      const rows = await events(sessionId);
      expect(rows.find((e) => e.name === 'NOC.MCP_TOOL_FAILED')?.payload).toMatchObject({
        tool_name: 'consultar_fatura',
        server: 'telecom',
        error: 'MCP Tool Router unavailable',
      });
      expect(rows.find((e) => e.name === 'mcp.tool_call.completed')?.payload).toMatchObject({
        tool_name: 'consultar_fatura',
        ok: false,
      });
      expect((await latestState(sessionId)).mcp_results).toEqual([
        expect.objectContaining({
          ok: false,
          error: 'MCP Tool Router unavailable',
          tool_name: 'consultar_fatura',
        }),
      ]);
    } finally {
      await mcp.restart();
    }
    // Once its short reconnect back-off is over, the same app reaches the restarted server.
    await waitUntil(
      'a tool call through the restarted server',
      async () => {
        const back = await send(uniqueId('back'), 'Qual o valor da minha fatura?', 'telecom_contas');
        return back.body.answer === 'Sua fatura está disponível.';
      },
      15000,
      200,
    );
  }, 180000);

  it('costs a tool call MCP_CALL_TIMEOUT_MS while the server hangs, and calls it again once it answers', async () => {
    scriptBillingLookup();
    const warm = await send(uniqueId('warm'), 'Qual o valor da minha fatura?', 'telecom_contas');
    expect(warm.body.answer).toBe('Sua fatura está disponível.');
    // The session is open and its tools listed: the server now accepts and never answers.
    proxy.blackHole();
    try {
      const started = Date.now();
      const res = await send(uniqueId('hung'), 'Qual o valor da minha fatura?', 'telecom_contas');
      const took = Date.now() - started;
      expect(res.status).toBe(200);
      expect(res.body.answer).toBe('Não consegui consultar sua fatura agora.');
      const toolMessage = fake
        .requestsFor('agent')
        .at(-1)
        ?.messages.find((m) => m.role === 'tool');
      expect(JSON.parse(String(toolMessage?.content))).toMatchObject({
        ok: false,
        error: expect.stringMatching(/did not answer within 5000 ms/),
      });
      // MCP_CALL_TIMEOUT_MS (5 s) once, then the turn goes on.
      expect(took).toBeGreaterThanOrEqual(5000);
      expect(took).toBeLessThan(9000);
    } finally {
      await proxy.restore();
    }
    const back = await send(uniqueId('back'), 'Qual o valor da minha fatura?', 'telecom_contas');
    expect(back.body.answer).toBe('Sua fatura está disponível.');
  }, 60000);
});
