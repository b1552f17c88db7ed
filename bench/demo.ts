/**
 * npm run demo — plays the example conversations (Portuguese table and an English one) against the service with
 * the built-in demo model `npm start` uses when no model is configured, and the reference MCP server, and prints
 * each turn's decision. Its embedded database is a directory of its own: it runs while `npm start` does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadYamlFile, routingFileSchema } from '@agent/config';
import { routerOutput } from '@agent/routing';
import { DemoModel } from '../apps/agent-runtime/src/quick-start/demo-model';
import { DemoModelServer } from '../apps/agent-runtime/src/quick-start/demo-model.server';
import { ReferenceMcpProcess } from '../test/support/reference-mcp';
import { startTestApp } from '../test/support/test-app';
import { ScriptedConversation, SEED_TABLE_EN, SEED_TABLE_PT } from './conversations';
import { REPO_ROOT } from './lib';

interface DemoResponse {
  turn: number;
  answer: string;
  route: string;
  route_bypassed: boolean;
  session_control: string | null;
  route_decision?: { method?: string; intent?: string };
  continuity_signal?: {
    decision?: string;
    confidence?: number;
    accepted?: boolean;
    fallback_reason?: string | null;
  } | null;
}

/** The customer of the reference MCP server's sample data, as a channel would identify them. */
const METADATA = { msisdn: '5511999990001' };

async function main(): Promise<void> {
  const conversations: ScriptedConversation[] = [SEED_TABLE_PT, SEED_TABLE_EN];
  const routing = loadYamlFile(join(REPO_ROOT, 'config', 'routing.yaml'), routingFileSchema);
  const model = await DemoModelServer.start(new DemoModel(routing.intents, 'pt'));
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-runtime-demo-'));
  console.log('Agent runtime demo: semantic route stickiness and global session control.');
  console.log(
    'NOTE: the model is the built-in DEMO MODEL (apps/agent-runtime/src/quick-start/demo-model.ts), the one npm start',
  );
  console.log(
    'uses without a configured model: it follows the routing keywords and a few words, it is not a language model.\n',
  );
  const mcp = await ReferenceMcpProcess.start({ dataDir: join(dataDir, 'reference-mcp') });
  const app = await startTestApp({
    env: {
      DATABASE_URL: undefined,
      DATA_DIR: join(dataDir, 'service'),
      ENABLE_ROUTE_STICKINESS: 'true',
      LLM_PROFILES_PATH: join(REPO_ROOT, 'config', 'llm_profiles.yaml'),
      LLM_PROVIDER: 'demo',
      LLM_BASE_URL: model.baseUrl,
      LLM_API_KEY: undefined,
      ...mcp.appEnv,
      HUMAN_HANDOFF_MESSAGE: process.env.HUMAN_HANDOFF_MESSAGE,
      END_SESSION_MESSAGE: process.env.END_SESSION_MESSAGE,
    },
  });
  try {
    for (const conversation of conversations) {
      console.log(`=== conversation ${conversation.id} (agent_id ${conversation.agentId}) ===`);
      const sessionId = `demo-${conversation.id}-${Date.now().toString(36)}`;
      for (const scripted of conversation.turns) {
        const routerBefore = model.requestsFor(routerOutput.name);
        const res = await app.post<DemoResponse>('/v1/channels/web/messages', {
          tenant_id: 'demo',
          agent_id: conversation.agentId,
          session_id: sessionId,
          metadata: METADATA,
          text: scripted.text,
        });
        const routerCalled = model.requestsFor(routerOutput.name) > routerBefore;
        const signal = res.body.continuity_signal;
        console.log(`turn ${res.body.turn}: "${scripted.text}"`);
        console.log(
          `  decision ${signal?.decision ?? '-'} (confidence ${signal?.confidence ?? '-'}, ${signal?.accepted ? 'accepted' : `not accepted: ${signal?.fallback_reason ?? '-'}`})` +
            ` → route ${res.body.route} [method ${res.body.route_decision?.method ?? '-'}, intent ${res.body.route_decision?.intent ?? '-'}]`,
        );
        console.log(
          `  bypassed ${res.body.route_bypassed} · router LLM called: ${routerCalled ? 'yes' : 'no'} · session_control ${res.body.session_control ?? '-'}`,
        );
        console.log(`  answer: ${res.body.answer}\n`);
      }
    }
    const endedSession = `demo-ended-${Date.now().toString(36)}`;
    const send = (text: string) =>
      app.post<DemoResponse>('/v1/channels/web/messages', {
        tenant_id: 'demo',
        agent_id: 'telecom_contas',
        session_id: endedSession,
        text,
      });
    await send('obrigado, pode encerrar');
    const requestsBefore = model.requests();
    const rejected = await send('oi, ainda está aí?');
    console.log('A message after END_SESSION is rejected without any LLM call, router, agent or tool:');
    console.log(
      `  "oi, ainda está aí?" → ${rejected.body.answer} (LLM requests during the turn: ${model.requests() - requestsBefore})`,
    );
  } finally {
    await app.close();
    await mcp.dispose();
    await model.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
