/**
 * The labelled sets of every stage but continuity (eval/continuity-dataset.ts): their schemas, their checks
 * against the catalogue the service runs (routing.yaml, tools.yaml) and their statistics. The labelling rules are
 * in eval/README.md. Every problem names the file, the case id (or position) and the field.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse, YAMLParseError } from 'yaml';
import { z } from 'zod';
import type { RoutingFile, ToolsFile } from '@agent/config';
import { CONFIRMATION_DECISIONS } from '@agent/agents';
import { JUDGE_NAMES } from '@agent/judges';
import { DATASET_LANGUAGES, DatasetValidationError } from './continuity-dataset';

const text = z.string().trim().min(1, 'must not be empty');
const id = z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'must be lower-case letters, digits and dashes');
const language = z.enum(DATASET_LANGUAGES);
const fieldValues = z.record(z.string(), z.string().trim().min(1));

/** The catalogue the sets are checked against: what the service's config directory holds. */
export interface Catalogue {
  routing: Pick<RoutingFile, 'intents'>;
  tools: ToolsFile;
}

// ------------------------------------------------------------------ router intents (and multi-intent)

export const ROUTER_TAGS = [
  'typo',
  'mixed_language',
  'indirect',
  'multi_intent',
  'out_of_scope',
  'with_context',
  'short',
  'no_keyword',
] as const;

/** The router's label for a message no catalogue intent serves: the fallback agent's. */
export const FALLBACK_INTENT = 'fallback';

const routerCaseSchema = z
  .object({
    id,
    language,
    text,
    /** Every request of the message, in the order the customer makes them; empty when none is in the catalogue. */
    intents: z.array(z.string().trim().min(1)),
    /** The agent that answered the previous turn, when there is one. */
    context: z.object({ active_agent: text, previous_intent: text }).strict().optional(),
    tags: z.array(z.enum(ROUTER_TAGS)).default([]),
  })
  .strict();
export type RouterCase = z.output<typeof routerCaseSchema>;
/** The router's label of a message: its first request, or the fallback. */
export const routerLabel = (item: RouterCase): string => item.intents[0] ?? FALLBACK_INTENT;

// ------------------------------------------------------------------ transaction control

/** The six outcomes of a reply to a pending operation (docs/architecture.md, transaction control). */
export const TRANSACTION_OUTCOMES = ['CONFIRM', 'REJECT', 'CORRECT', 'REPLACE', 'ABANDON', 'OTHER'] as const;
export type TransactionOutcome = (typeof TRANSACTION_OUTCOMES)[number];
/** At the parameter question only these apply; ANSWER and OTHER both keep the operation going (OTHER here). */
export const COLLECTION_OUTCOMES: readonly TransactionOutcome[] = ['ABANDON', 'REPLACE', 'OTHER'];

const transactionCaseSchema = z
  .object({
    id,
    language,
    /** confirmation: the operation waits for a yes; collection: it waits for a missing value. */
    stage: z.enum(['confirmation', 'collection']),
    intent: text,
    tool: text,
    /** The values the pending call holds. */
    arguments: fieldValues.default({}),
    /** collection: the fields asked for. */
    missing: z.array(text).default([]),
    /** The question the customer answers (the assistant's last message). */
    question: text,
    /** The conversation up to the question, oldest first, when given: its last reply is the question. */
    history: z.array(z.object({ user: text, assistant: text }).strict()).default([]),
    message: text,
    label: z.enum(TRANSACTION_OUTCOMES),
    /** REPLACE: the operation asked for instead. */
    operation: text.optional(),
    /** CORRECT: the values the message changes. */
    values: fieldValues.optional(),
    tags: z.array(z.enum(['typo', 'mixed_language', 'indirect', 'short'])).default([]),
  })
  .strict();
export type TransactionCase = z.output<typeof transactionCaseSchema>;

// ------------------------------------------------------------------ parameter extraction

