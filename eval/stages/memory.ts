/**
 * Long-term memory extraction: every message through the real MemoryService.persistTurn (its prompt, its
 * validation of each fact), with a store that keeps what would be written instead of writing it.
 */
import { foldText, LongTermMemory } from '@agent/contracts';
import { LlmService } from '@agent/llm';
import { GuardrailsService } from '@agent/guardrails';
import { MemoryExtractionError, MemoryService } from '@agent/memory';
import { RecordingMemoryStore } from '../eval-context';
import { LoadedSet, MemoryCase, memoryLabel } from '../datasets';
import { calibration, ratio } from '../metrics';
import {
  CaseOutcome,
  FailureKind,
  pool,
  runCase,
  StageResult,
  StageThreshold,
  summarizeStage,
} from '../stage';
import { datasetInfo, limited, StageRunOptions, stageModels } from './common';
import { turnStateOf } from '../../test/support/states';

export const MEMORY_LABELS = ['FACTS', 'NONE'] as const;

type StoredFact = {
  category: string;
  key: string;
  value: string;
  confidence: number;
  /** The index of the expected fact it matches, or null. */
  matches: number | null;
  /** Its value holds a forbidden term (a secret, a one-off request). */
  forbidden: boolean;
};

type MemoryDetail = {
  facts: StoredFact[];
  expected_facts: { category: string; value: string[] }[];
};
export type MemoryOutcome = CaseOutcome<MemoryDetail>;

/** Each stored fact matched to at most one expected fact whose terms its value contains, in order. */
export function matchFacts(
  stored: readonly { category: string; key: string; value: string; confidence: number }[],
  expected: readonly { category: string; value: readonly string[] }[],
  forbidden: readonly string[],
): StoredFact[] {
  const taken = new Set<number>();
  return stored.map((fact) => {
    const value = foldText(fact.value);
    const index = expected.findIndex(
      (want, i) => !taken.has(i) && want.value.some((term) => value.includes(foldText(term))),
    );
    if (index >= 0) taken.add(index);
    return {
      ...fact,
      matches: index >= 0 ? index : null,
      forbidden: forbidden.some((term) => value.includes(foldText(term))),
    };
  });
}

const kept = (o: MemoryOutcome, t: number) => o.detail.facts.filter((fact) => fact.confidence >= t);

/**
 * At threshold t (LONG_TERM_MEMORY_MIN_CONFIDENCE) the facts at or above it are written. The costly error is a
 * false memory: a fact written from a message that has none, or a secret or one-off request written.
 */
export function memoryThreshold(configured: number): StageThreshold<MemoryOutcome> {
  return {
    setting: 'LONG_TERM_MEMORY_MIN_CONFIDENCE',
    configured,
    costly_error:
      'false memory: a fact written from a message with none, or a secret or one-off request written',
    at_risk: 'all messages',
    decideAt: (o, t) => (kept(o, t).length > 0 ? 'FACTS' : 'NONE'),
    isCostly: (o, decided, t) =>
      (decided === 'FACTS' && o.expected === 'NONE') || kept(o, t).some((fact) => fact.forbidden),
    atRisk: () => true,
    acts: (_o, decided) => decided === 'FACTS',
    expected: (o) => o.expected,
    raiseToReduce: true,
  };
}

function memoryState(item: MemoryCase): Parameters<MemoryService['persistTurn']>[0] {
  const now = new Date(0).toISOString();
  const known: LongTermMemory[] = item.known_facts.map((fact, i) => ({
    memory_id: `${item.id}-${i}`,
    tenant_id: 'eval',
    agent_id: 'eval',
    subject_key: item.id,
    category: fact.category,
    key: fact.key,
    value: fact.value,
    confidence: 0.9,
    source_session_id: null,
    source_message_id: null,
    metadata: {},
    created_at: now,
    updated_at: now,
  }));
  return turnStateOf({
    tenant_id: 'eval',
    agent_id: 'eval',
    session_id: item.id,
    turn: 2,
    long_term_memory_subject_key: item.id,
    user_text: item.message,
    sanitized_input: item.message,
    history: item.previous_assistant
      ? [{ role: 'assistant', content: item.previous_assistant, turn: 1 }]
      : [],
    long_term_memories: known,
  });
}

