/**
 * Transaction control and parameter extraction: the customer's reply to a pending operation through the real
 * `confirmation` classifier (the confirmation question) and the real parameter extractor (the parameter
 * question), given what the transaction engine gives them: the operation's name and values, the fields, the
 * other operations the intent offers, the question and the recent conversation.
 */
import { ConfigType } from '@nestjs/config';
import { existsSync } from 'node:fs';
import {
  CollectionReading,
  ConfirmationClassifier,
  ConfirmationResult,
  ParameterExtractor,
  TRANSACTION_SETTINGS_FILE,
  TransactionSettings,
  transactionSettingsSchema,
  TransactionTexts,
} from '@agent/agents';
import { appConfig, ConfigFilesService } from '@agent/config';
import { foldText, HistoryMessage, ToolArguments } from '@agent/contracts';
import { LlmService } from '@agent/llm';
import {
  Catalogue,
  ExpectedValue,
  LoadedSet,
  ParameterCase,
  replacementsOf,
  TRANSACTION_OUTCOMES,
  TransactionCase,
} from '../datasets';
import { formatRate, table } from '../markdown';
import { ratio } from '../metrics';
import {
  CaseOutcome,
  CaseRun,
  caseFields,
  Json,
  JsonObject,
  pool,
  runCase,
  StageResult,
  StageThreshold,
  summarizeStage,
} from '../stage';
import { datasetInfo, limited, StageRunOptions, stageModels } from './common';

/** What the stages need of the service's transaction flow: its settings, texts and the catalogue. */
interface TransactionFlow {
  settings: TransactionSettings;
  texts: TransactionTexts;
  catalogue: Catalogue;
  files: ConfigFilesService;
}

function flowOf(options: StageRunOptions): TransactionFlow {
  const { app } = options.context;
  const files = app.get(ConfigFilesService);
  const settings = existsSync(files.path(TRANSACTION_SETTINGS_FILE))
    ? files.load(TRANSACTION_SETTINGS_FILE, transactionSettingsSchema)
    : transactionSettingsSchema.parse({});
  const language = app.get<ConfigType<typeof appConfig>>(appConfig.KEY).DEFAULT_LANGUAGE;
  return {
    settings,
    texts: new TransactionTexts(settings, language),
    catalogue: { routing: files.routings.for('eval'), tools: files.tools },
    files,
  };
}

/** The other operations of the intent, named and described as the transaction engine offers them. */
function alternatives(
  flow: TransactionFlow,
  intent: string,
  tool: string,
): { name: string; description: string }[] {
  return replacementsOf(flow.catalogue, intent, tool).map((name) => ({
    name,
    description: `${flow.texts.operation(name)}: ${flow.catalogue.tools.tools[name]?.description ?? ''}`,
  }));
}

/** "o cancelamento do pedido (pedido 100231)": the operation with its values, as the engine asks about it. */
function operationText(flow: TransactionFlow, tool: string, values: ToolArguments): string {
  const properties = Object.keys(flow.catalogue.tools.tools[tool]?.args_schema.properties ?? {});
  const shown = properties
    .filter((name) => (valueText(values[name]) ?? '').trim() !== '')
    .map((name) => `${flow.texts.argument(name)} ${valueText(values[name]) ?? ''}`)
    .join(', ');
  return `${flow.texts.operation(tool)} (${shown})`;
}

/** The conversation the classifier sees: the labelled one, else the question alone. */
function historyOf(item: {
  history: { user: string; assistant: string }[];
  question: string;
}): HistoryMessage[] {
  if (item.history.length === 0) return [{ role: 'assistant', content: item.question, turn: 1 }];
  return item.history.flatMap((turn, i) => [
    { role: 'user' as const, content: turn.user, turn: i + 1 },
    { role: 'assistant' as const, content: turn.assistant, turn: i + 1 },
  ]);
}

/** Reads the reply to a parameter question with threshold 0: the action and confidence as the model gave them. */
function readReply(
  extractor: ParameterExtractor,
  flow: TransactionFlow,
  item: { intent: string; tool: string; missing: string[]; message: string },
): Promise<CollectionReading> {
  const config = flow.catalogue.tools.tools[item.tool];
  return extractor.read({
    toolName: item.tool,
    config,
    operation: flow.texts.operation(item.tool),
    fields: item.missing,
    alternatives: alternatives(flow, item.intent, item.tool),
    text: item.message,
    profile: flow.settings.extraction_profile,
    minConfidence: 0,
  });
}

