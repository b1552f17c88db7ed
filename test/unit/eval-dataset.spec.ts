import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadYamlFile, routingFileSchema } from '@agent/config';
import {
  ContinuityDataset,
  datasetStats,
  DatasetValidationError,
  DATASET_LANGUAGES,
  loadDataset,
  REQUIRED_HARD_CASES,
  validateDataset,
} from '../../eval/continuity-dataset';

const ROOT = resolve(__dirname, '..', '..');
const catalogue = loadYamlFile(join(ROOT, 'config', 'routing.yaml'), routingFileSchema);
const SHIPPED = join(ROOT, 'eval', 'dataset', 'continuity.yaml');

/** A valid two-conversation dataset the broken variants start from. */
function sample(): Record<string, unknown> & { conversations: Record<string, unknown>[] } {
  return {
    version: 1,
    conversations: [
      {
        id: 'c1',
        language: 'pt',
        domain: 'telecom',
        title: 'plan then bill',
        turns: [
          {
            user: 'Qual é o meu plano?',
            active_agent: null,
            previous_intent: null,
            previous_domain: null,
            label: 'ROUTE',
            assistant: 'Controle 50GB.',
          },
          {
            user: 'O que está incluso?',
            active_agent: 'product_agent',
            previous_intent: 'product_services_information',
            previous_domain: 'telecom',
            label: 'CONTINUE',
            tags: ['follow_up'],
            assistant: '50 GB e ligações ilimitadas.',
          },
          {
            user: 'Obrigado, pode encerrar',
            active_agent: 'product_agent',
            previous_intent: 'product_services_information',
            previous_domain: 'telecom',
            label: 'END_SESSION',
          },
        ],
      },
      {
        id: 'c2',
        language: 'en',
        domain: 'retail',
        title: 'tracking',
        turns: [
          {
            user: 'Where is my order?',
            active_agent: null,
            previous_intent: null,
            previous_domain: null,
            label: 'ROUTE',
            assistant: 'What is the order number?',
          },
          {
            user: '7781',
            active_agent: 'orders_agent',
            previous_intent: 'retail_order_tracking',
            previous_domain: 'retail',
            next_state: 'COLLECTING_ORDER_PARAMETERS',
            label: 'CONTINUE',
          },
        ],
      },
    ],
  };
}

type Turn = Record<string, unknown>;
function turnOf(raw: ReturnType<typeof sample>, conversation: number, turn: number): Turn {
  return (raw.conversations[conversation].turns as Turn[])[turn];
}

function problemsOf(raw: unknown): string[] {
  const result = validateDataset(raw, catalogue);
  if (result.ok) throw new Error('expected the dataset to be rejected');
  return result.problems;
}

