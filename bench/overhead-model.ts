/**
 * The scripted model of bench:overhead, in its own process so its CPU is not the runtime's. It answers every
 * stage instantly with a valid reply (and token usage), reports its port over IPC and stops with its parent.
 */
import { FakeLlmServer, guardrailVerdict } from '../test/support/fake-llm';

async function main(): Promise<void> {
  const fake = await FakeLlmServer.start();
  const usage = { prompt_tokens: 180, completion_tokens: 12 };
  fake.script({
    model: 'agent',
    reply: { content: 'Sua fatura deste mês está disponível no aplicativo.', usage },
  });
  fake.script({
    model: 'router',
    reply: { json: { intent: 'billing_invoice_explanation', confidence: 0.9, reason: 'bench' }, usage },
  });
  fake.script({
    model: 'route_continuity',
    reply: { json: { decision: 'CONTINUE', confidence: 0.97, reason: 'same subject' }, usage },
  });
  fake.script({ model: 'guardrail', reply: (request) => ({ ...guardrailVerdict(request), usage }) });
  fake.script({ model: 'judge', reply: { json: { score: 1, passed: true, reason: 'bench' }, usage } });
  fake.setFallback({ json: {}, usage });
  // Only the count of requests matters here; keeping every request would grow without bound.
  let served = 0;
  setInterval(() => (served += fake.requests.splice(0).length), 1000).unref();
  process.on('message', (message: unknown) => {
    if (message === 'model-requests') process.send?.({ modelRequests: served + fake.requests.length });
  });
  const stop = () => void fake.stop().finally(() => process.exit(0));
  process.on('disconnect', stop);
  process.on('SIGTERM', stop);
  process.send?.({ port: Number(new URL(fake.baseUrl).port) });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
