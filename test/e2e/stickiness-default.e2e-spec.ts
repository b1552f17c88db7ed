import { join } from 'node:path';
import { spawnAppProcess, stopAppProcess, waitUntilReady } from '../support/app-process';
import {
  FakeLlmServer,
  guardrailChecks,
  guardrailVerdict,
  lastUserMessage,
  requestText,
} from '../support/fake-llm';
import { freePort } from '../support/reference-mcp';
import { REPO_ROOT, startTestApp, TestApp, testDatabase, TestDatabase, uniqueId } from '../support/test-app';

const SHIPPED_PROFILES = join(REPO_ROOT, 'config', 'llm_profiles.yaml');

/** The classifier's requests: the small model asked for a continuity label. */
const classifierRequests = (fake: FakeLlmServer) =>
  fake.requests.filter((request) => /Classify how a customer-service platform/.test(requestText(request)));

/** The JSON log lines of a process's output (pino: one object per line). */
function logLines(output: string): { level: number; msg: string }[] {
  return output.split('\n').flatMap((line) => {
    try {
      const parsed = JSON.parse(line) as { level?: unknown; msg?: unknown };
      return typeof parsed.level === 'number'
        ? [{ level: parsed.level, msg: typeof parsed.msg === 'string' ? parsed.msg : '' }]
        : [];
    } catch {
      return [];
    }
  });
}

/** ENABLE_ROUTE_STICKINESS unset: stickiness runs wherever the classifier's profile has a model. */
describe('route stickiness by default', () => {
  describe('with no model configured', () => {
    let fake: FakeLlmServer;
    let port: number;
    let database: TestDatabase;
    let app: ReturnType<typeof spawnAppProcess>;

    beforeAll(async () => {
      fake = await FakeLlmServer.start();
      port = await freePort();
      database = await testDatabase();
      const closed = `http://127.0.0.1:${await freePort()}/mcp`;
      app = spawnAppProcess('apps/agent-runtime/src/main.ts', [], {
        ...Object.fromEntries(
          Object.entries(database.env).filter((entry): entry is [string, string] => entry[1] !== undefined),
        ),
        PORT: String(port),
        LOG_LEVEL: 'info',
        // An endpoint but no model: the shipped profiles name none, so no stage can call one.
        LLM_BASE_URL: fake.baseUrl,
        LLM_PROFILES_PATH: SHIPPED_PROFILES,
        ENABLE_ROUTE_STICKINESS: '',
        MCP_SERVER_TELECOM_URL: closed,
        MCP_SERVER_RETAIL_URL: closed,
      });
      await waitUntilReady(app, port);
    }, 240000);

    afterAll(async () => {
      await stopAppProcess(app);
      await fake.stop();
      database.release();
    });

    it('makes no classifier call, says so once at start-up and logs nothing about it per turn', async () => {
      const logBefore = app.output();
      const session = uniqueId('nomodel');
      for (const text of ['Qual é o meu plano?', 'o que está incluso?', 'quero falar com uma pessoa']) {
        const response = await fetch(`http://127.0.0.1:${port}/v1/channels/web/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ tenant_id: 'acme', agent_id: 'telecom_contas', session_id: session, text }),
        });
        const body = (await response.json()) as { route_bypassed?: boolean; continuity_signal?: unknown };
        expect(response.status).toBe(200);
        expect(body.route_bypassed).toBe(false);
        expect(body.continuity_signal).toBeNull();
      }
      expect(fake.requests).toHaveLength(0);
      const startLines = logLines(logBefore).filter((line) => /Route stickiness/.test(line.msg));
      expect(startLines.map((line) => line.msg)).toEqual([
        expect.stringMatching(
          /^Route stickiness off: the classifier profile "route_continuity" has no model/,
        ),
      ]);
      const turnLog = logLines(app.output().slice(logBefore.length));
      expect(turnLog.filter((line) => /continuity|classifier|stickiness/i.test(line.msg))).toEqual([]);
      // The missing model is said once, at start-up; no stage warns about it on each turn.
      expect(logLines(logBefore).filter((line) => /^No model is configured/.test(line.msg))).toHaveLength(1);
      // (The MCP servers are closed on purpose: their warnings are about them, not the model.)
      const warnings = turnLog.filter((line) => line.level >= 40 && !/MCP server|tools\/list/.test(line.msg));
      expect(warnings).toEqual([]);
    });
  });

  describe('with a model configured', () => {
    let fake: FakeLlmServer;
    let app: TestApp;

    beforeAll(async () => {
      fake = await FakeLlmServer.start();
      fake.script({
        model: 'small-y',
        when: (request) => guardrailChecks(request).length > 0,
        reply: (request) => guardrailVerdict(request),
      });
      fake.script({
        model: 'small-y',
        when: (request) => /Classify how a customer-service platform/.test(requestText(request)),
        reply: (request) =>
          lastUserMessage(request).includes('o que está incluso?')
            ? { json: { decision: 'CONTINUE', confidence: 0.97, reason: 'follow-up' } }
            : { json: { decision: 'ROUTE', confidence: 0.95, reason: 'new subject' } },
      });
      fake.script({
        model: 'small-y',
        reply: { json: { intent: 'product_services_information', confidence: 0.95, reason: 'plan' } },
      });
      fake.script({ model: 'big-x', reply: { content: 'Seu plano inclui 50GB.' } });
      const closed = `http://127.0.0.1:${await freePort()}/mcp`;
      app = await startTestApp({
        fakeLlm: fake,
        env: {
          LLM_PROFILES_PATH: SHIPPED_PROFILES,
          LLM_MODEL: 'big-x',
          LLM_SMALL_MODEL: 'small-y',
          ENABLE_ROUTE_STICKINESS: undefined,
          ROUTE_STICKINESS_STRATEGY: undefined,
          MCP_SERVER_TELECOM_URL: closed,
          MCP_SERVER_RETAIL_URL: closed,
        },
      });
    }, 240000);

    afterAll(async () => {
      await app?.close();
      await fake?.stop();
    });

    it('classifies every turn and keeps a follow-up with the active agent without the router', async () => {
      const session = uniqueId('default');
      const send = (text: string) =>
        app.post<{ route: string; route_bypassed: boolean; route_decision: { method: string } }>(
          '/v1/channels/web/messages',
          { tenant_id: 'acme', agent_id: 'telecom_contas', session_id: session, text },
        );
      const first = await send('Qual é o meu plano?');
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ route: 'product_agent', route_bypassed: false });
      const follow = await send('o que está incluso?');
      expect(follow.body).toMatchObject({ route: 'product_agent', route_bypassed: true });
      expect(follow.body.route_decision.method).toBe('continuity');
      expect(classifierRequests(fake)).toHaveLength(2);
    });
  });
});
