/**
 * npm run demo — plays the example conversations (Portuguese table and an English one) against the
 * service on the embedded default, with a scripted LLM, and prints each turn's decision.
 */
import { join } from 'node:path';
import { FakeLlmServer } from '../test/support/fake-llm';
import { startTestApp } from '../test/support/test-app';
import { ScriptedConversation, SEED_TABLE_EN, SEED_TABLE_PT, scriptIndex } from './conversations';
import { REPO_ROOT } from './lib';
import { latencyProfiles, scriptFakeLlm } from './scripted-llm';

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

async function main(): Promise<void> {
  const conversations: ScriptedConversation[] = [SEED_TABLE_PT, SEED_TABLE_EN];
  const fake = await FakeLlmServer.start();
  scriptFakeLlm(
    fake,
    scriptIndex(conversations),
    latencyProfiles(Number(process.env.DEMO_LATENCY_SCALE ?? '0.1')),
  );
  console.log('Agent runtime demo: semantic route stickiness and global session control.');
  console.log(
    'NOTE: the LLM is SCRIPTED (test/support/fake-llm): a local fake OpenAI-compatible server answers',
  );
  console.log(
    'each stage from the example labels of the stickiness specification. No real model is called.\n',
  );
  const app = await startTestApp({
    fakeLlm: fake,
    env: {
      DATABASE_URL: undefined,
      ENABLE_ROUTE_STICKINESS: 'true',
      LLM_PROFILES_PATH: join(REPO_ROOT, 'bench', 'config', 'llm_profiles.yaml'),
      HUMAN_HANDOFF_MESSAGE: process.env.HUMAN_HANDOFF_MESSAGE,
      END_SESSION_MESSAGE: process.env.END_SESSION_MESSAGE,
    },
  });
  try {
    for (const conversation of conversations) {
      console.log(`=== conversation ${conversation.id} (agent_id ${conversation.agentId}) ===`);
      const sessionId = `demo-${conversation.id}-${Date.now().toString(36)}`;
      for (const scripted of conversation.turns) {
        const routerBefore = fake.requestsFor('router').length;
        const res = await app.post<DemoResponse>('/v1/channels/web/messages', {
          tenant_id: 'demo',
          agent_id: conversation.agentId,
          session_id: sessionId,
          text: scripted.text,
        });
        const routerCalled = fake.requestsFor('router').length > routerBefore;
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
    const requestsBefore = fake.requests.length;
    const rejected = await send('oi, ainda está aí?');
    console.log('A message after END_SESSION is rejected without any LLM call, router, agent or tool:');
    console.log(
      `  "oi, ainda está aí?" → ${rejected.body.answer} (LLM requests during the turn: ${fake.requests.length - requestsBefore})`,
    );
  } finally {
    await app.close();
    await fake.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