/** The extractor reports a failed model call only as its event: an answer without values follows either way. */
function extractionFailed(run: CaseRun<unknown>): boolean {
  return run.events.some((event) => event.name === 'mcp.parameter.llm_extract_failed');
}

// ------------------------------------------------------------------ transaction control

type TransactionDetail = {
  stage: 'confirmation' | 'collection';
  operation: string | null;
  expected_operation: string | null;
  values: JsonObject;
  expected_values: JsonObject;
  fallback_reason: string | null;
};
export type TransactionOutcome = CaseOutcome<TransactionDetail>;

/**
 * Both questions act on a decision only at or above confirmation_min_confidence: below it (or without a usable
 * answer) the operation goes on and the customer is asked again (OTHER). The costly error is a confirmation the
 * customer did not give.
 */
export function transactionThreshold(configured: number): StageThreshold<TransactionOutcome> {
  return {
    setting: 'config/prompts/transactions.yaml confirmation_min_confidence',
    configured,
    costly_error: 'unintended confirmation: the operation runs although the customer did not confirm it',
    at_risk: 'replies that are not a confirmation',
    decideAt: (o, t) =>
      o.model_label === null || o.model_label === 'OTHER' || (o.confidence ?? 0) < t
        ? 'OTHER'
        : o.model_label,
    isCostly: (o, decided) => decided === 'CONFIRM' && o.expected !== 'CONFIRM',
    atRisk: (o) => o.expected !== 'CONFIRM',
    acts: (_o, decided) => decided !== 'OTHER',
    expected: (o) => o.expected,
    raiseToReduce: true,
  };
}