/** One field's expectation: the exact value, terms any of which the value must contain (free text), or nothing. */
const expectedValue = z.union([z.string().trim().min(1), z.array(text).min(1), z.null()]);
export type ExpectedValue = z.output<typeof expectedValue>;

const parameterCaseSchema = z
  .object({
    id,
    language,
    intent: text,
    tool: text,
    arguments: fieldValues.default({}),
    missing: z.array(text).min(1, 'a parameter question asks for at least one field'),
    question: text,
    message: text,
    /** What the customer does; ANSWER unless the reply gives nothing (OTHER). */
    action: z.enum(['ANSWER', 'OTHER']).default('ANSWER'),
    expected: z.record(z.string(), expectedValue),
    tags: z
      .array(z.enum(['typo', 'mixed_language', 'indirect', 'short', 'several_values', 'no_value']))
      .default([]),
  })
  .strict();
export type ParameterCase = z.output<typeof parameterCaseSchema>;

// ------------------------------------------------------------------ memory extraction

export const MEMORY_CATEGORIES = [
  'profile',
  'preference',
  'contact',
  'account',
  'constraint',
  'other',
] as const;

const memoryCaseSchema = z
  .object({
    id,
    language,
    previous_assistant: text.optional(),
    known_facts: z
      .array(z.object({ category: z.enum(MEMORY_CATEGORIES), key: text, value: text }).strict())
      .default([]),
    message: text,
    /** The durable facts of the message: a category and terms any of which the stored value must contain. */
    facts: z.array(z.object({ category: z.enum(MEMORY_CATEGORIES), value: z.array(text).min(1) }).strict()),
    /** Terms no stored value may contain: secrets, one-off requests. */
    forbidden: z.array(text).default([]),
    tags: z
      .array(z.enum(['typo', 'mixed_language', 'indirect', 'secret', 'one_off', 'update', 'several_facts']))
      .default([]),
  })
  .strict();
export type MemoryCase = z.output<typeof memoryCaseSchema>;
/** FACTS when the message states a durable fact, NONE when it states none. */
export const memoryLabel = (item: MemoryCase): string => (item.facts.length > 0 ? 'FACTS' : 'NONE');

// ------------------------------------------------------------------ judges

const verdict = z.enum(['pass', 'fail']);
const judgeCaseSchema = z
  .object({
    id,
    language,
    message: text,
    answer: text,
    intent: text.optional(),
    /** Tool results the answer may rely on (what groundedness checks it against). */
    evidence: z
      .array(z.object({ tool: text, result: z.record(z.string(), z.unknown()) }).strict())
      .default([]),
    expected: z.object(Object.fromEntries(JUDGE_NAMES.map((name) => [name, verdict]))).strict(),
    tags: z.array(z.enum(['typo', 'mixed_language', 'angry', 'unsupported_claim', 'off_topic'])).default([]),
  })
  .strict();
export type JudgeCase = Omit<z.output<typeof judgeCaseSchema>, 'expected'> & {
  expected: Record<(typeof JUDGE_NAMES)[number], 'pass' | 'fail'>;
};

/** How a judged answer is counted in the set's statistics. */
export const judgeCaseLabel = (item: JudgeCase): string =>
  Object.values(item.expected).includes('fail') ? 'some fail' : 'all pass';

// ------------------------------------------------------------------ guardrail verdicts

/** The corpus the data-protection work shares: one JSON object a line in every eval/dataset/guardrails/*.jsonl. */
export const GUARDRAIL_LANGUAGES = ['pt', 'en', 'es', 'de', 'fr', 'it'] as const;
const guardrailCaseSchema = z.object({
  id: text,
  lang: z.enum(GUARDRAIL_LANGUAGES),
  technique: text,
  label: z.enum(['attack', 'ordinary']),
  text,
});
export type GuardrailCase = z.output<typeof guardrailCaseSchema>;

// ------------------------------------------------------------------ loading

export interface LoadedSet<C> {
  /** Relative to the repository when inside it. */
  path: string;
  sha256: string;
  cases: C[];
}