describe('continuity dataset validation', () => {
  it('accepts a consistent dataset', () => {
    const result = validateDataset(sample(), catalogue);
    expect(result.ok).toBe(true);
  });

  it('names the conversation and the 1-based turn of a schema error', () => {
    const raw = sample();
    turnOf(raw, 0, 1).label = 'STAY';
    expect(problemsOf(raw)).toEqual([expect.stringMatching(/^conversation "c1" turn 2 label: /)]);
  });

  it('names a conversation without an id by its position', () => {
    const raw = sample();
    delete raw.conversations[1].id;
    expect(problemsOf(raw)).toEqual([expect.stringMatching(/^conversation #2 id: Required/)]);
  });

  it('rejects an unknown key, a missing state field and an unknown tag', () => {
    const raw = sample();
    turnOf(raw, 0, 0).expected = 'ROUTE';
    delete turnOf(raw, 0, 1).previous_domain;
    turnOf(raw, 1, 0).tags = ['smalltalk'];
    const problems = problemsOf(raw);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^conversation "c1" turn 1: Unrecognized key.*expected/),
        expect.stringMatching(/^conversation "c1" turn 2 previous_domain: Required/),
        expect.stringMatching(/^conversation "c2" turn 1 tags\.0: /),
      ]),
    );
  });

  it('checks the labelled state against the catalogue', () => {
    const raw = sample();
    Object.assign(turnOf(raw, 0, 1), { active_agent: 'billing_agent' });
    Object.assign(turnOf(raw, 1, 1), { active_agent: 'ghost_agent' });
    const problems = problemsOf(raw);
    expect(problems).toEqual(
      expect.arrayContaining([
        'conversation "c1" turn 2: previous_intent "product_services_information" belongs to product_agent, not to active_agent billing_agent',
        'conversation "c2" turn 2: active_agent "ghost_agent" owns no enabled intent of routing.yaml',
        'conversation "c2" turn 2: next_state "COLLECTING_ORDER_PARAMETERS" belongs to orders_agent, not to ghost_agent',
      ]),
    );
  });

  it('checks domains, unknown intents and states', () => {
    const raw = sample();
    Object.assign(turnOf(raw, 0, 1), { previous_domain: 'retail' });
    Object.assign(turnOf(raw, 1, 1), {
      previous_intent: 'retail_order_refund',
      next_state: 'WAITING_FOREVER',
    });
    raw.conversations[1].domain = 'banking';
    const problems = problemsOf(raw);
    expect(problems).toEqual(
      expect.arrayContaining([
        'conversation "c1" turn 2: previous_domain must be "telecom" (the domain of product_services_information), got "retail"',
        expect.stringMatching(
          /^conversation "c1" turn 2: previous_domain "retail" differs from the conversation domain/,
        ),
        'conversation "c2" turn 2: previous_intent "retail_order_refund" is not an enabled intent of routing.yaml',
        'conversation "c2" turn 2: next_state "WAITING_FOREVER" is not a state policy of routing.yaml',
        expect.stringMatching(/^conversation "c2": domain "banking" is not a catalogue domain/),
      ]),
    );
  });

  it('checks label rules and turn order', () => {
    const raw = sample();
    Object.assign(turnOf(raw, 0, 0), { label: 'CONTINUE' });
    Object.assign(turnOf(raw, 0, 1), { label: 'END_SESSION' });
    delete turnOf(raw, 1, 0).assistant;
    raw.conversations[1].id = 'c1';
    const problems = problemsOf(raw);
    expect(problems).toEqual(
      expect.arrayContaining([
        'conversation "c1" turn 1: label CONTINUE needs an active_agent (without one the service turns it into ROUTE)',
        'conversation "c1" turn 2: END_SESSION must be the last turn (an ended session classifies nothing more)',
        'conversation "c1" turn 1: assistant reply missing (it is the history of the next turn)',
        'conversation "c1": duplicate id',
      ]),
    );
  });

  it('requires the agent and intent to stay after a CONTINUE turn', () => {
    const raw = sample();
    Object.assign(turnOf(raw, 0, 2), {
      active_agent: 'billing_agent',
      previous_intent: 'billing_invoice_explanation',
    });
    expect(problemsOf(raw)).toEqual([
      'conversation "c1" turn 3: active_agent must stay product_agent after a CONTINUE turn, got billing_agent',
    ]);
  });

  it('loadDataset names the file on a YAML error and on a validation error', () => {
    const dir = mkdtempSync(join(tmpdir(), 'eval-dataset-'));
    try {
      const broken = join(dir, 'broken.yaml');
      writeFileSync(broken, 'version: 1\nconversations: [\n');
      expect(() => loadDataset(broken, catalogue)).toThrow(DatasetValidationError);
      expect(() => loadDataset(broken, catalogue)).toThrow(/broken\.yaml[\s\S]*not valid YAML/);
      const invalid = join(dir, 'invalid.yaml');
      writeFileSync(invalid, 'version: 2\nconversations: []\n');
      expect(() => loadDataset(invalid, catalogue)).toThrow(/invalid\.yaml[\s\S]*version/);
      expect(() => loadDataset(join(dir, 'missing.yaml'), catalogue)).toThrow(/file not found/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('computes statistics', () => {
    const result = validateDataset(sample(), catalogue);
    if (!result.ok) throw new Error(result.problems.join('\n'));
    const stats = datasetStats(result.dataset);
    expect(stats).toMatchObject({
      conversations: 2,
      turns: 5,
      max_depth: 3,
      by_label: { CONTINUE: 2, ROUTE: 2, HUMAN_HANDOFF: 0, END_SESSION: 1 },
      by_language: { pt: { conversations: 1, turns: 3 }, en: { conversations: 1, turns: 2 } },
      by_depth: { '1': 2, '2': 2, '3': 1 },
      turns_with_active_agent: 3,
    });
    expect(stats.by_tag.follow_up).toBe(1);
  });
});

describe('the shipped continuity dataset', () => {
  let dataset: ContinuityDataset;
  beforeAll(() => {
    dataset = loadDataset(SHIPPED, catalogue);
  });

  it('is valid and large enough', () => {
    const stats = datasetStats(dataset);
    expect(stats.turns).toBeGreaterThanOrEqual(400);
    for (const language of DATASET_LANGUAGES) {
      expect(stats.by_language[language]?.turns ?? 0).toBeGreaterThanOrEqual(120);
    }
    for (const label of ['CONTINUE', 'ROUTE', 'HUMAN_HANDOFF', 'END_SESSION'] as const) {
      expect(stats.by_label[label]).toBeGreaterThanOrEqual(20);
      for (const language of DATASET_LANGUAGES) {
        expect(stats.label_by_language[language][label]).toBeGreaterThan(0);
      }
    }
    expect(stats.by_domain.telecom?.turns).toBeGreaterThan(0);
    expect(stats.by_domain.retail?.turns).toBeGreaterThan(0);
    expect(stats.max_depth).toBeGreaterThanOrEqual(8);
  });

  it('holds every hard case in more than one language', () => {
    for (const tag of REQUIRED_HARD_CASES) {
      const languages = new Set(
        dataset.conversations.filter((c) => c.turns.some((t) => t.tags.includes(tag))).map((c) => c.language),
      );
      const count = dataset.conversations.flatMap((c) => c.turns).filter((t) => t.tags.includes(tag)).length;
      expect({ tag, enough: count >= 6 && languages.size >= 2 }).toEqual({ tag, enough: true });
    }
  });

  it('uses every catalogue agent as an active agent', () => {
    const agents = new Set(dataset.conversations.flatMap((c) => c.turns.map((t) => t.active_agent)));
    for (const intent of catalogue.intents) expect(agents.has(intent.agent)).toBe(true);
  });
});