/** A value as text: a scalar as written, anything else (an object the model invented) as its JSON. */
function valueText(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** The values as JSON for the report: scalars as they are, anything else as its JSON text. */
function toJson(values: ToolArguments): JsonObject {
  return Object.fromEntries(
    Object.entries(values).map(([key, value]): [string, Json] => [
      key,
      typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || value === null
        ? value
        : JSON.stringify(value),
    ]),
  );
}

/** Every expected value was given, as the same identifier. */
function sameValues(expected: JsonObject, got: JsonObject): boolean {
  return Object.entries(expected).every(
    ([field, value]) => normalizedId(valueText(got[field]) ?? '') === normalizedId(valueText(value) ?? ''),
  );
}

export async function runTransactionStage(
  set: LoadedSet<TransactionCase>,
  options: StageRunOptions,
): Promise<StageResult> {
  const started = performance.now();
  const { app } = options.context;
  const flow = flowOf(options);
  const classifier = app.get(ConfirmationClassifier);
  const extractor = app.get(ParameterExtractor);
  const threshold = transactionThreshold(flow.settings.confirmation_min_confidence);
  const cases = limited(set.cases, options.limit);
  const outcomes = new Array<TransactionOutcome | undefined>(cases.length);
  let done = 0;
  await pool(cases, options.concurrency, async (item, index) => {
    let outcome: Omit<TransactionOutcome, 'decided'>;
    const fields = {
      id: item.id,
      language: item.language,
      tags: [item.stage, ...item.tags],
      text: item.message,
    };
    const expectedDetail = {
      expected_operation: item.operation ?? null,
      expected_values: item.values ?? {},
    };
    if (item.stage === 'confirmation') {
      const properties = flow.catalogue.tools.tools[item.tool].args_schema.properties;
      const run = await runCase(item.id, options.priceOf, () =>
        classifier.classify({
          operation: operationText(flow, item.tool, item.arguments),
          question: item.question,
          message: item.message,
          history: historyOf(item),
          minConfidence: 0,
          fields: Object.keys(properties).map((name) => ({
            name,
            description: properties[name].description ?? '',
            value: item.arguments[name] ?? null,
          })),
          alternatives: alternatives(flow, item.intent, item.tool),
        }),
      );
      const result: ConfirmationResult = run.value;
      const failure = run.failure(
        result.fallback_reason === 'invalid_output' || result.fallback_reason === 'llm_error',
      );
      outcome = {
        ...caseFields(fields, run),
        expected: item.label,
        model_label: failure === null ? result.decision : null,
        confidence: failure === null ? result.confidence : null,
        failure,
        reason: result.reason,
        detail: {
          stage: 'confirmation',
          operation: result.operation,
          values: toJson(result.values),
          fallback_reason: result.fallback_reason,
          ...expectedDetail,
        },
      };
    } else {
      const run = await runCase(item.id, options.priceOf, () => readReply(extractor, flow, item));
      const reading = run.value;
      const failure = run.failure(extractionFailed(run));
      outcome = {
        ...caseFields(fields, run),
        expected: item.label,
        // ANSWER keeps the operation going, as OTHER does: both read as OTHER here.
        model_label: failure === null ? (reading.action === 'ANSWER' ? 'OTHER' : reading.action) : null,
        confidence: failure === null ? reading.confidence : null,
        failure,
        reason: '',
        detail: {
          stage: 'collection',
          operation: reading.operation,
          values: toJson(reading.values),
          fallback_reason: null,
          ...expectedDetail,
        },
      };
    }
    const provisional = { ...outcome, decided: 'OTHER' };
    outcomes[index] = { ...outcome, decided: threshold.decideAt(provisional, threshold.configured) };
    options.onProgress(++done, cases.length);
  });
  const results = outcomes.filter((o): o is TransactionOutcome => o !== undefined);
  const summary = summarizeStage(results, {
    labels: TRANSACTION_OUTCOMES,
    calibrated: true,
    threshold,
    target: options.target,
  });
  const replaces = results.filter((o) => o.expected === 'REPLACE' && o.decided === 'REPLACE');
  const corrects = results.filter((o) => o.expected === 'CORRECT' && o.decided === 'CORRECT');
  const notMeantToEnd = results.filter((o) => !['REJECT', 'ABANDON', 'REPLACE'].includes(o.expected));
  const measures = [
    {
      measure: 'unintended end (reject, abandon or replace not meant)',
      value: ratio(
        notMeantToEnd.filter((o) => ['REJECT', 'ABANDON', 'REPLACE'].includes(o.decided)).length,
        notMeantToEnd.length,
      ),
    },
    {
      measure: 'REPLACE names the right operation',
      value: ratio(
        replaces.filter((o) => o.detail.operation === o.detail.expected_operation).length,
        replaces.length,
      ),
    },
    {
      measure: 'CORRECT carries the right values',
      value: ratio(
        corrects.filter((o) => sameValues(o.detail.expected_values, o.detail.values)).length,
        corrects.length,
      ),
    },
  ];
  const byStage = (['confirmation', 'collection'] as const).map((stage) => {
    const members = results.filter((o) => o.detail.stage === stage);
    return [
      stage,
      String(members.length),
      formatRate(ratio(members.filter((o) => o.decided === o.expected).length, members.length)),
    ];
  });
  return {
    name: 'transaction_control',
    title: 'Transaction control',
    method:
      'Every reply to a pending operation through the real `ConfirmationClassifier` (a confirmation question) or ' +
      '`ParameterExtractor` (a parameter question), with the operation, values, fields and alternative operations ' +
      'built from tools.yaml, routing.yaml and transactions.yaml as the transaction engine builds them. At the ' +
      'parameter question ANSWER and OTHER both keep the operation going and count as OTHER.',
    models: stageModels(app.get(LlmService), ['confirmation', flow.settings.extraction_profile]),
    dataset: datasetInfo(
      set,
      (c) => c.language,
      (c) => c.label,
      options.root,
    ),
    summary,
    headline: measures,
    extra: { measures },
    sections: [
      {
        title: 'By question',
        lines: [table(['question', 'replies', 'decision right'], byStage), ''],
      },
    ],
    notes: [],
    cases: results,
    duration_ms: Math.round(performance.now() - started),
  };
}

// ------------------------------------------------------------------ parameter extraction

/** A value as an identifier: folded, letters and digits only ("#100.231" and "100231" are one order). */
function normalizedId(value: string): string {
  return foldText(value).replace(/[^\p{L}\p{N}]+/gu, '');
}

export type FieldResult = 'right' | 'wrong' | 'missed' | 'invented' | 'right_absent';

/** One extracted field against its expectation. */
export function fieldResult(expected: ExpectedValue, got: unknown): FieldResult {
  const value = valueText(got) ?? '';
  const present = value.trim() !== '';
  if (expected === null) return present ? 'invented' : 'right_absent';
  if (!present) return 'missed';
  const right = Array.isArray(expected)
    ? expected.some((term) => foldText(value).includes(foldText(term)))
    : normalizedId(value) === normalizedId(expected);
  return right ? 'right' : 'wrong';
}

type ParameterDetail = {
  values: JsonObject;
  fields: Record<string, FieldResult>;
  expected_values: JsonObject;
};
export type ParameterOutcome = CaseOutcome<ParameterDetail>;

export async function runParameterStage(
  set: LoadedSet<ParameterCase>,
  options: StageRunOptions,
): Promise<StageResult> {
  const started = performance.now();
  const { app } = options.context;
  const flow = flowOf(options);
  const extractor = app.get(ParameterExtractor);
  const minConfidence = flow.settings.confirmation_min_confidence;
  const cases = limited(set.cases, options.limit);
  const outcomes = new Array<ParameterOutcome | undefined>(cases.length);
  let done = 0;
  await pool(cases, options.concurrency, async (item, index) => {
    const run = await runCase(item.id, options.priceOf, () => readReply(extractor, flow, item));
    const reading = run.value;
    const failure = run.failure(extractionFailed(run));
    const fields = Object.fromEntries(
      item.missing.map((field) => [field, fieldResult(item.expected[field], reading.values[field])]),
    );
    // What the reply did: gave up or swapped the operation, gave a value (ANSWER), or gave none (OTHER).
    const gave = item.missing.some((field) => (valueText(reading.values[field]) ?? '').trim() !== '');
    const readAt = (threshold: number) =>
      (reading.action === 'ABANDON' || reading.action === 'REPLACE') && (reading.confidence ?? 0) >= threshold
        ? reading.action
        : gave
          ? 'ANSWER'
          : 'OTHER';
    outcomes[index] = {
      ...caseFields({ ...item, text: item.message }, run),
      expected: item.action,
      decided: readAt(minConfidence),
      model_label: failure === null ? readAt(0) : null,
      confidence: failure === null ? reading.confidence : null,
      failure,
      reason: '',
      detail: {
        values: toJson(reading.values),
        fields,
        expected_values: Object.fromEntries(Object.entries(item.expected)),
      },
    };
    options.onProgress(++done, cases.length);
  });
  const results = outcomes.filter((o): o is ParameterOutcome => o !== undefined);
  const summary = summarizeStage(results, {
    labels: ['ANSWER', 'OTHER'],
    calibrated: false,
    threshold: null,
    target: options.target,
  });
  const all = results.flatMap((o) => Object.values(o.detail.fields));
  const count = (...kinds: FieldResult[]) => all.filter((kind) => kinds.includes(kind)).length;
  const measures = [
    {
      measure: 'replies with every field right',
      value: ratio(
        results.filter((o) =>
          Object.values(o.detail.fields).every((kind) => kind === 'right' || kind === 'right_absent'),
        ).length,
        results.length,
      ),
    },
    {
      measure: 'wrong or invented values, of the values extracted (a wrong order would be acted on)',
      value: ratio(count('wrong', 'invented'), count('right', 'wrong', 'invented')),
    },
    {
      measure: 'expected values found (recall)',
      value: ratio(count('right'), count('right', 'wrong', 'missed')),
    },
    {
      measure: 'extracted values that are right (precision)',
      value: ratio(count('right'), count('right', 'wrong', 'invented')),
    },
  ];
  const fieldNames = [...new Set(results.flatMap((o) => Object.keys(o.detail.fields)))].sort();
  return {
    name: 'parameter_extraction',
    title: 'Parameter extraction',
    method:
      'Every reply to a parameter question through the real `ParameterExtractor.read` (each field’s ' +
      '`extract_pattern` first, then the model for the rest), with the fields and alternatives the transaction ' +
      'engine gives it. Each missing field is compared with its expected value: identifiers exactly (letters and ' +
      'digits, accents and case aside), free text by the expected terms it contains.',
    models: stageModels(app.get(LlmService), [flow.settings.extraction_profile]),
    dataset: datasetInfo(
      set,
      (c) => c.language,
      (c) => c.action,
      options.root,
    ),
    summary,
    headline: measures,
    extra: { measures },
    sections: [
      {
        title: 'Values by field',
        lines: [
          table(
            ['field', 'right', 'wrong', 'missed', 'invented', 'rightly absent'],
            fieldNames.map((field) => {
              const kinds = results.flatMap((o) => (o.detail.fields[field] ? [o.detail.fields[field]] : []));
              const n = (kind: FieldResult) => String(kinds.filter((k) => k === kind).length);
              return [field, n('right'), n('wrong'), n('missed'), n('invented'), n('right_absent')];
            }),
          ),
          '',
        ],
      },
    ],
    notes: [
      'The action’s confidence gates only ABANDON and REPLACE (confirmation_min_confidence), not the values: no ' +
        'threshold sweep applies; the transaction control stage sweeps it.',
    ],
    cases: results,
    duration_ms: Math.round(performance.now() - started),
  };
}
