import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { MCP_UNAVAILABLE_ERROR } from '@agent/mcp';
import { agentPolicyConfigDir as configDir, shippedConfig } from '../support/agent-policy-config';
import {
  FakeChatRequest,
  FakeLlmServer,
  GUARDRAILS_ALLOW,
  hasToolMessage,
  lastUserMessage,
  offeredTools,
  requestText,
} from '../support/fake-llm';
import { freePort, ReferenceMcpProcess } from '../support/reference-mcp';
import { compiledEntry } from '../support/repo-root';
import { REPO_ROOT, startTestApp, TestApp, testDatabase, uniqueId } from '../support/test-app';

/**
 * Per-agent policy on one runtime: `retail_orders` names its own guardrails, judges and tool policy files in
 * agents.yaml, `telecom_contas` keeps the global ones. The same message, routed to the same graph agent with
 * the same scripted answers, is treated differently by each.
 */

const RETAIL_BLOCKED = 'Não posso oferecer cupons por este canal.';
const RETAIL_REFUSED = 'Vale-presente não é tratado por este canal.';
const RETAIL_REPLACED = 'Resposta retida pela revisão de qualidade deste canal.';

/** guardrails.yaml with compliance rails on: a customer may not ask for gift cards, an answer may not offer coupons. */
function retailGuardrails(): unknown {
  const global = shippedConfig<{
    input: { code: string }[];
    output: { code: string }[];
    messages: Record<string, unknown>;
  }>('guardrails.yaml');
  return {
    ...global,
    // One failed guardrail-model call in a row reports this file's model degraded (guardrails.yaml: 3).
    degraded_after_failures: 1,
    messages: {
      ...global.messages,
      input_blocked: { CMP: RETAIL_REFUSED },
      output_blocked: { CMP: RETAIL_BLOCKED },
    },
    input: [
      ...global.input.filter((rail) => rail.code !== 'CMP'),
      {
        code: 'CMP',
        enabled: true,
        params: { forbidden: [{ id: 'gift_card', pattern: 'vale[- ]presente' }] },
      },
    ],
    output: [
      ...global.output.filter((rail) => rail.code !== 'CMP'),
      {
        code: 'CMP',
        enabled: true,
        params: { forbidden: [{ id: 'coupon', pattern: 'cupo(m|ns)' }], output_action: 'block' },
      },
    ],
  };
}

/** routing.yaml with the retail intents only, and orders_agent where nothing matches. */
function retailRouting(): unknown {
  const global = shippedConfig<{
    router: Record<string, unknown>;
    intents: { domain: string }[];
  }>('routing.yaml');
  return {
    ...global,
    router: { ...global.router, fallback_agent: 'orders_agent' },
    intents: global.intents.filter((intent) => intent.domain === 'retail'),
  };
}

function expressRouting(): unknown {
  const routing = retailRouting() as { router: Record<string, unknown> };
  return { ...routing, router: { ...routing.router, llm_profile: 'express_router' } };
}

const RETAIL_POLICY = {
  'policies/retail_routing.yaml': retailRouting(),
  'policies/retail_guardrails.yaml': retailGuardrails(),
  'policies/retail_judges.yaml': {
    sample_rate: 1,
    fallback_message: RETAIL_REPLACED,
    judges: [{ name: 'groundedness', type: 'llm', threshold: 0.6, enforce: true }],
    supervisor_review: { enabled: true, rules: [] },
  },
  'policies/retail_tools.yaml': {
    allowed_tools: ['consultar_pedido', 'cancelar_pedido'],
    require_confirmation: { cancelar_pedido: false },
    max_tool_steps: 1,
  },
};

type Row = { name: string; payload: Record<string, unknown> };

/** The admin view of /health/ready (authentication is off in these tests). */
interface Readiness {
  status: string;
  details: {
    config: { routing: Record<string, unknown>[] };
    guardrail_model: Record<string, unknown> & { files: Record<string, unknown>[] };
    mcp: { enabled: boolean; servers: Record<string, unknown>[] };
  };
}