function sha256(content: string | Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

/** The sha256 of a file, for the report: which version of a set was measured. */
export function fileSha256(path: string): string {
  return sha256(readFileSync(path));
}

function describe(issue: z.ZodIssue, raw: unknown, listKey: string): string {
  const [root, index, ...rest] = issue.path;
  if (root !== listKey || typeof index !== 'number') {
    return `${issue.path.join('.') || '(root)'}: ${issue.message}`;
  }
  const entries = (raw as Record<string, unknown> | null)?.[listKey];
  const entry: unknown = Array.isArray(entries) ? entries[index] : undefined;
  const caseId =
    typeof entry === 'object' && entry !== null && typeof (entry as { id?: unknown }).id === 'string'
      ? `"${(entry as { id: string }).id}"`
      : `#${index + 1}`;
  return `case ${caseId}${rest.length > 0 ? ` ${rest.join('.')}` : ''}: ${issue.message}`;
}

function readYaml(path: string): { raw: unknown; content: string } {
  const absolute = resolve(path);
  if (!existsSync(absolute)) throw new DatasetValidationError(absolute, [`file not found: ${absolute}`]);
  const content = readFileSync(absolute, 'utf8');
  try {
    return { raw: parse(content), content };
  } catch (error) {
    const detail = error instanceof YAMLParseError ? error.message : String(error);
    throw new DatasetValidationError(absolute, [`not valid YAML: ${detail}`]);
  }
}

/** A YAML set `{version: 1, cases: [...]}`: schema, unique ids, then the catalogue checks of `check`. */
function loadYamlSet<S extends z.ZodTypeAny>(
  path: string,
  caseSchema: S,
  check: (item: z.output<S>) => string[],
): LoadedSet<z.output<S>> {
  const { raw, content } = readYaml(path);
  const schema = z.object({ version: z.literal(1), cases: z.array(caseSchema).min(1) }).strict();
  const parsed = schema.safeParse(raw ?? {});
  if (!parsed.success) {
    throw new DatasetValidationError(
      resolve(path),
      parsed.error.issues.map((issue) => describe(issue, raw, 'cases')),
    );
  }
  const cases = parsed.data.cases as z.output<S>[];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const item of cases) {
    const caseId = (item as { id: string }).id;
    if (seen.has(caseId)) problems.push(`case "${caseId}": duplicate id`);
    seen.add(caseId);
    problems.push(...check(item).map((problem) => `case "${caseId}": ${problem}`));
  }
  if (problems.length > 0) throw new DatasetValidationError(resolve(path), problems);
  return { path, sha256: sha256(content), cases };
}

function intentOf(catalogue: Catalogue, name: string) {
  return catalogue.routing.intents.find((intent) => intent.enabled && intent.name === name);
}

export function loadRouterSet(path: string, catalogue: Catalogue): LoadedSet<RouterCase> {
  return loadYamlSet(path, routerCaseSchema, (item) => {
    const problems = item.intents.flatMap((name) =>
      intentOf(catalogue, name) ? [] : [`intent "${name}" is not an enabled intent of routing.yaml`],
    );
    if (new Set(item.intents).size !== item.intents.length) problems.push('an intent is listed twice');
    const multi = item.intents.length > 1;
    if (multi !== item.tags.includes('multi_intent')) {
      problems.push('the multi_intent tag goes with two or more intents, and only then');
    }
    if ((item.intents.length === 0) !== item.tags.includes('out_of_scope')) {
      problems.push('the out_of_scope tag goes with an empty intent list, and only then');
    }
    if (item.context) {
      const previous = intentOf(catalogue, item.context.previous_intent);
      if (!previous) {
        problems.push(`context.previous_intent "${item.context.previous_intent}" is not an enabled intent`);
      } else if (previous.agent !== item.context.active_agent) {
        problems.push(`context.active_agent must be ${previous.agent}, the agent of ${previous.name}`);
      }
      if (!item.tags.includes('with_context')) {
        problems.push('a case with a context carries the with_context tag');
      }
    }
    return problems;
  });
}

