import { mkdtempSync, cpSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeLlmServer, GUARDRAILS_ALLOW } from '../support/fake-llm';
import { embeddedDataDir } from '../support/embedded-servers';
import { REPO_ROOT, startTestApp, uniqueId } from '../support/test-app';

describe('start-up', () => {
  it('fails with one error naming every bad env variable', async () => {
    await expect(
      startTestApp({
        env: { PORT: 'abc', ROUTE_STICKINESS_CONFIDENCE_THRESHOLD: '7', HUMAN_HANDOFF_MODE: 'later' },
      }),
    ).rejects.toThrow(/HUMAN_HANDOFF_MODE[\s\S]*PORT[\s\S]*ROUTE_STICKINESS_CONFIDENCE_THRESHOLD/);
  });

  it('fails naming the YAML file and the key path of a bad value', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bad-config-'));
    cpSync(join(REPO_ROOT, 'config'), dir, { recursive: true });
    writeFileSync(
      join(dir, 'routing.yaml'),
      'router: {fallback_agent: nobody_agent}\nintents:\n  - {name: x, description: d, agent: ghost_agent, domain: t}\n',
    );
    try {
      const error = await startTestApp({ env: { CONFIG_DIR: dir } }).then(
        () => null,
        (e: unknown) => e as Error,
      );
      expect(error?.message).toContain(join(dir, 'routing.yaml'));
      expect(error?.message).toContain('router.fallback_agent');
      expect(error?.message).toContain('intents[0].agent');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses the built-in demo model in production', async () => {
    await expect(
      startTestApp({
        env: { NODE_ENV: 'production', LLM_PROVIDER: 'demo', ADMIN_API_KEYS: 'startup-admin-key' },
      }),
    ).rejects.toThrow(/NODE_ENV=production refuses LLM_PROVIDER=demo/);
  });

  it('fails naming the path of a missing config file', async () => {
    const missing = join(tmpdir(), `${uniqueId('profiles')}.yaml`);
    await expect(startTestApp({ env: { LLM_PROFILES_PATH: missing } })).rejects.toThrow(missing);
  });

  it('keeps a conversation across a restart of the embedded default', async () => {
    const fake = await FakeLlmServer.start();
    const dataDir = embeddedDataDir('restart-');
    fake.script({ model: 'agent', reply: (req) => ({ content: `resposta ${req.messages.length}` }) });
    fake.script(GUARDRAILS_ALLOW);
    fake.setFallback({ json: { intent: 'unknown', confidence: 0 } });
    const env = { DATABASE_URL: undefined, DATA_DIR: dataDir };
    const body = (text: string) => ({
      tenant_id: 'acme',
      agent_id: 'telecom_contas',
      session_id: 'restart-1',
      text,
    });
    try {
      let app = await startTestApp({ fakeLlm: fake, env });
      for (const text of ['primeira sobre a fatura', 'segunda sobre a fatura', 'terceira sobre a fatura']) {
        expect((await app.post('/v1/channels/web/messages', body(text))).status).toBe(200);
      }
      await app.close();
      app = await startTestApp({ fakeLlm: fake, env });
      const fourth = await app.post('/v1/channels/web/messages', body('quarta sobre a fatura'));
      await app.close();
      expect(fourth.body.turn).toBe(4);
      const lastAgentCall = fake.requestsFor('agent').pop();
      const contents = lastAgentCall?.messages.map((m) => m.content) ?? [];
      expect(contents).toEqual(
        expect.arrayContaining([
          'primeira sobre a fatura',
          'segunda sobre a fatura',
          'terceira sobre a fatura',
          'quarta sobre a fatura',
        ]),
      );
    } finally {
      await fake.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