/** The customer's message in a router call (its payload also carries the intent catalogue). */
const routedMessage = (request: FakeChatRequest) =>
  String((JSON.parse(lastUserMessage(request)) as { message?: unknown }).message);

describe('per-agent policy (e2e)', () => {
  let fake: FakeLlmServer;
  let mcp: ReferenceMcpProcess;
  let app: TestApp;
  let dir: string;
  let downPort: number;

  beforeAll(async () => {
    [fake, mcp] = await Promise.all([FakeLlmServer.start(), ReferenceMcpProcess.start()]);
    // Nothing listens there: the outlet's retail server is down while the deployment's is up.
    downPort = await freePort();
    dir = configDir(
      {
        retail_orders: {
          routing: 'policies/retail_routing.yaml',
          guardrails: 'policies/retail_guardrails.yaml',
          judges: 'policies/retail_judges.yaml',
          tool_policy: 'policies/retail_tools.yaml',
        },
        retail_outlet: { mcp_servers: 'policies/outlet_mcp.yaml' },
        retail_express: {
          routing: 'policies/express_routing.yaml',
          mcp_servers: 'policies/express_mcp.yaml',
        },
      },
      {
        ...RETAIL_POLICY,
        // Its router asks a profile llm_profiles.yaml lacks: the `default` model answers for it.
        'policies/express_routing.yaml': expressRouting(),
        // The deployment's retail server again, and no telecom one: readiness lists it once.
        'policies/express_mcp.yaml': {
          servers: { retail: { transport: 'streamable_http', url: mcp.url } },
        },
        'policies/outlet_mcp.yaml': {
          servers: { retail: { transport: 'streamable_http', url: `http://127.0.0.1:${downPort}/mcp` } },
        },
      },
    );
    app = await startTestApp({
      fakeLlm: fake,
      env: { ...mcp.appEnv, CONFIG_DIR: dir, RAG_INGEST_ON_START: 'false' },
    });
  }, 240000);

  afterAll(async () => {
    await app?.close();
    await mcp?.dispose();
    await fake?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60000);

  beforeEach(() => {
    fake.reset();
    fake.script(GUARDRAILS_ALLOW);
    fake.script({
      model: 'router',
      reply: (request) => ({
        json: {
          intent: /cancel/i.test(routedMessage(request)) ? 'retail_order_cancel' : 'retail_order_tracking',
          confidence: 0.95,
          reason: 'scripted',
        },
      }),
    });
    fake.script({ model: 'judge', reply: { json: { score: 0.1, passed: false, reason: 'not grounded' } } });
  });

  /** One turn of a new conversation of `agentId`, with its stored events. */
  const turn = async (agentId: string, text: string) => {
    const sessionId = uniqueId(agentId);
    const res = await app.post<Record<string, unknown>>('/v1/channels/web/messages', {
      tenant_id: 'acme',
      agent_id: agentId,
      session_id: sessionId,
      text,
    });
    expect(res.status).toBe(200);
    const events: Row[] = await app.dataSource.query(
      'SELECT name, payload FROM session_events WHERE conversation_key = $1 ORDER BY id',
      [`acme:${sessionId}`],
    );
    return { body: res.body, events, named: (name: string) => events.filter((e) => e.name === name) };
  };

  it("one agent's routing file routes its turns: the other agents' intents are not in its catalogue", async () => {
    fake.script({ model: 'agent', reply: { content: 'Certo.' } });
    const telecom = await turn('telecom_contas', 'Minha fatura veio alta');
    expect(telecom.body).toMatchObject({
      route: 'billing_agent',
      intent: 'billing_invoice_explanation',
      route_decision: expect.objectContaining({ method: 'keyword' }),
    });
    expect(fake.requestsFor('router')).toHaveLength(0);

    const retail = await turn('retail_orders', 'Minha fatura veio alta');
    expect(retail.body).toMatchObject({ route: 'orders_agent', intent: 'retail_order_tracking' });
    const [routerCall] = fake.requestsFor('router');
    expect(requestText(routerCall)).toContain('retail_order_tracking');
    expect(requestText(routerCall)).not.toContain('billing_invoice_explanation');
  });

  it("an output rail of one agent's guardrails file blocks only that agent's answers", async () => {
    fake.script({
      model: 'agent',
      reply: { content: 'Seu pedido está a caminho e ganhou um cupom de 10%.' },
    });
    const telecom = await turn('telecom_contas', 'Onde está meu pedido 100232?');
    expect(telecom.body).toMatchObject({
      route: 'orders_agent',
      blocked: false,
      answer: 'Seu pedido está a caminho e ganhou um cupom de 10%.',
    });
    const retail = await turn('retail_orders', 'Onde está meu pedido 100232?');
    expect(retail.body).toMatchObject({ route: 'orders_agent', blocked: true, answer: RETAIL_BLOCKED });
    expect(retail.named('GRL.004')).toEqual([
      expect.objectContaining({ payload: expect.objectContaining({ stage: 'output', code: 'CMP' }) }),
    ]);
    expect(telecom.named('GRL.004')).toEqual([]);
  });

  it("an input rail of one agent's guardrails file blocks only that agent's messages", async () => {
    fake.script({ model: 'agent', reply: { content: 'Posso ajudar com o pedido.' } });
    const text = 'Quero usar um vale-presente no pedido 100232';
    const telecom = await turn('telecom_contas', text);
    expect(telecom.body).toMatchObject({ route: 'orders_agent', blocked: false });
    const retail = await turn('retail_orders', text);
    expect(retail.body).toMatchObject({ route: 'blocked', blocked: true, answer: RETAIL_REFUSED });
    expect(fake.requestsFor('agent')).toHaveLength(1);
  });

  it("a judge of one agent's judges file runs, and enforces, only on that agent's turns", async () => {
    fake.script({ model: 'agent', reply: { content: 'Seu pedido 100232 foi enviado ontem.' } });
    const telecom = await turn('telecom_contas', 'Onde está meu pedido 100232?');
    expect(fake.requestsFor('judge')).toHaveLength(0);
    expect(telecom.body.answer).toBe('Seu pedido 100232 foi enviado ontem.');
    expect(telecom.named('judge.groundedness.evaluated')[0].payload).toMatchObject({ type: 'deterministic' });

    const retail = await turn('retail_orders', 'Onde está meu pedido 100232?');
    expect(fake.requestsFor('judge')).toHaveLength(1);
    expect(retail.named('judge.groundedness.evaluated')[0].payload).toMatchObject({
      type: 'llm',
      passed: false,
      enforce: true,
    });
    expect(retail.named('judge.tone.evaluated')).toEqual([]);
    expect(retail.body.answer).toBe(RETAIL_REPLACED);
  });

  it("a tool outside one agent's allowed_tools is neither offered nor run; its max_tool_steps", async () => {
    fake.script({
      model: 'agent',
      when: (r) => !hasToolMessage(r),
      reply: {
        content: null,
        tool_calls: [{ name: 'consultar_entrega', arguments: { order_id: '100232' } }],
      },
    });
    fake.script({ model: 'agent', when: hasToolMessage, reply: { content: 'Consultei a entrega.' } });

    const telecom = await turn('telecom_contas', 'Onde está meu pedido 100232?');
    // Four tool rounds (graph_agents): the answer after the first still has the tools on offer.
    const [telecomFirst, telecomSecond] = fake.requestsFor('agent');
    expect(offeredTools(telecomFirst).sort()).toEqual(['consultar_entrega', 'consultar_pedido']);
    expect(offeredTools(telecomSecond).sort()).toEqual(['consultar_entrega', 'consultar_pedido']);
    expect(telecom.named('mcp.tool_call.completed')).toEqual([
      expect.objectContaining({
        payload: expect.objectContaining({ tool_name: 'consultar_entrega', ok: true }),
      }),
    ]);
    expect(telecom.named('NOC.MCP_TOOL_FAILED')).toEqual([]);

    const before = fake.requestsFor('agent').length;
    const retail = await turn('retail_orders', 'Onde está meu pedido 100232?');
    // One tool round (its max_tool_steps): the answer after it is asked for without tools.
    const [retailFirst, retailSecond] = fake.requestsFor('agent').slice(before);
    expect(offeredTools(retailFirst)).toEqual(['consultar_pedido']);
    expect(offeredTools(retailSecond)).toEqual([]);
    expect(retail.named('mcp.tool_call.completed')).toEqual([]);
    expect(retail.named('NOC.MCP_TOOL_FAILED')).toEqual([
      expect.objectContaining({
        payload: expect.objectContaining({
          tool_name: 'consultar_entrega',
          stage: 'preparation',
          code: 'tool_not_allowed',
        }),
      }),
    ]);
  });

  it("one agent's MCP servers file sends its tool calls to its own servers", async () => {
    fake.script({
      model: 'agent',
      when: (r) => !hasToolMessage(r) && /pedido/.test(lastUserMessage(r)),
      reply: {
        content: null,
        tool_calls: [{ name: 'consultar_pedido', arguments: { order_id: '100232' } }],
      },
    });
    fake.script({ model: 'agent', when: hasToolMessage, reply: { content: 'Consultei o pedido.' } });
    const retail = await turn('retail_orders', 'Onde está meu pedido 100232?');
    expect(retail.named('mcp.tool_call.completed')).toEqual([
      expect.objectContaining({
        payload: expect.objectContaining({ tool_name: 'consultar_pedido', server: 'retail', ok: true }),
      }),
    ]);
    const outlet = await turn('retail_outlet', 'Onde está meu pedido 100232?');
    expect(outlet.named('NOC.MCP_TOOL_FAILED')).toEqual([
      expect.objectContaining({
        payload: expect.objectContaining({
          tool_name: 'consultar_pedido',
          server: 'retail',
          stage: 'execution',
          error: MCP_UNAVAILABLE_ERROR,
        }),
      }),
    ]);
    // Its file declares no telecom server: a telecom tool is refused before any call.
    fake.script({
      model: 'agent',
      when: (r) => !hasToolMessage(r) && /fatura/.test(lastUserMessage(r)),
      reply: {
        content: null,
        tool_calls: [{ name: 'consultar_fatura', arguments: { msisdn: '11999990001' } }],
      },
    });
    const telecomTool = await turn('retail_outlet', 'Minha fatura veio alta, número 11 99999-0001');
    expect(telecomTool.body.route).toBe('billing_agent');
    expect(telecomTool.named('NOC.MCP_TOOL_FAILED')).toEqual([
      expect.objectContaining({
        payload: expect.objectContaining({
          tool_name: 'consultar_fatura',
          stage: 'preparation',
          code: 'not_configured',
        }),
      }),
    ]);
  });

  it("one agent's tool policy runs a transactional tool without the confirmation the other asks for", async () => {
    fake.script({
      model: 'agent',
      when: (r) => !hasToolMessage(r) && /cancelar/.test(lastUserMessage(r)),
      reply: (request) => ({
        content: null,
        tool_calls: [
          { name: 'cancelar_pedido', arguments: { order_id: /\d{6}/.exec(lastUserMessage(request))?.[0] } },
        ],
      }),
    });
    fake.script({ model: 'agent', reply: { content: 'Pedido cancelado.' } });

    const telecom = await turn('telecom_contas', 'Quero cancelar o pedido 100234');
    expect(telecom.body).toMatchObject({ next_state: 'WAITING_ORDER_CONFIRMATION' });
    expect(telecom.named('IC.TRANSACTION_CONFIRMATION_REQUIRED')).toHaveLength(1);
    expect(telecom.named('IC.TRANSACTION_EXECUTED')).toEqual([]);

    const retail = await turn('retail_orders', 'Quero cancelar o pedido 100231');
    expect(retail.named('IC.TRANSACTION_CONFIRMATION_REQUIRED')).toEqual([]);
    expect(retail.named('IC.TRANSACTION_EXECUTED')).toHaveLength(1);
    expect(retail.body.next_state).not.toBe('WAITING_ORDER_CONFIRMATION');
  });

  const readiness = async () => {
    const res = await app.get<Readiness>('/health/ready');
    // Neither a down MCP server nor a degraded guardrail model takes the replica out of service.
    expect(res.status).toBe(200);
    return res.body.details;
  };

  it("readiness lists each routing file's agents and model, and every agent's MCP servers once", async () => {
    const { config, mcp: servers } = await readiness();
    const routing = {
      mode: 'router',
      llm_profile: 'router',
      resolved_profile: 'router',
      model: 'router',
    };
    expect(config.routing).toEqual([
      { ...routing, agents: ['telecom_contas', 'retail_outlet'], intents: 5 },
      { ...routing, agents: ['retail_orders'], intents: 3 },
      {
        ...routing,
        agents: ['retail_express'],
        intents: 3,
        llm_profile: 'express_router',
        resolved_profile: 'default',
        model: 'default',
      },
    ]);

    // A turn of each: the deployment's retail server answers, the outlet's own does not.
    fake.script({
      model: 'agent',
      when: (r) => !hasToolMessage(r),
      reply: { content: null, tool_calls: [{ name: 'consultar_pedido', arguments: { order_id: '100232' } }] },
    });
    fake.script({ model: 'agent', when: hasToolMessage, reply: { content: 'Consultei o pedido.' } });
    await turn('retail_orders', 'Onde está meu pedido 100232?');
    await turn('retail_outlet', 'Onde está meu pedido 100232?');

    const after = (await readiness()).mcp;
    expect(after.enabled).toBe(true);
    const shared = { transport: 'streamable_http', target: mcp.url, enabled: true };
    const global = [join(dir, 'mcp_servers.yaml')];
    expect(after.servers).toEqual([
      expect.objectContaining({
        ...shared,
        name: 'telecom',
        agents: ['telecom_contas', 'retail_orders'],
        files: global,
      }),
      expect.objectContaining({
        ...shared,
        name: 'retail',
        agents: ['telecom_contas', 'retail_orders', 'retail_express'],
        files: [...global, join(dir, 'policies/express_mcp.yaml')],
        state: 'up',
        last_success_at: expect.any(String),
      }),
      expect.objectContaining({
        name: 'retail',
        target: `http://127.0.0.1:${downPort}/mcp`,
        agents: ['retail_outlet'],
        files: [join(dir, 'policies/outlet_mcp.yaml')],
        state: 'down',
        last_failure: {
          at: expect.any(String),
          cause: 'unavailable',
          error: expect.stringContaining('MCP server retail unreachable'),
        },
      }),
    ]);
    expect(servers.servers).toHaveLength(3);
  });

  it("the admin stats count each agent's router calls by its own routing file's profile", async () => {
    const tenant = `pas${Date.now().toString(36)}`;
    const from = new Date(Date.now() - 1000).toISOString();
    fake.script({
      model: 'default',
      reply: { json: { intent: 'retail_order_tracking', confidence: 0.95, reason: 'scripted' } },
    });
    fake.script({ model: 'agent', reply: { content: 'Certo.' } });
    // No keyword of either catalogue: each agent's router model decides.
    for (const agentId of ['telecom_contas', 'retail_express']) {
      const res = await app.post('/v1/channels/web/messages', {
        tenant_id: tenant,
        agent_id: agentId,
        session_id: uniqueId(agentId),
        text: 'Tenho uma questão',
      });
      expect(res.status).toBe(200);
    }
    expect(fake.requestsFor('router')).toHaveLength(1);
    expect(fake.requestsFor('default')).toHaveLength(1);

    const to = new Date(Date.now() + 1000).toISOString();
    const stats = await app.get<{ router_calls: number; profiles: { profile: string; calls: number }[] }>(
      `/v1/admin/stats?tenant_id=${tenant}&from=${from}&to=${to}`,
    );
    expect(stats.status).toBe(200);
    expect(stats.body.router_calls).toBe(2);
    expect(stats.body.profiles).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ profile: 'express_router', calls: 1 }),
        expect.objectContaining({ profile: 'router', calls: 1 }),
      ]),
    );
  });

  it("an agent's guardrails file has its own guardrail-model health, after its own degraded_after_failures", async () => {
    fake.reset();
    fake.script({ model: 'guardrail', reply: { status: 500, rawBody: 'overloaded' } });
    fake.script({ model: 'agent', reply: { content: 'Seu pedido está a caminho.' } });
    const retail = await turn('retail_orders', 'Onde está meu pedido 100232?');
    expect(retail.body).toMatchObject({ blocked: true });

    const degraded = (await readiness()).guardrail_model;
    // Readiness says degraded when any file's model is; beside it, guardrails.yaml's own counters.
    expect(degraded).toMatchObject({ degraded: true, consecutive_failures: 0, degraded_after_failures: 3 });
    expect(degraded.files).toEqual([
      expect.objectContaining({
        path: join(dir, 'guardrails.yaml'),
        agents: ['telecom_contas', 'retail_outlet', 'retail_express'],
        llm_profile: 'guardrail',
        degraded: false,
        consecutive_failures: 0,
      }),
      expect.objectContaining({
        path: join(dir, 'policies/retail_guardrails.yaml'),
        agents: ['retail_orders'],
        llm_profile: 'guardrail',
        degraded: true,
        consecutive_failures: 1,
        degraded_after_failures: 1,
        last_failure: expect.objectContaining({ cause: 'http_error' }),
      }),
    ]);

    fake.reset();
    fake.script(GUARDRAILS_ALLOW);
    fake.script({ model: 'agent', reply: { content: 'Seu pedido está a caminho.' } });
    expect((await turn('retail_orders', 'Onde está meu pedido 100232?')).body.blocked).toBe(false);
    expect((await readiness()).guardrail_model).toMatchObject({ degraded: false });
  });
});

