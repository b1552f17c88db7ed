import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { loadYamlFile, routingFileSchema, toolsFileSchema } from '@agent/config';
import { KeywordIndex } from '../../libs/routing/src/keyword-matcher';
import { DatasetValidationError } from '../../eval/continuity-dataset';
import {
  Catalogue,
  GUARDRAIL_LANGUAGES,
  loadGuardrailCorpus,
  loadJudgeSet,
  loadMemorySet,
  loadParameterSet,
  loadRouterSet,
  loadTransactionSet,
  TRANSACTION_OUTCOMES,
} from '../../eval/datasets';

const ROOT = resolve(__dirname, '..', '..');
const SETS = join(ROOT, 'eval', 'dataset');
const LANGUAGES = ['pt', 'en', 'es'] as const;
const routing = loadYamlFile(join(ROOT, 'config', 'routing.yaml'), routingFileSchema);
const catalogue: Catalogue = {
  routing,
  tools: loadYamlFile(join(ROOT, 'config', 'tools.yaml'), toolsFileSchema),
};

function count<T>(items: readonly T[], predicate: (item: T) => boolean): number {
  return items.filter(predicate).length;
}

/** Every language holds at least `share` of the set. */
function expectBalancedLanguages<T>(
  items: readonly T[],
  languageOf: (item: T) => string,
  share = 0.28,
): void {
  for (const language of LANGUAGES) {
    expect({
      language,
      enough: count(items, (i) => languageOf(i) === language) >= share * items.length,
    }).toEqual({
      language,
      enough: true,
    });
  }
}

describe('the shipped labelled sets', () => {
  it('router: at least 300 messages in pt, en and es, every intent, several requests and none', () => {
    const { cases } = loadRouterSet(join(SETS, 'router.yaml'), catalogue);
    expect(cases.length).toBeGreaterThanOrEqual(300);
    expectBalancedLanguages(cases, (c) => c.language);
    for (const intent of routing.intents.filter((i) => i.enabled)) {
      for (const language of LANGUAGES) {
        expect({
          intent: intent.name,
          language,
          n: count(cases, (c) => c.language === language && c.intents[0] === intent.name) >= 10,
        }).toEqual({
          intent: intent.name,
          language,
          n: true,
        });
      }
    }
    expect(count(cases, (c) => c.intents.length > 1)).toBeGreaterThanOrEqual(40);
    expect(count(cases, (c) => c.intents.length > 2)).toBeGreaterThanOrEqual(3);
    expect(count(cases, (c) => c.intents.length === 0)).toBeGreaterThanOrEqual(15);
    expect(count(cases, (c) => c.context !== undefined)).toBeGreaterThanOrEqual(20);
    for (const tag of ['typo', 'mixed_language', 'indirect', 'no_keyword'] as const) {
      expect({ tag, n: count(cases, (c) => c.tags.includes(tag)) >= 6 }).toEqual({ tag, n: true });
    }
  });

  it('router: the no_keyword tag is true of the keyword stage, and untagged messages have a keyword', () => {
    const { cases } = loadRouterSet(join(SETS, 'router.yaml'), catalogue);
    const keywords = new KeywordIndex(routing.intents.filter((i) => i.enabled));
    const wrong = cases.filter((c) => c.tags.includes('no_keyword') === (keywords.match(c.text) !== null));
    expect(wrong.map((c) => c.id)).toEqual([]);
  });

  it('transaction control: at least 200 replies, every outcome in every language, both questions', () => {
    const { cases } = loadTransactionSet(join(SETS, 'transactions.yaml'), catalogue);
    expect(cases.length).toBeGreaterThanOrEqual(200);
    expectBalancedLanguages(cases, (c) => c.language);
    for (const label of TRANSACTION_OUTCOMES) {
      expect({ label, n: count(cases, (c) => c.label === label) >= 25 }).toEqual({ label, n: true });
      for (const language of LANGUAGES) {
        expect(count(cases, (c) => c.label === label && c.language === language)).toBeGreaterThanOrEqual(8);
      }
    }
    for (const stage of ['confirmation', 'collection'] as const) {
      expect(count(cases, (c) => c.stage === stage && c.label === 'REPLACE')).toBeGreaterThanOrEqual(10);
      expect(count(cases, (c) => c.stage === stage && c.label === 'OTHER')).toBeGreaterThanOrEqual(10);
    }
    // The costly error needs replies that are no confirmation but look like one ("sim, mas antes ...").
    expect(
      count(cases, (c) => c.label !== 'CONFIRM' && /^(sim|yes|sí)\b/i.test(c.message)),
    ).toBeGreaterThanOrEqual(6);
  });

  it('parameter extraction: expected values in every language, with replies that give none', () => {
    const { cases } = loadParameterSet(join(SETS, 'parameters.yaml'), catalogue);
    expect(cases.length).toBeGreaterThanOrEqual(80);
    expectBalancedLanguages(cases, (c) => c.language);
    expect(count(cases, (c) => c.action === 'OTHER')).toBeGreaterThanOrEqual(10);
    expect(
      count(cases, (c) => Object.values(c.expected).some((v) => v === null) && c.action === 'ANSWER'),
    ).toBeGreaterThanOrEqual(6);
    for (const field of ['order_id', 'reason']) {
      expect(count(cases, (c) => field in c.expected && c.expected[field] !== null)).toBeGreaterThanOrEqual(
        20,
      );
    }
  });

  it('memory extraction: facts of every kind, messages with none, secrets that must not be written', () => {
    const { cases } = loadMemorySet(join(SETS, 'memory.yaml'));
    expect(cases.length).toBeGreaterThanOrEqual(80);
    expectBalancedLanguages(cases, (c) => c.language);
    expect(count(cases, (c) => c.facts.length === 0)).toBeGreaterThanOrEqual(20);
    expect(count(cases, (c) => c.tags.includes('secret'))).toBeGreaterThanOrEqual(12);
    expect(count(cases, (c) => c.known_facts.length > 0)).toBeGreaterThanOrEqual(6);
    for (const category of ['profile', 'preference', 'contact', 'account', 'constraint']) {
      expect(count(cases, (c) => c.facts.some((f) => f.category === category))).toBeGreaterThanOrEqual(3);
    }
  });

  it('judges: every judge sees answers that pass and answers that fail, in every language', () => {
    const { cases } = loadJudgeSet(join(SETS, 'judges.yaml'), catalogue);
    expect(cases.length).toBeGreaterThanOrEqual(45);
    expectBalancedLanguages(cases, (c) => c.language);
    for (const judge of ['response_quality', 'groundedness', 'sentiment', 'tone'] as const) {
      for (const language of LANGUAGES) {
        const mine = cases.filter((c) => c.language === language);
        expect(count(mine, (c) => c.expected[judge] === 'fail')).toBeGreaterThanOrEqual(3);
        expect(count(mine, (c) => c.expected[judge] === 'pass')).toBeGreaterThanOrEqual(3);
      }
    }
  });

  it('guardrails: the seed holds attacks and ordinary messages in several languages', () => {
    const { cases } = loadGuardrailCorpus(join(SETS, 'guardrails'));
    expect(cases.length).toBeGreaterThanOrEqual(20);
    expect(count(cases, (c) => c.label === 'attack')).toBeGreaterThanOrEqual(8);
    expect(count(cases, (c) => c.label === 'ordinary')).toBeGreaterThanOrEqual(8);
    expect(new Set(cases.map((c) => c.lang)).size).toBe(GUARDRAIL_LANGUAGES.length);
  });
});