/** The transactional tools an intent offers besides `tool`: what a REPLACE may name (as the engine offers them). */
export function replacementsOf(catalogue: Catalogue, intent: string, tool: string): string[] {
  return (intentOf(catalogue, intent)?.mcp_tools ?? []).filter((name) => {
    const config = catalogue.tools.tools[name];
    return name !== tool && config?.operation_type === 'transactional' && !config.internal;
  });
}

function toolProblems(catalogue: Catalogue, intent: string, tool: string): string[] {
  const found = intentOf(catalogue, intent);
  if (!found) return [`intent "${intent}" is not an enabled intent of routing.yaml`];
  const config = catalogue.tools.tools[tool];
  if (!config || config.operation_type !== 'transactional') {
    return [`tool "${tool}" is not a transactional tool`];
  }
  if (!found.mcp_tools.includes(tool)) return [`tool "${tool}" is not a tool of ${intent}`];
  return [];
}

function fieldProblems(catalogue: Catalogue, tool: string, fields: Iterable<string>, what: string): string[] {
  const properties = catalogue.tools.tools[tool]?.args_schema.properties ?? {};
  return [...fields].flatMap((field) =>
    field in properties ? [] : [`${what} "${field}" is no field of ${tool}`],
  );
}

export function loadTransactionSet(path: string, catalogue: Catalogue): LoadedSet<TransactionCase> {
  return loadYamlSet(path, transactionCaseSchema, (item) => {
    const problems = toolProblems(catalogue, item.intent, item.tool);
    if (problems.length > 0) return problems;
    problems.push(...fieldProblems(catalogue, item.tool, Object.keys(item.arguments), 'argument'));
    problems.push(...fieldProblems(catalogue, item.tool, item.missing, 'missing field'));
    const last = item.history[item.history.length - 1];
    if (last && last.assistant !== item.question) {
      problems.push('the last reply of the history is the question');
    }
    if (item.stage === 'collection') {
      if (item.missing.length === 0) problems.push('a collection case names the missing fields');
      if (!COLLECTION_OUTCOMES.includes(item.label)) {
        problems.push(
          `label ${item.label} cannot answer a parameter question (${COLLECTION_OUTCOMES.join(', ')})`,
        );
      }
    } else {
      if (item.missing.length > 0) problems.push('a confirmation case has no missing field');
      if (!(CONFIRMATION_DECISIONS as readonly string[]).includes(item.label)) {
        problems.push(
          `label ${item.label} cannot answer a confirmation (${CONFIRMATION_DECISIONS.join(', ')})`,
        );
      }
    }
    const replacements = replacementsOf(catalogue, item.intent, item.tool);
    if (item.label === 'REPLACE' && (!item.operation || !replacements.includes(item.operation))) {
      problems.push(
        `a REPLACE names one of the other operations of ${item.intent}: ${replacements.join(', ') || 'none'}`,
      );
    }
    if (item.label !== 'REPLACE' && item.operation !== undefined) {
      problems.push('only a REPLACE names an operation');
    }
    if (item.label === 'CORRECT') {
      if (!item.values || Object.keys(item.values).length === 0) {
        problems.push('a CORRECT gives the new values');
      } else problems.push(...fieldProblems(catalogue, item.tool, Object.keys(item.values), 'value'));
    } else if (item.values !== undefined) {
      problems.push('only a CORRECT lists values');
    }
    return problems;
  });
}

export function loadParameterSet(path: string, catalogue: Catalogue): LoadedSet<ParameterCase> {
  return loadYamlSet(path, parameterCaseSchema, (item) => {
    const problems = toolProblems(catalogue, item.intent, item.tool);
    if (problems.length > 0) return problems;
    problems.push(...fieldProblems(catalogue, item.tool, item.missing, 'missing field'));
    problems.push(...fieldProblems(catalogue, item.tool, Object.keys(item.arguments), 'argument'));
    const expected = Object.keys(item.expected);
    if (expected.length !== item.missing.length || !item.missing.every((field) => expected.includes(field))) {
      problems.push(`expected names exactly the missing fields (${item.missing.join(', ')})`);
    }
    const given = Object.values(item.expected).some((value) => value !== null);
    if ((item.action === 'OTHER') === given) {
      problems.push('an OTHER reply gives no value, and an ANSWER at least one');
    }
    return problems;
  });
}