describe('per-agent policy files at start-up (e2e)', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  const startupError = async (
    agents: Record<string, Record<string, string>>,
    files: Record<string, unknown>,
  ) => {
    const dir = configDir(agents, files);
    dirs.push(dir);
    const error = await startTestApp({ env: { CONFIG_DIR: dir } }).then(
      () => null,
      (e: unknown) => e as Error,
    );
    return { dir, message: error?.message ?? '' };
  };

  it("a bad agent's guardrails file fails the start naming the file and the key path", async () => {
    const { dir, message } = await startupError(
      { retail_orders: { guardrails: 'policies/g.yaml' } },
      { 'policies/g.yaml': { output: [{ code: 'CMP', params: { forbidden: [{ id: 'x' }] } }] } },
    );
    expect(message).toContain(join(dir, 'policies/g.yaml'));
    expect(message).toContain('output[0].params.forbidden[0].pattern');
  });

  it('a start that fails after the database opened lets the process end at once', async () => {
    const dir = configDir(
      { telecom_contas: { judges: 'policies/j.yaml' } },
      { 'policies/j.yaml': { sample_rate: 2 } },
    );
    dirs.push(dir);
    const database = await testDatabase();
    const env: Record<string, string> = { CONFIG_DIR: dir, LOG_LEVEL: 'silent' };
    for (const [key, value] of Object.entries({ ...process.env, ...database.env })) {
      if (value !== undefined && !(key in env)) env[key] = value;
    }
    // No process.exit: the child ends only when nothing the failed start opened keeps it alive (an idle pool
    // connection would, until the pool's 10 s idle timeout).
    const script =
      `require(${JSON.stringify(compiledEntry('apps/agent-runtime/src/bootstrap.ts'))})` +
      '.createApp().catch((e) => console.error(e.message))';
    const child = spawn(process.execPath, ['-e', script], {
      cwd: REPO_ROOT,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    let failedAt = 0;
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      if (stderr.includes('policies/j.yaml')) failedAt ||= Date.now();
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    database.release();
    expect(stderr).toContain(join(dir, 'policies/j.yaml'));
    expect(code).toBe(0);
    expect(Date.now() - failedAt).toBeLessThan(6000);
  }, 60000);

  it("a bad agent's judges file fails the start naming the file and the key path", async () => {
    const { dir, message } = await startupError(
      { telecom_contas: { judges: 'policies/j.yaml' } },
      { 'policies/j.yaml': { sample_rate: 2 } },
    );
    expect(message).toContain(join(dir, 'policies/j.yaml'));
    expect(message).toContain('sample_rate');
  });
});