describe('labelled set validation', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'eval-sets-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function write(name: string, cases: unknown[]): string {
    const path = join(dir, name);
    writeFileSync(path, stringify({ version: 1, cases }));
    return path;
  }

  function problems(load: () => unknown): string[] {
    try {
      load();
    } catch (error) {
      if (error instanceof DatasetValidationError) return error.problems;
      throw error;
    }
    return [];
  }

  it('router: names the case of an unknown intent, a missing tag, a context of the wrong agent', () => {
    const checked = [
      { id: 'a', language: 'pt', text: 'x', intents: ['nope'] },
      {
        id: 'b',
        language: 'pt',
        text: 'x',
        intents: ['billing_invoice_explanation', 'retail_order_tracking'],
      },
      {
        id: 'c',
        language: 'pt',
        text: 'x',
        intents: [],
        tags: ['out_of_scope', 'with_context'],
        context: { active_agent: 'orders_agent', previous_intent: 'billing_invoice_explanation' },
      },
    ];
    // A schema error stops the checks: only it is reported.
    const path = write('router.yaml', [...checked, { id: 'c', language: 'xx', text: '', intents: [] }]);
    expect(problems(() => loadRouterSet(path, catalogue))).toEqual([
      "case \"c\" language: Invalid enum value. Expected 'pt' | 'en' | 'es', received 'xx'",
      'case "c" text: must not be empty',
    ]);
    const valid = write('valid.yaml', [
      ...checked,
      { id: 'c', language: 'pt', text: 'x', intents: [], tags: ['out_of_scope'] },
    ]);
    expect(problems(() => loadRouterSet(valid, catalogue))).toEqual([
      'case "a": intent "nope" is not an enabled intent of routing.yaml',
      'case "b": the multi_intent tag goes with two or more intents, and only then',
      'case "c": context.active_agent must be billing_agent, the agent of billing_invoice_explanation',
      'case "c": duplicate id',
    ]);
  });

  it('transaction control: the label must fit the question, REPLACE an offered operation, CORRECT values', () => {
    const base = {
      language: 'pt',
      intent: 'retail_support_exchange_return',
      tool: 'solicitar_troca',
      question: 'Confirma?',
      message: 'x',
    };
    const path = write('transactions.yaml', [
      { ...base, id: 'a', stage: 'collection', missing: ['reason'], label: 'CONFIRM' },
      { ...base, id: 'b', stage: 'confirmation', label: 'REPLACE', operation: 'cancelar_pedido' },
      { ...base, id: 'c', stage: 'confirmation', label: 'CORRECT' },
      { ...base, id: 'd', stage: 'confirmation', label: 'ABANDON' },
      { ...base, id: 'e', stage: 'confirmation', label: 'CONFIRM', tool: 'consultar_pedido' },
      {
        ...base,
        id: 'f',
        stage: 'confirmation',
        label: 'OTHER',
        history: [{ user: 'u', assistant: 'other' }],
      },
      { ...base, id: 'g', stage: 'confirmation', label: 'REPLACE', operation: 'solicitar_devolucao' },
    ]);
    expect(problems(() => loadTransactionSet(path, catalogue))).toEqual([
      'case "a": label CONFIRM cannot answer a parameter question (ABANDON, REPLACE, OTHER)',
      'case "b": a REPLACE names one of the other operations of retail_support_exchange_return: solicitar_devolucao',
      'case "c": a CORRECT gives the new values',
      'case "d": label ABANDON cannot answer a confirmation (CONFIRM, REJECT, CORRECT, REPLACE, OTHER)',
      'case "e": tool "consultar_pedido" is not a transactional tool',
      'case "f": the last reply of the history is the question',
    ]);
  });

  it('parameter and memory sets: expectations name the fields asked for; forbidden terms come from the message', () => {
    const parameters = write('parameters.yaml', [
      {
        id: 'a',
        language: 'en',
        intent: 'retail_order_cancel',
        tool: 'cancelar_pedido',
        missing: ['order_id'],
        question: 'q',
        message: 'm',
        expected: { reason: 'x' },
      },
      {
        id: 'b',
        language: 'en',
        intent: 'retail_order_cancel',
        tool: 'cancelar_pedido',
        missing: ['order_id'],
        question: 'q',
        message: 'm',
        expected: { order_id: null },
      },
    ]);
    expect(problems(() => loadParameterSet(parameters, catalogue))).toEqual([
      'case "a": expected names exactly the missing fields (order_id)',
      'case "b": an OTHER reply gives no value, and an ANSWER at least one',
    ]);
    const memory = write('memory.yaml', [
      {
        id: 'a',
        language: 'es',
        message: 'mi tarjeta es 4111',
        facts: [],
        forbidden: ['5500'],
        tags: ['secret'],
      },
      { id: 'b', language: 'es', message: 'x', facts: [], tags: ['secret'] },
    ]);
    expect(problems(() => loadMemorySet(memory))).toEqual([
      'case "a": a forbidden term is taken from the message',
      'case "b": a secret case lists it as forbidden',
    ]);
  });

  it('guardrails: reads every *.jsonl of the folder, naming the file and line of a bad one', () => {
    const line = (id: string, label = 'attack') =>
      JSON.stringify({ id, lang: 'pt', technique: 't', label, text: 'x' });
    writeFileSync(join(dir, 'a.jsonl'), `${line('1')}\n\n${line('2', 'ordinary')}\n`);
    writeFileSync(join(dir, 'b.jsonl'), `${line('3')}\n`);
    writeFileSync(join(dir, 'notes.txt'), 'not a case');
    expect(loadGuardrailCorpus(dir).cases.map((c) => c.id)).toEqual(['1', '2', '3']);
    writeFileSync(
      join(dir, 'c.jsonl'),
      `${line('1')}\n{not json\n${JSON.stringify({ id: '9', lang: 'xx' })}\n`,
    );
    const found = problems(() => loadGuardrailCorpus(dir));
    expect(found[0]).toBe('c.jsonl:1: duplicate id "1"');
    expect(found[1]).toMatch(/^c\.jsonl:2: not JSON/);
    expect(found.slice(2)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^c\.jsonl:3 lang: /),
        expect.stringMatching(/^c\.jsonl:3 label: /),
      ]),
    );
    expect(problems(() => loadGuardrailCorpus(join(dir, 'missing')))).toEqual([
      'no *.jsonl file in the folder',
    ]);
  });
});
