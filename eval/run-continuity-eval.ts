import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  ConfigFileError,
  loadYamlFile,
  routingFileSchema,
  STRUCTURED_OUTPUT_MODES,
  StructuredOutputMode,
} from '@agent/config';
import {
  ContinuityDataset,
  DatasetCatalogue,
  datasetStats,
  DatasetStats,
  DatasetValidationError,
  loadDataset,
} from './continuity-dataset';
import { reportDirectory } from '../bench/lib';
import { REPO_ROOT } from '../test/support/repo-root';
import { formatRate, EvalReport, writeReport } from './continuity-report';
import { summarize } from './continuity-metrics';
import { EVAL_PROFILE, runContinuityEval, SERVICE_THRESHOLD } from './continuity-runner';

export const USAGE = `Usage: npm run eval:continuity -- --base-url URL --model MODEL [options]

Runs every labelled turn of the continuity dataset through the real ContinuityService against an
OpenAI-compatible endpoint and writes a markdown and a JSON report.

  --base-url URL         OpenAI-compatible endpoint, usually ending in /v1 (default: LLM_BASE_URL)
  --model NAME           model of the ${EVAL_PROFILE} profile (required with an endpoint)
  --api-key KEY          API key (default: LLM_API_KEY; local endpoints often need none)
  --threshold N          confidence threshold the report is computed at, 0..1 (default 0.90)
  --history-turns N      previous turns sent to the classifier (default 2)
  --out DIR              report directory (default eval/results/, untracked)
  --update-report        write to the committed eval/reports/ instead
  --dataset FILE         dataset (default eval/dataset/continuity.yaml)
  --concurrency N        turns classified at once (default 4)
  --timeout-seconds N    per-call timeout (default 10)
  --max-tokens N         classifier output cap (default 80)
  --structured-output M  json_schema, json_object (default) or none (for endpoints that reject response_format)
  --help                 this text

Without --base-url and LLM_BASE_URL it only validates the dataset and prints its statistics.`;

export interface CliIo {
  out: (line: string) => void;
  err: (line: string) => void;
}

export interface CliOptions {
  baseUrl: string | undefined;
  model: string | undefined;
  apiKey: string | undefined;
  threshold: number;
  historyTurns: number;
  out: string;
  dataset: string;
  concurrency: number;
  timeoutSeconds: number;
  maxTokens: number;
  structuredOutput: StructuredOutputMode;
  help: boolean;
}

export class UsageError extends Error {}

/** The repository root: the nearest ancestor holding package.json and config/routing.yaml (source or dist). */

function structuredOutputOption(value: string | undefined): StructuredOutputMode {
  if (value === undefined) return 'json_object';
  const mode = STRUCTURED_OUTPUT_MODES.find((m) => m === value);
  if (!mode) {
    throw new UsageError(
      `--structured-output must be one of ${STRUCTURED_OUTPUT_MODES.join(', ')}, got "${value}"`,
    );
  }
  return mode;
}

function numberOption(
  name: string,
  value: string | undefined,
  fallback: number,
  check: { min: number; max: number; int?: boolean },
): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (
    value.trim() === '' ||
    !Number.isFinite(parsed) ||
    parsed < check.min ||
    parsed > check.max ||
    (check.int === true && !Number.isInteger(parsed))
  ) {
    const kind = check.int ? 'an integer' : 'a number';
    throw new UsageError(`--${name} must be ${kind} from ${check.min} to ${check.max}, got "${value}"`);
  }
  return parsed;
}