export async function runMemoryStage(
  set: LoadedSet<MemoryCase>,
  options: StageRunOptions,
): Promise<StageResult> {
  const started = performance.now();
  const { app, settings } = options.context;
  const memory = app.get(MemoryService);
  const store = app.get(RecordingMemoryStore);
  // The facts pass the memory rails the service runs before it stores them.
  const screen = app.get(GuardrailsService).contentScreen();
  const rule = memoryThreshold(settings.memory_min_confidence);
  const cases = limited(set.cases, options.limit);
  const outcomes = new Array<MemoryOutcome | undefined>(cases.length);
  let done = 0;
  await pool(cases, options.concurrency, async (item, index) => {
    let failureReason: string | null = null;
    const run = await runCase(item.id, options.priceOf, async () => {
      try {
        return await memory.persistTurn(memoryState(item), screen);
      } catch (error) {
        if (!(error instanceof MemoryExtractionError)) throw error;
        failureReason = error.message;
        return null;
      }
    });
    const facts = matchFacts(store.take(item.id), item.facts, item.forbidden);
    const failure: FailureKind | null = run.failure(failureReason !== null || run.value === null);
    const outcome: Omit<MemoryOutcome, 'decided'> = {
      id: item.id,
      language: item.language,
      tags: item.tags,
      text: item.message,
      expected: item.facts.length > 0 ? 'FACTS' : 'NONE',
      model_label: failure === null ? (facts.length > 0 ? 'FACTS' : 'NONE') : null,
      confidence: failure === null && facts.length > 0 ? Math.max(...facts.map((f) => f.confidence)) : null,
      asked_model: run.asked,
      failure,
      latency_ms: run.latency_ms,
      usage: run.usage,
      reason: failureReason ?? '',
      detail: { facts, expected_facts: item.facts.map((fact) => ({ ...fact, value: [...fact.value] })) },
    };
    outcomes[index] = { ...outcome, decided: rule.decideAt({ ...outcome, decided: '' }, rule.configured) };
    options.onProgress(++done, cases.length);
  });
  const results = outcomes.filter((o): o is MemoryOutcome => o !== undefined);
  const summary = summarizeStage(results, {
    labels: MEMORY_LABELS,
    calibrated: false,
    threshold: rule,
    target: options.target,
  });
  // The confidence is per fact: calibration is how often a written fact is one the message states.
  summary.calibration = calibration(
    results.flatMap((o) =>
      o.detail.facts.map((fact) => ({ confidence: fact.confidence, correct: fact.matches !== null })),
    ),
  );
  const min = settings.memory_min_confidence;
  const written = results.flatMap((o) => kept(o, min));
  const expectedCount = results.reduce((sum, o) => sum + o.detail.expected_facts.length, 0);
  const matched = written.filter((fact) => fact.matches !== null);
  const categoryRight = results.flatMap((o) =>
    kept(o, min).filter(
      (fact) => fact.matches !== null && o.detail.expected_facts[fact.matches]?.category === fact.category,
    ),
  );
  const measures = [
    {
      measure: `expected facts written (recall) at min confidence ${min}`,
      value: ratio(matched.length, expectedCount),
    },
    { measure: 'written facts that are expected (precision)', value: ratio(matched.length, written.length) },
    {
      measure: 'matched facts with the expected category',
      value: ratio(categoryRight.length, matched.length),
    },
    {
      measure: 'messages whose secret or one-off request was written',
      value: ratio(
        results.filter((o) => kept(o, min).some((fact) => fact.forbidden)).length,
        results.filter((o) => o.detail.facts.length > 0 || o.expected === 'NONE').length,
      ),
    },
  ];
  return {
    name: 'memory_extraction',
    title: 'Memory extraction',
    method:
      'Every message through the real `MemoryService.persistTurn` (the `memory_extraction` prompt, then each fact ' +
      'validated and normalized) with the known facts and the previous assistant message of the case; the facts ' +
      'it would write are kept instead of stored. A fact matches an expected one when its value contains one of ' +
      'the expected terms (accents and case aside); keys are the model’s own and are not compared.',
    models: stageModels(app.get(LlmService), [settings.memory_profile]),
    dataset: datasetInfo(set, (c) => c.language, memoryLabel, options.root),
    summary,
    headline: measures,
    extra: { min_confidence: min, measures },
    sections: [],
    notes: [
      ...(settings.memory_enabled
        ? []
        : [
            'ENABLE_LONG_TERM_MEMORY is false in this environment: the service does not run this stage today.',
          ]),
      'Calibration here is per written fact: how often a fact at that confidence is one the message states.',
    ],
    cases: results,
    duration_ms: Math.round(performance.now() - started),
  };
}
