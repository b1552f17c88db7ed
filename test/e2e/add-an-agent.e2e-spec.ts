import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { parse, stringify } from 'yaml';
import { z } from 'zod/v3';
import {
  FakeLlmServer,
  GUARDRAILS_ALLOW,
  hasToolMessage,
  lastUserMessage,
  offeredTools,
  requestText,
} from '../support/fake-llm';
import { REPO_ROOT, startTestApp, TestApp, uniqueId } from '../support/test-app';

/**
 * docs/how-to-add-an-agent.md, done as written: its blocks applied to a copy of config/, the service started over
 * HTTP with the scripted model, its two messages sent. The first reaches the fifth agent, which calls its tool;
 * the follow-up stays with it without a router call.
 */

const HOW_TO = readFileSync(join(REPO_ROOT, 'docs', 'how-to-add-an-agent.md'), 'utf8');

/** The "Add to `my-config/<file>`:" and "Create `my-config/<file>`:" blocks of the how-to, in order. */
function configBlocks(): { action: 'Add to' | 'Create'; file: string; text: string }[] {
  return [...HOW_TO.matchAll(/^(Add to|Create) `my-config\/([^`]+)`:\n\n```\w+\n([\s\S]*?)```/gm)].map(
    ([, action, file, text]) => ({ action: action as 'Add to' | 'Create', file, text }),
  );
}

/** An "Add to" block extends each section it shows: a list gets its items, a map its keys. */
function addTo(dir: string, file: string, block: string): void {
  const path = join(dir, file);
  const document = parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  for (const [section, entries] of Object.entries(parse(block) as Record<string, unknown>)) {
    const current = document[section];
    document[section] = Array.isArray(current)
      ? [...(current as unknown[]), ...(entries as unknown[])]
      : { ...(current as Record<string, unknown>), ...(entries as Record<string, unknown>) };
  }
  writeFileSync(path, stringify(document));
}

/** The request bodies of the how-to's curl commands. */
function curlBodies(): Record<string, unknown>[] {
  return [...HOW_TO.matchAll(/\/v1\/channels\/web\/messages[^\n]*\\\n\s*-d '([^']+)'/g)].map(
    ([, body]) => JSON.parse(body) as Record<string, unknown>,
  );
}

interface ToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** The loyalty MCP server of the how-to: `consultar_pontos` over Streamable HTTP, recording every call. */
async function loyaltyServer(calls: ToolCall[]): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body: unknown = JSON.parse(await readBody(req));
      const mcp = new McpServer({ name: 'loyalty', version: '1.0.0' });
      mcp.registerTool(
        'consultar_pontos',
        {
          description: "Returns the customer's loyalty points balance and when the points expire.",
          inputSchema: { msisdn: z.string() },
        },
        ({ msisdn }) => {
          calls.push({ name: 'consultar_pontos', arguments: { msisdn } });
          const balance = { msisdn, points: 1250, expires_on: '2027-03-31' };
          return {
            content: [{ type: 'text', text: JSON.stringify(balance) }],
            structuredContent: balance,
          };
        },
      );
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      res.on('close', () => {
        void transport.close();
        void mcp.close();
      });
      await mcp.connect(transport);
      await transport.handleRequest(req, res, body);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

interface TurnBody {
  answer: string;
  route: string;
  intent: string;
  active_agent: string;
  route_bypassed: boolean;
  route_decision: { method: string };
  unavailable: unknown[];
}

describe('how to add an agent (docs/how-to-add-an-agent.md)', () => {
  const calls: ToolCall[] = [];
  let dir: string;
  let fake: FakeLlmServer;
  let loyalty: Awaited<ReturnType<typeof loyaltyServer>>;
  let app: TestApp;

  beforeAll(async () => {
    // 1. Copy the configuration; 2–4. apply the blocks.
    dir = join(mkdtempSync(join(tmpdir(), 'add-an-agent-')), 'my-config');
    cpSync(join(REPO_ROOT, 'config'), dir, { recursive: true });
    const blocks = configBlocks();
    expect(blocks.map(({ action, file }) => `${action} ${file}`)).toEqual([
      'Add to mcp_servers.yaml',
      'Add to tools.yaml',
      'Create prompts/loyalty_agent.md',
      'Add to agents.yaml',
      'Add to routing.yaml',
    ]);
    for (const { action, file, text } of blocks) {
      if (action === 'Create') {
        mkdirSync(dirname(join(dir, file)), { recursive: true });
        writeFileSync(join(dir, file), text);
      } else {
        addTo(dir, file, text);
      }
    }

    loyalty = await loyaltyServer(calls);
    fake = await FakeLlmServer.start();
    fake.script(GUARDRAILS_ALLOW);
    fake.script({
      model: 'route_continuity',
      reply: (request) =>
        lastUserMessage(request).includes('vencem')
          ? { json: { decision: 'CONTINUE', confidence: 0.96, reason: 'asks about the same points' } }
          : { json: { decision: 'ROUTE', confidence: 0.9, reason: 'a new subject' } },
    });
    fake.script({
      model: 'agent',
      when: (request) => !hasToolMessage(request),
      reply: { content: null, tool_calls: [{ name: 'consultar_pontos', arguments: {} }] },
    });
    fake.script({
      model: 'agent',
      when: hasToolMessage,
      reply: (request) => ({
        content: lastUserMessage(request).includes('vencem')
          ? 'Seus pontos vencem em 31/03/2027.'
          : 'Você tem 1.250 pontos de fidelidade.',
      }),
    });
    // 5. Start with CONFIG_DIR=my-config (the loyalty server's URL is the test's own).
    app = await startTestApp({
      fakeLlm: fake,
      env: {
        CONFIG_DIR: dir,
        MCP_SERVER_LOYALTY_URL: loyalty.url,
        ENABLE_ROUTE_STICKINESS: 'true',
        RAG_INGEST_ON_START: 'false',
      },
    });
  }, 240000);

  afterAll(async () => {
    await app?.close();
    await loyalty?.close();
    await fake?.stop();
    rmSync(dirname(dir), { recursive: true, force: true });
  }, 60000);

  it('routes a turn to the fifth agent, which uses its tool, and keeps the follow-up with it', async () => {
    const session = uniqueId('loyalty');
    const [first, followUp] = curlBodies();
    expect(first.text).toBe('Quantos pontos de fidelidade eu tenho?');

    const one = await app.post<TurnBody>('/v1/channels/web/messages', { ...first, session_id: session });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({
      route: 'loyalty_agent',
      intent: 'loyalty_points',
      active_agent: 'loyalty_agent',
      route_bypassed: false,
      route_decision: { method: 'keyword' },
      answer: 'Você tem 1.250 pontos de fidelidade.',
      unavailable: [],
    });
    // Its prompt, its tool only, the number from the message metadata (`map`).
    const [asked] = fake.requestsFor('agent');
    expect(requestText(asked)).toContain('Você é o agente do programa de fidelidade');
    expect(offeredTools(asked)).toEqual(['consultar_pontos']);
    expect(calls).toEqual([{ name: 'consultar_pontos', arguments: { msisdn: '11999990001' } }]);

    const two = await app.post<TurnBody>('/v1/channels/web/messages', { ...followUp, session_id: session });
    expect(two.status).toBe(200);
    expect(two.body).toMatchObject({
      route: 'loyalty_agent',
      active_agent: 'loyalty_agent',
      route_bypassed: true,
      route_decision: { method: 'continuity' },
      answer: 'Seus pontos vencem em 31/03/2027.',
      unavailable: [],
    });
    expect(calls).toHaveLength(2);
    expect(fake.requestsFor('router')).toEqual([]);
  });

  it('stops the start with one line when an intent names an agent graph_agents lacks', async () => {
    const misspelt = join(dirname(dir), 'misspelt-config');
    cpSync(dir, misspelt, { recursive: true });
    const routing = parse(readFileSync(join(misspelt, 'routing.yaml'), 'utf8')) as {
      intents: { agent: string }[];
    };
    const index = routing.intents.length - 1;
    routing.intents[index].agent = 'loyality_agent';
    writeFileSync(join(misspelt, 'routing.yaml'), stringify(routing));
    const error = await startTestApp({ env: { CONFIG_DIR: misspelt } }).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(error?.message.split('\n')).toEqual([
      `Invalid config file ${join(misspelt, 'routing.yaml')}:`,
      `  - intents[${index}].agent: "loyality_agent" is not a graph agent of agents.yaml ` +
        '(billing_agent, product_agent, orders_agent, support_agent, loyalty_agent)',
    ]);
  });
});