export function parseCli(argv: readonly string[], env: NodeJS.ProcessEnv, root: string): CliOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        'base-url': { type: 'string' },
        model: { type: 'string' },
        'api-key': { type: 'string' },
        threshold: { type: 'string' },
        'history-turns': { type: 'string' },
        out: { type: 'string' },
        dataset: { type: 'string' },
        concurrency: { type: 'string' },
        'timeout-seconds': { type: 'string' },
        'max-tokens': { type: 'string' },
        'structured-output': { type: 'string' },
        'update-report': { type: 'boolean' },
        help: { type: 'boolean' },
      },
    }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const text = (key: string): string | undefined => {
    const value = values[key];
    return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
  };
  const baseUrl = text('base-url') ?? (env.LLM_BASE_URL?.trim() || undefined);
  if (baseUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(baseUrl);
    } catch {
      throw new UsageError(`--base-url must be an http(s) URL, got "${baseUrl}"`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new UsageError(`--base-url must be an http(s) URL, got "${baseUrl}"`);
    }
  }
  return {
    baseUrl: baseUrl?.replace(/\/+$/, ''),
    model: text('model'),
    apiKey: text('api-key') ?? (env.LLM_API_KEY?.trim() || undefined),
    threshold: numberOption('threshold', text('threshold'), 0.9, { min: 0, max: 1 }),
    historyTurns: numberOption('history-turns', text('history-turns'), 2, { min: 0, max: 50, int: true }),
    out: resolve(text('out') ?? reportDirectory('eval', values['update-report'] === true, root)),
    dataset: resolve(text('dataset') ?? join(root, 'eval', 'dataset', 'continuity.yaml')),
    concurrency: numberOption('concurrency', text('concurrency'), 4, { min: 1, max: 64, int: true }),
    timeoutSeconds: numberOption('timeout-seconds', text('timeout-seconds'), 10, { min: 0.1, max: 600 }),
    maxTokens: numberOption('max-tokens', text('max-tokens'), 80, { min: 1, max: 4096, int: true }),
    structuredOutput: structuredOutputOption(text('structured-output')),
    help: values.help === true,
  };
}

/** The endpoint without credentials or query, for the report. */
function displayUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

export function printStats(stats: DatasetStats, io: CliIo): void {
  const labels = Object.entries(stats.by_label)
    .map(([label, n]) => `${label} ${n}`)
    .join(', ');
  const languages = Object.entries(stats.by_language)
    .map(([language, n]) => `${language} ${n.conversations} conversations / ${n.turns} turns`)
    .join(', ');
  const domains = Object.entries(stats.by_domain)
    .map(([domain, n]) => `${domain} ${n.turns}`)
    .join(', ');
  const depths = Object.entries(stats.by_depth)
    .map(([depth, n]) => `${depth}:${n}`)
    .join(' ');
  const tags = Object.entries(stats.by_tag)
    .map(([tag, n]) => `${tag} ${n}`)
    .join(', ');
  io.out(
    `  conversations: ${stats.conversations}, labelled turns: ${stats.turns}, max depth: ${stats.max_depth}`,
  );
  io.out(`  labels: ${labels}`);
  io.out(`  languages: ${languages}`);
  io.out(`  domains (turns): ${domains}`);
  io.out(`  turns with an active agent: ${stats.turns_with_active_agent}`);
  io.out(`  turns per depth: ${depths}`);
  io.out(`  situations: ${tags}`);
}

