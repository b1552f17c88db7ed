import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  ConfigFileError,
  ConfigFilesService,
  loadYamlFile,
  parseEnvNamespace,
  PerAgent,
} from '@agent/config';
import type { RoutedTurnState } from '@agent/contracts';
import { EventBusService } from '@agent/observability';
import { FakeLlmServer, FakeReply } from '@agent/testing/fake-llm';
import { createTestLlm } from '@agent/testing/test-llm';
import { judgeResultOf, parametersRequestOf, toolResultOf, routedTurnStateOf } from '@agent/testing/states';
import { judgesFileSchema } from './judges.config';
import { JudgesService } from './judges.service';
import { factualTokens, groundedness, responseQuality, sentiment, tone } from './judges/deterministic';
import { buildJudgeContext, isTransactionalTurn } from './judges/evidence';

const SHIPPED = resolve(__dirname, '../../../config/judges.yaml');

let fake: FakeLlmServer;
beforeAll(async () => {
  fake = await FakeLlmServer.start();
});
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

/** `judge` is how the judge model answers (a valid passing verdict unless told). */
function harness(file: unknown, options: { random?: number; judge?: FakeReply } = {}) {
  const events: { name: string; payload: Record<string, unknown> }[] = [];
  const files = {
    load: (_n: string, schema: typeof judgesFileSchema) => schema.parse(file),
    perAgent: <T>(_field: string, global: T) => new PerAgent(global, new Map()),
  } as unknown as ConfigFilesService;
  fake.setFallback(options.judge ?? { json: { score: 0.9, passed: true, reason: 'good' } });
  const bus = {
    emit: (name: string, payload: Record<string, unknown>) => events.push({ name, payload }),
  } as unknown as EventBusService;
  const service = new JudgesService(
    files,
    createTestLlm(fake).llm,
    bus,
    parseEnvNamespace('app', {}),
    () => options.random ?? 0.5,
  );
  return { service, events };
}

const shipped = () => loadYamlFile(SHIPPED, judgesFileSchema);
const answered = routedTurnStateOf({
  user_text: 'Quanto ficou minha fatura de março?',
  route: 'billing_agent',
  answer: 'Sua fatura de março ficou em R$ 99,90, com vencimento em 10/04.',
  mcp_results: [toolResultOf({ result: { valor: 'R$ 99,90', vencimento: '10/04' } })],
});

describe('deterministic judges (Portuguese and English)', () => {
  const ctx = (state: RoutedTurnState) => buildJudgeContext(state);

  it('response_quality: empty, very short and placeholder answers score low', () => {
    expect(responseQuality(ctx(routedTurnStateOf({ answer: '' }))).score).toBe(0);
    expect(responseQuality(ctx(routedTurnStateOf({ answer: 'Ok.' }))).score).toBeLessThan(0.7);
    expect(
      responseQuality(ctx(routedTurnStateOf({ answer: 'Olá {{nome}}, sua fatura está disponível no app.' })))
        .score,
    ).toBeLessThan(0.7);
    expect(
      responseQuality(ctx(routedTurnStateOf({ answer: 'Your invoice for March is available in the app.' })))
        .score,
    ).toBe(1);
  });

  it('groundedness: figures must appear in the evidence or the user message', () => {
    expect(groundedness(ctx(answered)).score).toBe(1);
    const invented = groundedness(
      ctx(routedTurnStateOf({ ...answered, answer: 'Your bill is $120.50, due 15/04.' })),
    );
    expect(invented.score).toBe(0);
    expect(
      groundedness(ctx(routedTurnStateOf({ answer: 'Posso ajudar com mais alguma coisa?' }))).score,
    ).toBe(1);
    expect(factualTokens('R$ 1.234,56 em 10/04/2026, 15%')).toEqual(['123456', '15', '10042026']);
  });

  it('sentiment: angry and escalating customers score low, thankful ones high', () => {
    expect(
      sentiment(ctx(routedTurnStateOf({ user_text: 'Que absurdo! Vou reclamar na Anatel' }))).score,
    ).toBeLessThan(0.25);
    expect(
      sentiment(ctx(routedTurnStateOf({ user_text: 'This is unacceptable, I will call my lawyer' }))).score,
    ).toBeLessThan(0.25);
    expect(sentiment(ctx(routedTurnStateOf({ user_text: 'Obrigado, resolvido!' }))).score).toBeGreaterThan(
      0.65,
    );
    expect(sentiment(ctx(routedTurnStateOf({ user_text: 'Thanks, that was great' }))).score).toBeGreaterThan(
      0.65,
    );
    expect(sentiment(ctx(routedTurnStateOf({ user_text: 'Qual o valor da fatura?' }))).score).toBe(0.5);
  });

  it('tone: rude, blaming or shouting answers score low', () => {
    expect(
      tone(ctx(routedTurnStateOf({ answer: 'Como eu já disse, você deveria ter lido o contrato.' }))).score,
    ).toBeLessThan(0.6);
    expect(tone(ctx(routedTurnStateOf({ answer: 'As I already said, deal with it.' }))).score).toBeLessThan(
      0.6,
    );
    expect(
      tone(ctx(routedTurnStateOf({ answer: 'SUA FATURA ESTÁ ATRASADA, PAGUE AGORA' }))).score,
    ).toBeLessThan(0.6);
    expect(
      tone(ctx(routedTurnStateOf({ answer: 'Sinto muito pelo transtorno, por favor confirme o CPF.' })))
        .score,
    ).toBeGreaterThanOrEqual(0.9);
    expect(
      tone(ctx(routedTurnStateOf({ answer: 'Sorry for the trouble, please confirm your ID.' }))).score,
    ).toBeGreaterThanOrEqual(0.9);
  });

  it('detects transactional turns like the reference', () => {
    expect(isTransactionalTurn(routedTurnStateOf({ transaction_status: 'AWAITING_CONFIRMATION' }))).toBe(
      true,
    );
    expect(isTransactionalTurn(routedTurnStateOf({ transaction_status: 'COMPLETED' }))).toBe(false);
    expect(
      isTransactionalTurn(routedTurnStateOf({ mcp_results: [toolResultOf(), parametersRequestOf()] })),
    ).toBe(true);
    expect(isTransactionalTurn(answered)).toBe(false);
  });
});

