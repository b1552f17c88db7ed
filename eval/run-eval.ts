/**
 * npm run eval — every model-backed stage of the runtime measured on the labelled sets of eval/dataset, against
 * the model endpoint the service is configured with (LLM_PROVIDER, LLM_BASE_URL, LLM_MODEL, LLM_SMALL_MODEL, the
 * profiles file), through the service's own stage code. Writes a markdown, JSON and SVG report under
 * eval/results/; `--compare` sets two runs side by side. eval/README.md explains the options and the report.
 */
import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  ConfigFileError,
  ConfigFilesService,
  EnvValidationError,
  loadYamlFile,
  parseEnvNamespace,
  routingFileSchema,
  toolsFileSchema,
} from '@agent/config';
import { LlmService } from '@agent/llm';
import { consoleTable, reportDirectory } from '../bench/lib';
import { REPO_ROOT } from '../test/support/repo-root';
import { datasetStats, DatasetValidationError, loadDataset } from './continuity-dataset';
import {
  Catalogue,
  fileSha256,
  GuardrailCase,
  JudgeCase,
  judgeCaseLabel,
  loadGuardrailCorpus,
  loadJudgeSet,
  loadMemorySet,
  loadParameterSet,
  loadRouterSet,
  loadTransactionSet,
  LoadedSet,
  MemoryCase,
  memoryLabel,
  ParameterCase,
  RouterCase,
  routerLabel,
  setStats,
  SetStats,
  TransactionCase,
} from './datasets';
import { createEvalContext, EVAL_OVERRIDES, EvalContext } from './eval-context';
import { formatRate } from './markdown';
import {
  EvalMeta,
  EvalReport,
  readReport,
  renderMarkdown,
  REPORT_FORMAT,
  ReportFileError,
  writeComparison,
  writeReport,
} from './report';
import { STAGE_NAMES, StageName, StageResult } from './stage';
import { ContinuitySet, runContinuityStage } from './stages/continuity';
import { StageRunOptions } from './stages/common';
import { runGuardrailStage } from './stages/guardrails';
import { runJudgeStage } from './stages/judges';
import { runMemoryStage } from './stages/memory';
import { multiIntentStage, routerStage, RouterRun, runRouterCases } from './stages/router';
import { runParameterStage, runTransactionStage } from './stages/transactions';

/** The stages with a threshold to recommend: the rate of their costly error, unless --target says otherwise. */
export const DEFAULT_TARGETS: Readonly<Partial<Record<StageName, number>>> = {
  continuity: 0.02,
  router: 0.05,
  guardrails: 0.05,
  transaction_control: 0.01,
  memory_extraction: 0.05,
  judges: 0.1,
};

export const USAGE = `Usage: npm run eval -- [options]

Measures the runtime's model-backed stages on the labelled sets of eval/dataset, through the service's own
stage code, against the endpoint the service is configured with (LLM_PROVIDER, LLM_BASE_URL, LLM_API_KEY,
LLM_MODEL, LLM_SMALL_MODEL, LLM_PROFILES_PATH, CONFIG_DIR and the stages' variables), and writes a markdown,
JSON and SVG report. Without an endpoint it validates the sets and prints their statistics.

  --stage LIST           stages to run, comma-separated (default: all):
                         ${STAGE_NAMES.join(', ')}
  --limit N              only the first N cases of each set (a plumbing check, not a measure)
  --target R             costly-error rate the recommended thresholds keep under, 0..1, for every stage;
  --target STAGE=R       or for one stage (repeatable). Defaults: ${Object.entries(DEFAULT_TARGETS)
    .map(([stage, rate]) => `${stage} ${rate}`)
    .join(', ')}
  --compare FILE         a report JSON of an earlier run: this run is set beside it (B against A);
                         given twice, the two files are compared and nothing runs
  --label NAME           names the run in the report and its file names (default: the models)
  --concurrency N        cases evaluated at once (default 4; lower it for rate-limited endpoints)
  --out DIR              report directory (default eval/results/, untracked)
  --update-report        write to the committed eval/reports/ instead
  --datasets DIR         the labelled sets (default eval/dataset)
  --base-url URL         for this run, as LLM_BASE_URL
  --api-key KEY          for this run, as LLM_API_KEY (never written to the report)
  --model NAME           for this run, as LLM_MODEL
  --small-model NAME     for this run, as LLM_SMALL_MODEL
  --help                 this text

Exit codes: 0 done (or validation only), 1 invalid set, config or report file, or every model call failed,
2 usage error.`;