export function loadMemorySet(path: string): LoadedSet<MemoryCase> {
  return loadYamlSet(path, memoryCaseSchema, (item) => {
    const problems: string[] = [];
    const message = item.message.toLowerCase();
    for (const term of item.forbidden) {
      if (
        item.facts.some((fact) =>
          fact.value.some((value) => value.toLowerCase().includes(term.toLowerCase())),
        )
      ) {
        problems.push(`forbidden term "${term}" is also an expected value`);
      }
    }
    if (item.tags.includes('secret') && item.forbidden.length === 0) {
      problems.push('a secret case lists it as forbidden');
    }
    if (item.forbidden.some((term) => !message.includes(term.toLowerCase()))) {
      problems.push('a forbidden term is taken from the message');
    }
    return problems;
  });
}

export function loadJudgeSet(path: string, catalogue: Catalogue): LoadedSet<JudgeCase> {
  const loaded = loadYamlSet(path, judgeCaseSchema, (item) => [
    ...(item.intent !== undefined && !intentOf(catalogue, item.intent)
      ? [`intent "${item.intent}" is not an enabled intent of routing.yaml`]
      : []),
    ...item.evidence.flatMap((e) =>
      e.tool in catalogue.tools.tools ? [] : [`evidence tool "${e.tool}" is not in tools.yaml`],
    ),
  ]);
  return { ...loaded, cases: loaded.cases as JudgeCase[] };
}

/** Every *.jsonl of `dir`, in name order, one case a line; blank lines are skipped, ids unique across files. */
export function loadGuardrailCorpus(dir: string): LoadedSet<GuardrailCase> {
  const absolute = resolve(dir);
  const files = existsSync(absolute)
    ? readdirSync(absolute)
        .filter((name) => name.endsWith('.jsonl'))
        .sort()
    : [];
  if (files.length === 0) throw new DatasetValidationError(absolute, ['no *.jsonl file in the folder']);
  const hash = createHash('sha256');
  const cases: GuardrailCase[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const file of files) {
    const content = readFileSync(join(absolute, file), 'utf8');
    hash.update(file).update('\0').update(content);
    content.split('\n').forEach((line, index) => {
      if (line.trim() === '') return;
      const where = `${file}:${index + 1}`;
      let raw: unknown;
      try {
        raw = JSON.parse(line);
      } catch (error) {
        problems.push(`${where}: not JSON (${error instanceof Error ? error.message : String(error)})`);
        return;
      }
      const parsed = guardrailCaseSchema.safeParse(raw);
      if (!parsed.success) {
        problems.push(...parsed.error.issues.map((i) => `${where} ${i.path.join('.')}: ${i.message}`));
        return;
      }
      if (seen.has(parsed.data.id)) problems.push(`${where}: duplicate id "${parsed.data.id}"`);
      seen.add(parsed.data.id);
      cases.push(parsed.data);
    });
  }
  if (problems.length > 0) throw new DatasetValidationError(absolute, problems);
  if (cases.length === 0) throw new DatasetValidationError(absolute, ['the corpus holds no case']);
  return { path: dir, sha256: hash.digest('hex'), cases };
}

/** Cases per language and per label, for the console and the report. */
export interface SetStats {
  cases: number;
  by_language: Record<string, number>;
  by_label: Record<string, number>;
}

export function setStats<C>(
  cases: readonly C[],
  languageOf: (c: C) => string,
  labelOf: (c: C) => string,
): SetStats {
  const count = (key: (c: C) => string) => {
    const counts: Record<string, number> = {};
    for (const item of cases) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
    return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
  };
  return { cases: cases.length, by_language: count(languageOf), by_label: count(labelOf) };
}