describe('JudgesService.evaluate', () => {
  it('sample_rate 0 judges nothing; sample_rate 1 judges every turn', async () => {
    const never = harness({ ...shipped(), sample_rate: 0 }, { random: 0 });
    expect(await never.service.evaluate(answered)).toEqual([]);
    expect(never.events).toEqual([
      {
        name: 'judges.completed',
        payload: expect.objectContaining({ sampled: false, reason: 'not_sampled' }),
      },
    ]);
    const always = harness({ ...shipped(), sample_rate: 1 }, { random: 0.999 });
    const results = await always.service.evaluate(answered);
    expect(results.map((r) => r.name)).toEqual(['response_quality', 'groundedness', 'sentiment', 'tone']);
    expect(results.every((r) => r.passed === true)).toBe(true);
    expect(always.events.map((e) => e.name)).toEqual([
      'judge.response_quality.evaluated',
      'judge.groundedness.evaluated',
      'judge.sentiment.evaluated',
      'judge.tone.evaluated',
      'judges.completed',
    ]);
  });

  it('always judges a transactional turn when configured, whatever the sample rate', async () => {
    const h = harness({ ...shipped(), sample_rate: 0 });
    const results = await h.service.evaluate(
      routedTurnStateOf({ ...answered, transaction_status: 'COLLECTING_PARAMETERS' }),
    );
    expect(results).toHaveLength(4);
    expect(h.events.at(-1)?.payload).toMatchObject({ sampled: true, reason: 'transactional' });
  });

  it('LLM judges follow the JSON contract; an invalid verdict fails closed or is skipped fail-open', async () => {
    const llmFile = { ...shipped(), judges: [{ name: 'groundedness', type: 'llm', threshold: 0.6 }] };
    const good = harness(llmFile);
    expect(await good.service.evaluate(answered)).toEqual([
      expect.objectContaining({ name: 'groundedness', type: 'llm', score: 0.9, passed: true }),
    ]);
    expect(fake.requests.map((r) => r.model)).toEqual(['judge']);
    for (const content of [
      '{"score": "high"}',
      '{"score": 7, "passed": true}',
      '{"score": "0.9", "passed": true}',
    ]) {
      const invalid = harness(llmFile, { judge: { content } });
      expect(await invalid.service.evaluate(answered)).toEqual([
        expect.objectContaining({ score: 0, passed: false, error: expect.stringMatching(/invalid verdict/) }),
      ]);
    }
    const open = harness({ ...llmFile, fail_closed: false }, { judge: { delayMs: 1500 } });
    expect(await open.service.evaluate(answered)).toEqual([
      expect.objectContaining({ passed: true, error: expect.stringMatching(/timed out/) }),
    ]);
    const disagree = harness(llmFile, { judge: { json: { score: 0.4, passed: true, reason: 'weak' } } });
    expect((await disagree.service.evaluate(answered))[0]).toMatchObject({ score: 0.4, passed: false });
  });

  it('does not judge a session-control message', async () => {
    const h = harness(shipped());
    expect(
      await h.service.evaluate(routedTurnStateOf({ route: 'end_session', answer: 'Atendimento encerrado.' })),
    ).toEqual([]);
  });
});