export interface CliIo {
  out: (line: string) => void;
  err: (line: string) => void;
}

export class UsageError extends Error {}

export interface CliOptions {
  stages: StageName[];
  limit: number | undefined;
  /** Per stage with a threshold. */
  targets: Partial<Record<StageName, number>>;
  compare: string[];
  label: string | undefined;
  concurrency: number;
  out: string;
  datasets: string;
  /** Variables this run sets on top of the environment. */
  env: Record<string, string>;
  help: boolean;
}

function rate(name: string, value: string): number {
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed) || parsed < 0 || parsed > 1) {
    throw new UsageError(`--${name} must be a rate from 0 to 1, got "${value}"`);
  }
  return parsed;
}

function integer(
  name: string,
  value: string | undefined,
  fallback: number | undefined,
  min: number,
  max: number,
) {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isInteger(parsed) || parsed < min || parsed > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}, got "${value}"`);
  }
  return parsed;
}

function stageName(value: string): StageName {
  const name = STAGE_NAMES.find((stage) => stage === value.trim());
  if (!name) throw new UsageError(`unknown stage "${value}" (stages: ${STAGE_NAMES.join(', ')})`);
  return name;
}

const CLI_OPTIONS = {
  stage: { type: 'string', multiple: true },
  limit: { type: 'string' },
  target: { type: 'string', multiple: true },
  compare: { type: 'string', multiple: true },
  label: { type: 'string' },
  concurrency: { type: 'string' },
  out: { type: 'string' },
  'update-report': { type: 'boolean' },
  datasets: { type: 'string' },
  'base-url': { type: 'string' },
  'api-key': { type: 'string' },
  model: { type: 'string' },
  'small-model': { type: 'string' },
  help: { type: 'boolean' },
} as const;

/** node:util's parseArgs with the options above, a parse error as a UsageError. */
function parsedArgs(argv: readonly string[]) {
  try {
    return parseArgs({ args: [...argv], options: CLI_OPTIONS, allowPositionals: false, strict: true }).values;
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

export function parseCli(argv: readonly string[], root: string): CliOptions {
  const values = parsedArgs(argv);
  const selected = (values.stage ?? []).flatMap((list) => list.split(',').filter((s) => s.trim() !== ''));
  const stages =
    selected.length === 0 ? [...STAGE_NAMES] : STAGE_NAMES.filter((s) => selected.map(stageName).includes(s));
  const targets: Partial<Record<StageName, number>> = { ...DEFAULT_TARGETS };
  for (const target of values.target ?? []) {
    const [name, value] = target.includes('=') ? target.split('=', 2) : [undefined, target];
    if (name === undefined) {
      for (const stage of Object.keys(targets)) targets[stageName(stage)] = rate('target', value);
    } else targets[stageName(name)] = rate('target', value);
  }
  if ((values.compare ?? []).length > 2) throw new UsageError('--compare takes one or two report files');
  const env: Record<string, string> = {};
  const set = (key: string, value: string | undefined) => {
    if (value !== undefined && value.trim() !== '') env[key] = value.trim();
  };
  set('LLM_BASE_URL', values['base-url']);
  set('LLM_API_KEY', values['api-key']);
  set('LLM_MODEL', values.model);
  set('LLM_SMALL_MODEL', values['small-model']);
  return {
    stages,
    limit: integer('limit', values.limit, undefined, 1, 1_000_000),
    targets,
    compare: (values.compare ?? []).map((file) => resolve(file)),
    label: values.label?.trim() || undefined,
    concurrency: integer('concurrency', values.concurrency, 4, 1, 64) ?? 4,
    out: resolve(values.out ?? reportDirectory('eval', values['update-report'] === true, root)),
    datasets: resolve(values.datasets ?? join(root, 'eval', 'dataset')),
    env,
    help: values.help === true,
  };
}

/** The endpoint without credentials or query, for the report. */
function displayUrl(baseUrl: string | undefined): string | null {
  if (baseUrl === undefined) return null;
  const url = new URL(baseUrl);
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

function gitCommit(root: string): string | null {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
}

/** The labelled sets the selected stages need, loaded and validated against the service's catalogue. */
interface Sets {
  continuity?: ContinuitySet;
  router?: LoadedSet<RouterCase>;
  guardrails?: LoadedSet<GuardrailCase>;
  transaction_control?: LoadedSet<TransactionCase>;
  parameter_extraction?: LoadedSet<ParameterCase>;
  memory_extraction?: LoadedSet<MemoryCase>;
  judges?: LoadedSet<JudgeCase>;
}

function loadSets(
  stages: readonly StageName[],
  dir: string,
  configDir: string,
): { sets: Sets; stats: [string, SetStats][] } {
  const routing = loadYamlFile(join(configDir, 'routing.yaml'), routingFileSchema);
  const tools = loadYamlFile(join(configDir, 'tools.yaml'), toolsFileSchema);
  const catalogue: Catalogue = { routing, tools };
  const sets: Sets = {};
  const stats: [string, SetStats][] = [];
  const wants = (...names: StageName[]) => names.some((name) => stages.includes(name));
  if (wants('continuity')) {
    const path = join(dir, 'continuity.yaml');
    const dataset = loadDataset(path, routing);
    sets.continuity = { path, sha256: fileSha256(path), dataset, catalogue: routing };
    const s = datasetStats(dataset);
    const byLanguage = Object.fromEntries(
      Object.entries(s.by_language)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([l, n]) => [l, n.turns]),
    );
    stats.push(['continuity', { cases: s.turns, by_language: byLanguage, by_label: s.by_label }]);
  }
  if (wants('router', 'multi_intent')) {
    sets.router = loadRouterSet(join(dir, 'router.yaml'), catalogue);
    stats.push(['router', setStats(sets.router.cases, (c) => c.language, routerLabel)]);
  }
  if (wants('guardrails')) {
    sets.guardrails = loadGuardrailCorpus(join(dir, 'guardrails'));
    stats.push([
      'guardrails',
      setStats(
        sets.guardrails.cases,
        (c) => c.lang,
        (c) => c.label,
      ),
    ]);
  }
  if (wants('transaction_control')) {
    sets.transaction_control = loadTransactionSet(join(dir, 'transactions.yaml'), catalogue);
    stats.push([
      'transaction_control',
      setStats(
        sets.transaction_control.cases,
        (c) => c.language,
        (c) => c.label,
      ),
    ]);
  }
  if (wants('parameter_extraction')) {
    sets.parameter_extraction = loadParameterSet(join(dir, 'parameters.yaml'), catalogue);
    stats.push([
      'parameter_extraction',
      setStats(
        sets.parameter_extraction.cases,
        (c) => c.language,
        (c) => c.action,
      ),
    ]);
  }
  if (wants('memory_extraction')) {
    sets.memory_extraction = loadMemorySet(join(dir, 'memory.yaml'));
    stats.push(['memory_extraction', setStats(sets.memory_extraction.cases, (c) => c.language, memoryLabel)]);
  }
  if (wants('judges')) {
    sets.judges = loadJudgeSet(join(dir, 'judges.yaml'), catalogue);
    stats.push(['judges', setStats(sets.judges.cases, (c) => c.language, judgeCaseLabel)]);
  }
  return { sets, stats };
}

function printStats(stats: readonly [string, SetStats][], io: CliIo): void {
  for (const [stage, s] of stats) {
    const list = (counts: Record<string, number>) =>
      Object.entries(counts)
        .map(([key, n]) => `${key} ${n}`)
        .join(', ');
    io.out(`  ${stage}: ${s.cases} cases (${list(s.by_language)}); ${list(s.by_label)}`);
  }
}

/** Progress on the console: every tenth of a stage's cases, and its last. */
function progress(stage: string, io: CliIo): (done: number, total: number) => void {
  let shown = -1;
  return (done, total) => {
    const tenth = Math.floor((done * 10) / Math.max(1, total));
    if (tenth !== shown || done === total) {
      shown = tenth;
      io.err(`  [${stage}] ${done}/${total}`);
    }
  };
}

/** llm_profiles.yaml's price table as the report records it (cached input priced as input when not given). */
function priceTable(files: ConfigFilesService, root: string): EvalMeta['prices'] {
  const prices = files.llmProfiles.prices;
  return {
    path: relative(root, files.llmProfilesPath) || files.llmProfilesPath,
    currency: prices?.currency ?? null,
    models: Object.fromEntries(
      Object.entries(prices?.models ?? {}).map(([model, p]) => [
        model,
        { input: p.input, cached_input: p.cached_input ?? p.input, output: p.output },
      ]),
    ),
  };
}

async function runStages(
  options: CliOptions,
  sets: Sets,
  context: EvalContext,
  root: string,
  io: CliIo,
): Promise<StageResult[]> {
  const llm = context.app.get(LlmService);
  const base = (stage: StageName): StageRunOptions => ({
    context,
    priceOf: (profile) => llm.priceOf(profile),
    concurrency: options.concurrency,
    limit: options.limit,
    // A stage without a threshold has no costly error to keep under a target.
    target: options.targets[stage] ?? 0,
    root,
    onProgress: progress(stage, io),
  });
  const results: StageResult[] = [];
  const done = (result: StageResult) => {
    results.push(result);
    const s = result.summary;
    io.out(
      `${result.name}: accuracy ${formatRate(s.accuracy)}, invalid output ${formatRate(s.invalid_output)}` +
        (s.threshold
          ? `, ${s.threshold.costly_error.split(':')[0]} ${formatRate(s.threshold.at_configured.costly)}`
          : ''),
    );
  };
  let routerRun: RouterRun | undefined;
  for (const stage of options.stages) {
    io.err(`${stage} ...`);
    switch (stage) {
      case 'continuity':
        if (sets.continuity) done(await runContinuityStage(sets.continuity, base(stage)));
        break;
      case 'router':
      case 'multi_intent': {
        if (!sets.router) break;
        routerRun ??= await runRouterCases(sets.router, base('router'));
        done(
          stage === 'router'
            ? routerStage(routerRun, sets.router, base(stage))
            : multiIntentStage(routerRun, sets.router, base(stage)),
        );
        break;
      }
      case 'guardrails':
        if (sets.guardrails) done(await runGuardrailStage(sets.guardrails, base(stage)));
        break;
      case 'transaction_control':
        if (sets.transaction_control) done(await runTransactionStage(sets.transaction_control, base(stage)));
        break;
      case 'parameter_extraction':
        if (sets.parameter_extraction) done(await runParameterStage(sets.parameter_extraction, base(stage)));
        break;
      case 'memory_extraction':
        if (sets.memory_extraction) done(await runMemoryStage(sets.memory_extraction, base(stage)));
        break;
      case 'judges':
        if (sets.judges) done(await runJudgeStage(sets.judges, base(stage)));
        break;
    }
  }
  return results;
}

/** The CLI; returns the exit code (0 done, 1 invalid input or every call failed, 2 usage error). */
export async function main(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  io: CliIo = { out: (line) => console.log(line), err: (line) => console.error(line) },
  root: string = REPO_ROOT,
): Promise<number> {
  let options: CliOptions;
  try {
    options = parseCli(argv, root);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.err(`eval: ${error.message}`);
    io.err(USAGE);
    return 2;
  }
  if (options.help) {
    io.out(USAGE);
    return 0;
  }
  const generatedAt = new Date().toISOString();
  if (options.compare.length === 2) return compareFiles(options, generatedAt, io);

  const serviceEnv: NodeJS.ProcessEnv = { ...env, ...options.env };
  let configDir: string;
  let sets: Sets;
  try {
    configDir = resolve(parseEnvNamespace('app', serviceEnv).CONFIG_DIR);
    parseEnvNamespace('llm', serviceEnv);
    const loaded = loadSets(options.stages, options.datasets, configDir);
    sets = loaded.sets;
    io.out(`Labelled sets in ${relative(root, options.datasets) || options.datasets} are valid:`);
    printStats(loaded.stats, io);
  } catch (error) {
    if (
      error instanceof DatasetValidationError ||
      error instanceof ConfigFileError ||
      error instanceof EnvValidationError
    ) {
      io.err(error.message);
      return 1;
    }
    throw error;
  }

  const started = performance.now();
  const context = await createEvalContext(serviceEnv, configDir);
  try {
    const llm = context.app.get(LlmService);
    if (!llm.describe().configured) {
      io.out('');
      io.out('No model endpoint is configured, so nothing was evaluated. Configure it as for the service:');
      io.out('  LLM_BASE_URL=URL LLM_MODEL=NAME [LLM_SMALL_MODEL=NAME] [LLM_API_KEY=KEY] npm run eval');
      io.out(
        '  (or LLM_PROVIDER=openai LLM_API_KEY=KEY; --base-url, --model, --small-model, --api-key for one run)',
      );
      return 0;
    }
    const llmEnv = parseEnvNamespace('llm', serviceEnv);
    io.out('');
    io.out(`Evaluating ${options.stages.join(', ')} (concurrency ${options.concurrency}) ...`);
    const stages = await runStages(options, sets, context, root, io);
    const models = [...new Set(stages.flatMap((stage) => stage.models.map((m) => m.model ?? 'none')))];
    const report: EvalReport = {
      format: REPORT_FORMAT,
      meta: {
        generated_at: generatedAt,
        label: options.label ?? (models.join('+') || 'no-model'),
        git_commit: gitCommit(root),
        duration_ms: Math.round(performance.now() - started),
        endpoint: displayUrl(llmEnv.LLM_BASE_URL),
        provider: llmEnv.LLM_PROVIDER ?? 'openai_compatible',
        concurrency: options.concurrency,
        limit: options.limit ?? null,
        targets: Object.fromEntries(
          options.stages.flatMap((stage) => {
            const target = options.targets[stage];
            return target === undefined ? [] : [[stage, target]];
          }),
        ),
        overrides: { ...EVAL_OVERRIDES },
        service: context.settings,
        prices: priceTable(context.app.get(ConfigFilesService), root),
        warnings: context.warnings(),
      },
      stages,
    };
    const files = writeReport(report, options.out);
    io.out('');
    io.out(consoleTable(renderMarkdown(report).split('\n'), '## Overview'));
    io.out('');
    io.out(`report: ${files.markdown}`);
    io.out(`data:   ${files.json}`);
    for (const chart of files.charts) io.out(`chart:  ${chart}`);
    if (options.compare.length === 1) {
      const code = compareFiles({ ...options, compare: [options.compare[0], files.json] }, generatedAt, io);
      if (code !== 0) return code;
    }
    const asked = stages.flatMap((stage) => stage.cases.filter((c) => c.asked_model));
    const unanswered = asked.filter((c) => c.failure !== null && c.failure !== 'invalid_output');
    if (asked.length > 0 && unanswered.length === asked.length) {
      io.err(
        'eval: every model call failed; check the endpoint, the model names and the key (npm run llm:check).',
      );
      return 1;
    }
    return 0;
  } finally {
    await context.close();
  }
}

function compareFiles(options: CliOptions, generatedAt: string, io: CliIo): number {
  const [first, second] = options.compare;
  try {
    const a = readReport(first);
    const b = readReport(second);
    const files = writeComparison(a, b, [first, second], options.out, generatedAt);
    io.out(`comparison: ${files.markdown}`);
    for (const chart of files.charts) io.out(`chart:      ${chart}`);
    return 0;
  } catch (error) {
    if (!(error instanceof ReportFileError)) throw error;
    io.err(`eval: ${error.message}`);
    return 1;
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
      process.exitCode = 1;
    },
  );
}
