/**
 * npm run bench:streaming — the default mix of bench:stickiness (stickiness on, the product's defaults), each
 * turn once as JSON and once streamed (`Accept: text/event-stream`), against the scripted model with the assumed
 * latencies: the agent's latency is its time to first token, then it writes its answer at BENCH_TOKEN_MS per
 * four-character token (a non-streamed call answers when the last token is written). Reports the time to the
 * first released text against the agent's own first token, and the final event against the JSON turn.
 * Options (env): BENCH_CONVERSATIONS (17: 104 turns), BENCH_FOLLOWUPS (0.5), BENCH_TOKEN_MS (15), BENCH_SCALE (1),
 * BENCH_LATENCY_<PROFILE>=median:p95 (ms), DATABASE_URL. Each turn runs as JSON and streamed side by side (two
 * conversations in step), with the same agent first-token draw for both, and one such pair at a time: the
 * streamed run's agent call is the one streaming model call in flight, so its first token is the turn's.
 */
import { join } from 'node:path';
import { FakeLlmServer, FakeReply, lastUserMessage } from '../test/support/fake-llm';
import { startTestApp, TestApp } from '../test/support/test-app';
import { scriptIndex } from './conversations';
import { consoleTable, ensureDatabase, percentile, REPO_ROOT, round, runBench, writeReport } from './lib';
import { latencyProfiles, prng, scriptFakeLlm } from './scripted-llm';
import { generateTraffic } from './traffic';

/** A chat answer of a realistic length (about 80 tokens), naming the customer's message. */
function agentAnswer(message: string): string {
  return (
    `Sobre "${message.slice(0, 40)}": verifiquei sua conta e encontrei o que precisa. O valor desta fatura ` +
    'inclui o pacote de dados extra contratado no dia 5 e a mensalidade do plano, com vencimento no dia 10. ' +
    'Se quiser, posso detalhar cada item da cobrança ou enviar a segunda via por e-mail.'
  );
}

interface Sample {
  /** From sending the request to the first released text (streamed) or the body (JSON). */
  first_ms: number;
  /** From sending the request to the final event (streamed) or the body (JSON). */
  final_ms: number;
  /** From the agent model's first token to the first released text reaching the client. */
  behind_model_ms: number | null;
  /** From the agent model's last token (its answer, unstreamed) to the final event or the body. */
  after_model_ms: number | null;
}