describe('JudgesService.review', () => {
  it('approves a clean answer unchanged', async () => {
    const h = harness(shipped());
    expect(await h.service.review(routedTurnStateOf({ ...answered, final_answer: answered.answer }))).toEqual(
      {
        approved: true,
        answer: answered.answer,
      },
    );
    expect(h.events).toEqual([
      { name: 'supervisor.review.completed', payload: { approved: true, violations: [] } },
    ]);
  });

  it('flags an agent promising a human transfer, and replaces leaked internal markers', async () => {
    const h = harness(shipped());
    const flagged = await h.service.review(
      routedTurnStateOf({
        route: 'billing_agent',
        final_answer: 'Vou transferir você para um atendente humano.',
      }),
    );
    expect(flagged).toEqual({ approved: false, answer: 'Vou transferir você para um atendente humano.' });
    const replaced = await h.service.review(
      routedTurnStateOf({
        route: 'billing_agent',
        final_answer: '{"verdict": "allow"} Sua fatura...',
      }),
    );
    expect(replaced.approved).toBe(false);
    expect(replaced.answer).toMatch(/Não consegui validar esta resposta/);
    expect(h.events.map((e) => e.payload.violations)).toEqual([
      [{ rule: 'unbacked_human_transfer', action: 'flag' }],
      [{ rule: 'internal_markers', action: 'replace' }],
    ]);
  });

  it('never rewrites the human handoff, end-session or output-supervisor handover message', async () => {
    const h = harness({
      ...shipped(),
      supervisor_review: { rules: [{ id: 'everything', pattern: '.', action: 'replace', message: 'X' }] },
    });
    const handoff = 'Vou encaminhar seu atendimento para uma pessoa.';
    expect(
      await h.service.review(routedTurnStateOf({ route: 'human_handoff', final_answer: handoff })),
    ).toEqual({
      approved: true,
      answer: handoff,
    });
    const ended = 'Atendimento encerrado. Obrigado pelo contato.';
    expect(await h.service.review(routedTurnStateOf({ route: 'end_session', final_answer: ended }))).toEqual({
      approved: true,
      answer: ended,
    });
    const handover = 'Vou encaminhar seu atendimento para um especialista para dar continuidade.';
    expect(
      await h.service.review(
        routedTurnStateOf({
          route: 'billing_agent',
          supervisor_action: 'handover',
          final_answer: handover,
        }),
      ),
    ).toEqual({ approved: true, answer: handover });
    expect(await h.service.review(routedTurnStateOf({ route: 'billing_agent', final_answer: 'oi' }))).toEqual(
      {
        approved: false,
        answer: 'X',
      },
    );
  });

  it('an enforced judge that failed replaces the answer; an observational one does not', async () => {
    const h = harness({ ...shipped(), language: 'en' });
    const observed = await h.service.review(
      routedTurnStateOf({
        route: 'billing_agent',
        final_answer: 'Your bill is $120.',
        judge_results: [judgeResultOf({ passed: false, score: 0.2 })],
      }),
    );
    expect(observed).toEqual({ approved: true, answer: 'Your bill is $120.' });
    const enforced = await h.service.review(
      routedTurnStateOf({
        route: 'billing_agent',
        final_answer: 'Your bill is $120.',
        judge_results: [judgeResultOf({ passed: false, score: 0.2, enforce: true })],
      }),
    );
    expect(enforced).toEqual({
      approved: false,
      answer: 'I could not validate this answer safely. Can I rephrase it or help in another way?',
    });
  });
});

describe('judges.yaml validation', () => {
  it('the shipped file is valid; an unknown judge names the file and key path', () => {
    expect(() => shipped()).not.toThrow();
    const dir = mkdtempSync(join(tmpdir(), 'judges-'));
    const path = join(dir, 'judges.yaml');
    writeFileSync(
      path,
      'judges:\n  - { name: tone }\n  - { name: vibes }\nsupervisor_review:\n  rules: [{ id: a, pattern: "(" }]\n',
    );
    expect(() => loadYamlFile(path, judgesFileSchema)).toThrow(ConfigFileError);
    try {
      loadYamlFile(path, judgesFileSchema);
    } catch (error) {
      const message = (error as Error).message;
      expect(message).toContain(path);
      expect(message).toMatch(/judges\[1\]\.name: unknown judge/);
      expect(message).toMatch(/supervisor_review\.rules\[0\]\.pattern: invalid regex/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