/** The CLI; returns the exit code (0 done, 1 invalid dataset or failed run, 2 usage error). */
export async function main(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  io: CliIo = { out: (line) => console.log(line), err: (line) => console.error(line) },
  root: string = REPO_ROOT,
): Promise<number> {
  let options: CliOptions;
  try {
    options = parseCli(argv, env, root);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.err(`eval:continuity: ${error.message}`);
    io.err(USAGE);
    return 2;
  }
  if (options.help) {
    io.out(USAGE);
    return 0;
  }

  const configDir = join(root, 'config');
  let catalogue: DatasetCatalogue;
  let dataset: ContinuityDataset;
  try {
    catalogue = loadYamlFile(join(configDir, 'routing.yaml'), routingFileSchema);
    dataset = loadDataset(options.dataset, catalogue);
  } catch (error) {
    if (error instanceof DatasetValidationError || error instanceof ConfigFileError) {
      io.err(error.message);
      return 1;
    }
    throw error;
  }
  const stats = datasetStats(dataset);
  const datasetPath = relative(root, options.dataset) || options.dataset;
  io.out(`Dataset ${datasetPath} is valid.`);
  printStats(stats, io);

  if (options.baseUrl === undefined) {
    io.out('');
    io.out('No endpoint configured, so nothing was classified. To run the evaluation this needs:');
    io.out('  --base-url URL   an OpenAI-compatible chat-completions endpoint (or set LLM_BASE_URL)');
    io.out(`  --model NAME     the model to evaluate as the ${EVAL_PROFILE} profile`);
    io.out('  --api-key KEY    only if the endpoint wants one (or set LLM_API_KEY)');
    io.out('Example: npm run eval:continuity -- --base-url http://localhost:11434/v1 --model qwen2.5:3b');
    return 0;
  }
  if (options.model === undefined) {
    io.err(`eval:continuity: --model is required with an endpoint (${displayUrl(options.baseUrl)})`);
    io.err(USAGE);
    return 2;
  }

  io.out('');
  io.out(
    `Classifying ${stats.turns} turns with ${options.model} at ${displayUrl(options.baseUrl)} ` +
      `(concurrency ${options.concurrency}, ${options.historyTurns} history turns) ...`,
  );
  const generatedAt = new Date().toISOString();
  const step = Math.max(1, Math.round(stats.turns / 10));
  const run = await runContinuityEval(dataset, catalogue, {
    baseUrl: options.baseUrl,
    model: options.model,
    apiKey: options.apiKey,
    historyTurns: options.historyTurns,
    maxTokens: options.maxTokens,
    timeoutSeconds: options.timeoutSeconds,
    structuredOutput: options.structuredOutput,
    concurrency: options.concurrency,
    configDir,
    onProgress: (done, total) => {
      if (done % step === 0 || done === total) io.err(`  ${done}/${total} turns`);
    },
  });
  const summary = summarize(run.outcomes, options.threshold);
  const report: EvalReport = {
    meta: {
      generated_at: generatedAt,
      model: options.model,
      base_url: displayUrl(options.baseUrl),
      profile_name: EVAL_PROFILE,
      threshold: options.threshold,
      service_threshold: SERVICE_THRESHOLD,
      history_turns: options.historyTurns,
      max_tokens: options.maxTokens,
      timeout_seconds: options.timeoutSeconds,
      structured_output: options.structuredOutput,
      concurrency: options.concurrency,
      duration_ms: run.durationMs,
      dataset: {
        path: datasetPath,
        sha256: createHash('sha256').update(readFileSync(options.dataset)).digest('hex'),
        conversations: stats.conversations,
        turns: stats.turns,
      },
      service_warnings: run.warnings,
    },
    dataset_stats: stats,
    summary,
    turns: run.outcomes,
  };
  const files = writeReport(report, options.out);

  io.out('');
  io.out(`accuracy at threshold ${options.threshold}: ${formatRate(summary.accuracy)}`);
  io.out(`model label accuracy: ${formatRate(summary.raw_accuracy)}`);
  io.out(`missed-switch rate: ${formatRate(summary.missed_switch)}`);
  io.out(`misroute rate: ${formatRate(summary.misroute)}`);
  io.out(`bypass rate: ${formatRate(summary.bypass)}`);
  io.out(
    `ROUTE targets named: ${formatRate(summary.route_targets.named)}, right: ${formatRate(summary.route_targets.right)}`,
  );
  const failed = Object.entries(summary.failures).filter(([reason]) => reason !== 'no_active_agent');
  if (failed.length > 0) io.out(`classifier failures: ${failed.map(([r, n]) => `${r} ${n}`).join(', ')}`);
  for (const warning of run.warnings.slice(0, 3)) io.err(`  service warning: ${warning}`);
  io.out(`report: ${files.markdown}`);
  io.out(`data:   ${files.json}`);

  const failures = failed.reduce((sum, [, n]) => sum + n, 0);
  if (failures === run.outcomes.length) {
    io.err('eval:continuity: every classifier call failed; check the endpoint, the model name and the key.');
    return 1;
  }
  return 0;
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