/** One streamed turn: when the first delta and the final event arrived (performance.now()). */
async function streamTurn(
  app: TestApp,
  body: unknown,
): Promise<{ firstDelta: number | null; final: number }> {
  const response = await fetch(`${app.baseUrl}/v1/channels/web/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify(body),
  });
  const reader = response.body?.pipeThrough(new TextDecoderStream()).getReader();
  let firstDelta: number | null = null;
  let text = '';
  while (reader) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
    if (firstDelta === null && text.includes('event: answer.delta')) firstDelta = performance.now();
  }
  if (!text.includes('event: turn.completed')) {
    throw new Error(`the stream ended without its final event: ${text}`);
  }
  return { firstDelta, final: performance.now() };
}

async function main(): Promise<void> {
  if (process.env.DATABASE_URL) await ensureDatabase(process.env.DATABASE_URL);
  const scale = Number(process.env.BENCH_SCALE ?? '1');
  const tokenMs = Number(process.env.BENCH_TOKEN_MS ?? '15');
  const count = Number(process.env.BENCH_CONVERSATIONS ?? '17');
  const followUps = Number(process.env.BENCH_FOLLOWUPS ?? '0.5');
  const conversations = generateTraffic({ conversations: count, followUps });
  const latencies = latencyProfiles(scale);
  const fake = await FakeLlmServer.start();
  fake.streaming = { firstTokenMs: 0, tokenIntervalMs: tokenMs, chunkChars: 4 };
  // Earlier scripts win: the agent's answer is paced here, every other stage as bench:stickiness scripts it.
  const random = prng(7);
  const agent = latencies.agent;
  const sigma = Math.log(agent.p95 / agent.median) / 1.645;
  // The JSON and the streamed run of a turn get the same first token: the first of the two calls draws it.
  const drawn = new Map<string, number>();
  const firstTokenFor = (message: string): number => {
    const shared = drawn.get(message);
    if (shared !== undefined) {
      drawn.delete(message);
      return shared;
    }
    const z = Math.sqrt(-2 * Math.log(random() || 1e-9)) * Math.cos(2 * Math.PI * random());
    const firstToken = Math.round(agent.median * Math.exp(sigma * z));
    drawn.set(message, firstToken);
    return firstToken;
  };
  fake.script({
    model: 'agent',
    reply: (request): FakeReply => {
      const content = agentAnswer(lastUserMessage(request));
      const firstToken = firstTokenFor(lastUserMessage(request));
      const writing = Math.ceil(content.length / 4) * tokenMs;
      return { content, delayMs: request.body.stream === true ? firstToken : firstToken + writing };
    },
  });
  scriptFakeLlm(fake, scriptIndex(conversations), latencies);
  const app = await startTestApp({
    fakeLlm: fake,
    env: {
      ENABLE_ROUTE_STICKINESS: 'true',
      LLM_PROFILES_PATH: join(REPO_ROOT, 'bench', 'config', 'llm_profiles.yaml'),
      RATE_LIMIT_PER_MINUTE: '1000000',
    },
  });
  const runTag = `run${Date.now().toString(36)}`;
  const turns = conversations.reduce((n, c) => n + c.turns.length, 0);
  console.log(
    `bench:streaming — ${count} conversations (${turns} turns, ${Math.round(followUps * 100)}% follow-ups), each turn as JSON and streamed side by side, one pair at a time; token every ${tokenMs} ms`,
  );
  const json: Sample[] = [];
  const streamed: Sample[] = [];
  /** Streamed final event minus JSON body, per turn (the same turn, side by side). */
  const finalDiff: number[] = [];
  /** The same, counted from each run's own agent answer: what the runtime adds after the model finished. */
  const afterModelDiff: number[] = [];
  /** When (Date.now()) the last agent call of a run since `before` finished, streamed or not. */
  const agentAnsweredAt = (before: number, streaming: boolean): number | undefined =>
    fake.requests
      .slice(before)
      .filter((request) => request.model === 'agent' && (request.body.stream === true) === streaming)
      .map((request) => request.answeredAt)
      .filter((at) => at !== undefined)
      .at(-1);
  const runJson = async (body: Record<string, string>, before: number): Promise<Sample> => {
    const sent = performance.now();
    const res = await app.post('/v1/channels/web/messages', body);
    if (res.status !== 200) throw new Error(`turn failed: ${res.status} ${JSON.stringify(res.body)}`);
    const doneAt = Date.now();
    const done = performance.now() - sent;
    const answered = agentAnsweredAt(before, false);
    return {
      first_ms: done,
      final_ms: done,
      behind_model_ms: null,
      after_model_ms: answered === undefined ? null : doneAt - answered,
    };
  };
  const runStreamed = async (body: Record<string, string>, before: number): Promise<Sample> => {
    const sent = performance.now();
    const { firstDelta, final } = await streamTurn(app, body);
    const finalAt = Date.now();
    const answered = agentAnsweredAt(before, true);
    // The one streaming model call of the pair is this turn's agent call.
    const modelFirst = fake.requests
      .slice(before)
      .filter((request) => request.body.stream === true)
      .map((request) => fake.firstTokenAt[fake.requests.indexOf(request)])
      .find((at) => at !== undefined);
    return {
      first_ms: (firstDelta ?? final) - sent,
      final_ms: final - sent,
      behind_model_ms: firstDelta !== null && modelFirst !== undefined ? firstDelta - modelFirst : null,
      after_model_ms: answered === undefined ? null : finalAt - answered,
    };
  };
  const started = performance.now();
  try {
    for (const conversation of conversations) {
      for (const scripted of conversation.turns) {
        const body = (mode: string) => ({
          tenant_id: 'bench',
          agent_id: conversation.agentId,
          session_id: `${runTag}-${mode}-${conversation.id}`,
          text: scripted.text,
        });
        const before = fake.requests.length;
        const [plain, sse] = await Promise.all([
          runJson(body('json'), before),
          runStreamed(body('sse'), before),
        ]);
        json.push(plain);
        streamed.push(sse);
        finalDiff.push(sse.final_ms - plain.final_ms);
        if (plain.after_model_ms !== null && sse.after_model_ms !== null) {
          afterModelDiff.push(sse.after_model_ms - plain.after_model_ms);
        }
      }
    }
  } finally {
    await app.close();
    await fake.stop();
  }
  const wallSeconds = Math.round((performance.now() - started) / 1000);
  const p = (values: number[], q: number) => round(percentile(values, q), 0);
  const behind = streamed.flatMap((s) => (s.behind_model_ms === null ? [] : [s.behind_model_ms]));
  const lines = [
    '# Streaming benchmark',
    '',
    `Run: ${new Date().toISOString()} · node ${process.version} · database: ${process.env.DATABASE_URL ? 'Postgres (DATABASE_URL)' : 'embedded PGlite'} · latency scale ${scale} · a token every ${tokenMs} ms`,
    '',
    `Reproduce: \`npm run bench:streaming\` (options in \`bench/streaming.ts\`). ${count} generated conversations of bench:stickiness's traffic (${turns} turns, ${Math.round(followUps * 100)}% follow-ups), stickiness on, each turn run as JSON and with \`Accept: text/event-stream\` side by side (two conversations in step, one pair at a time, ${wallSeconds} s in all); the agent's assumed latency (${agent.median}/${agent.p95} ms median/p95) is its time to first token, then it writes a ${agentAnswer('x'.repeat(40)).length}-character answer, with the same first token for both runs of a turn. Streamed turns whose answer is not released as it is written (session control, an input block) count with their final event as their first text.`,
    '',
    '| | p50 ms | p95 ms |',
    '|---|---|---|',
    `| JSON turn (body received) | ${p(
      json.map((s) => s.final_ms),
      50,
    )} | ${p(
      json.map((s) => s.final_ms),
      95,
    )} |`,
    `| streamed: first released text | ${p(
      streamed.map((s) => s.first_ms),
      50,
    )} | ${p(
      streamed.map((s) => s.first_ms),
      95,
    )} |`,
    `| streamed: final event | ${p(
      streamed.map((s) => s.final_ms),
      50,
    )} | ${p(
      streamed.map((s) => s.final_ms),
      95,
    )} |`,
    `| streamed final event minus JSON body, same turn | ${p(finalDiff, 50)} | ${p(finalDiff, 95)} |`,
    `| the same, each from its own agent answer's end (${afterModelDiff.length} turns) | ${p(afterModelDiff, 50)} | ${p(afterModelDiff, 95)} |`,
    `| first released text after the agent's first token (${behind.length} turns) | ${p(behind, 50)} | ${p(behind, 95)} |`,
    '',
  ];
  const reportPath = writeReport('streaming.md', lines.join('\n'));
  console.log(consoleTable(lines));
  console.log(`report: ${reportPath}`);
}

runBench('bench:streaming', main);
