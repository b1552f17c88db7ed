/**
 * The report of `npm run eval`: markdown, the JSON it is rendered from, and SVG charts; and the side-by-side
 * report of two runs (two models, two prompt versions) read back from their JSON.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { barChartSvg } from '../bench/lib';
import type { ServiceSettings } from './eval-context';
import { decimal, excerpt, money, formatRate, percent, table } from './markdown';
import { ratio } from './metrics';
import { headlineRows, latencyText, summarySections, thresholdText, wrongCasesSection } from './render';
import { ReportSection, STAGE_NAMES, StageName, StageResult } from './stage';
import { lineChartSvg, PALETTE } from './svg';

export const REPORT_FORMAT = 'agent-runtime-eval/1';

export interface EvalMeta {
  generated_at: string;
  /** Names the run in file names and comparisons (the models by default). */
  label: string;
  /** The commit of the prompts that ran, when the repository is a git checkout. */
  git_commit: string | null;
  duration_ms: number;
  /** LLM_BASE_URL without credentials or query; null when profiles name their own. */
  endpoint: string | null;
  provider: string;
  concurrency: number;
  limit: number | null;
  /** The costly error rate each stage's recommended threshold keeps it under. */
  targets: Partial<Record<StageName, number>>;
  /** What the evaluation changed in the service's environment to measure, and the service's own values. */
  overrides: Record<string, string>;
  service: ServiceSettings;
  /** llm_profiles.yaml's price table (`prices`), the one the console's statistics use. */
  prices: { path: string; currency: string | null; models: Record<string, PriceOfModel> };
  warnings: string[];
}

export interface EvalReport {
  format: typeof REPORT_FORMAT;
  meta: EvalMeta;
  stages: StageResult[];
}

export interface ReportFiles {
  markdown: string;
  json: string;
  charts: string[];
}

/** A model's price per million tokens, as the report records it. */
export interface PriceOfModel {
  input: number;
  cached_input: number;
  output: number;
}

function priceLine(prices: EvalMeta['prices']): string {
  const models = Object.entries(prices.models);
  if (models.length === 0) {
    return `\`${prices.path}\` prices no model (its \`prices\` table), so no cost is shown.`;
  }
  return (
    `Prices (${prices.currency} per million tokens: input / cached input / output) from \`${prices.path}\` ` +
    `(\`prices\`, by the model a profile calls): ` +
    models.map(([model, p]) => `${model} ${p.input} / ${p.cached_input} / ${p.output}`).join('; ') +
    '. A call of a model the table does not price leaves its stage without a cost.'
  );
}

function modelsOf(stage: Pick<StageResult, 'models'>): string {
  return [...new Set(stage.models.map((m) => m.model ?? 'none'))].join(', ');
}

function stageMeasure(stage: Pick<StageResult, 'headline'>): string {
  const first = stage.headline[0];
  return first ? `${first.measure}: ${formatRate(first.value)}` : 'n/a';
}

function sectionLines(sections: readonly ReportSection[], level: string): string[] {
  return sections.flatMap((section) => [`${level} ${section.title}`, '', ...section.lines]);
}

const OVERVIEW_HEADER = [
  'stage',
  'model',
  'cases',
  'accuracy',
  'invalid output',
  'costly error at the configured threshold',
  'threshold: configured → recommended',
  'stage measure',
  'p50 / p95',
  'tokens / case',
  'cost / 1,000 cases',
];

export function renderMarkdown(report: EvalReport, charts: readonly string[] = []): string {
  const { meta } = report;
  const lines: string[] = [`# Model evaluation: ${meta.label}`, ''];
  lines.push(
    `Run ${meta.generated_at} in ${(meta.duration_ms / 1000).toFixed(1)} s` +
      (meta.git_commit ? ` at commit \`${meta.git_commit.slice(0, 12)}\`` : '') +
      `; endpoint \`${meta.endpoint ?? 'per profile'}\` (provider ${meta.provider}); concurrency ${meta.concurrency}` +
      (meta.limit !== null
        ? `; **only the first ${meta.limit} cases of each set** (a plumbing run, not a measure)`
        : '') +
      '.',
    '',
    'Every stage was called through the service’s own code (its prompts, schemas, validation and fallbacks) with ' +
      'the service’s environment and config files. To record every label and confidence, each stage ran with ' +
      `its threshold at 0 (${Object.entries(meta.overrides)
        .map(([key, value]) => `\`${key}=${value}\``)
        .join(', ')}); the decisions at the configured thresholds ` +
      `(stickiness ${meta.service.stickiness_threshold}, memory ${meta.service.memory_min_confidence}, the others from ` +
      'their files) and at every swept one are computed from what was recorded, with the service’s own rule.',
    '',
  );
  lines.push('## Overview', '');
  lines.push(
    table(
      OVERVIEW_HEADER,
      report.stages.map((stage) => [
        stage.title,
        modelsOf(stage),
        String(stage.summary.cases),
        formatRate(stage.summary.accuracy),
        formatRate(stage.summary.invalid_output),
        stage.summary.threshold ? formatRate(stage.summary.threshold.at_configured.costly) : 'n/a',
        thresholdText(stage.summary.threshold),
        stageMeasure(stage),
        latencyText(stage.summary),
        decimal(stage.summary.tokens_per_case, 0),
        money(stage.summary.cost_per_1000_cases, stage.summary.usage.currency),
      ]),
    ),
    '',
  );
  for (const chart of charts) lines.push(`![${chart}](${chart})`, '');
  lines.push('## Models and prices', '');
  lines.push(
    table(
      ['stage', 'profile', 'tier', 'provider', 'model'],
      report.stages.flatMap((stage) =>
        stage.models.map((m) => [stage.title, m.profile, m.tier, m.provider, m.model ?? 'none']),
      ),
    ),
    '',
    priceLine(meta.prices),
    '',
  );
  for (const stage of report.stages) {
    lines.push(`## ${stage.title}`, '');
    lines.push(stage.method, '');
    const languages = Object.entries(stage.dataset.by_language)
      .map(([language, n]) => `${language} ${n}`)
      .join(', ');
    const labels = Object.entries(stage.dataset.by_label)
      .map(([label, n]) => `${label} ${n}`)
      .join(', ');
    lines.push(
      `Set \`${stage.dataset.path}\` (sha256 \`${stage.dataset.sha256.slice(0, 12)}\`): ${stage.dataset.cases} cases ` +
        `(${languages}; ${labels}); ${stage.summary.cases} evaluated in ${(stage.duration_ms / 1000).toFixed(1)} s.`,
      '',
    );
    for (const note of stage.notes) lines.push(`> ${note}`, '');
    lines.push('### Headline', '');
    lines.push(
      table(
        ['measure', 'value'],
        [...headlineRows(stage.summary), ...stage.headline.map((h) => [h.measure, formatRate(h.value)])],
      ),
      '',
    );
    lines.push(...sectionLines(summarySections(stage.summary), '###'));
    lines.push(...sectionLines(stage.sections, '###'));
    lines.push(...sectionLines([wrongCasesSection(stage.cases)], '###'));
  }
  if (meta.warnings.length > 0) {
    lines.push('## Service warnings', '', 'The first distinct ones the services logged:', '');
    for (const warning of meta.warnings) lines.push(`- ${excerpt(warning, 300)}`);
    lines.push('');
  }
  return lines.join('\n');
}

/** A stage's name short enough for a chart's axis and legend. */
const CHART_NAMES: Record<StageName, string> = {
  continuity: 'continuity',
  router: 'router',
  multi_intent: 'multi-intent',
  guardrails: 'guardrails',
  transaction_control: 'transactions',
  parameter_extraction: 'parameters',
  memory_extraction: 'memory',
  judges: 'judges',
};

function chartName(name: string): string {
  const stage = STAGE_NAMES.find((known) => known === name);
  return stage ? CHART_NAMES[stage] : name;
}

/** The charts of a run: accuracy and errors per stage, calibration, costly error against the threshold. */
export function charts(report: EvalReport): Record<string, string> {
  const stages = report.stages;
  const result: Record<string, string> = {};
  if (stages.length === 0) return result;
  const pct = (value: number | null) => (value === null ? 0 : value * 100);
  result.overview = barChartSvg(
    `${report.meta.label}: accuracy and errors per stage`,
    stages.map((s) => chartName(s.name)),
    [
      { label: 'accuracy', color: PALETTE[0], values: stages.map((s) => pct(s.summary.accuracy.rate)) },
      {
        label: 'invalid output',
        color: PALETTE[1],
        values: stages.map((s) => pct(s.summary.invalid_output.rate)),
      },
      {
        label: 'costly error (configured)',
        color: PALETTE[3],
        values: stages.map((s) => pct(s.summary.threshold?.at_configured.costly.rate ?? null)),
      },
    ],
    '%',
  );
  const calibrated = stages.filter((s) => (s.summary.calibration?.cases ?? 0) > 0);
  if (calibrated.length > 0) {
    result.calibration = lineChartSvg(
      'Calibration: accuracy at each stated confidence',
      { x: { label: 'mean stated confidence', min: 0, max: 1 }, y: { label: 'accuracy', min: 0, max: 1 } },
      [
        {
          label: 'perfect calibration',
          color: '#999',
          points: [
            [0, 0],
            [1, 1],
          ],
          dashed: true,
        },
        ...calibrated.map((s, i) => ({
          label: chartName(s.name),
          color: PALETTE[i % PALETTE.length],
          points: (s.summary.calibration?.bins ?? []).flatMap((bin): [number, number][] =>
            bin.mean_confidence === null || bin.accuracy === null
              ? []
              : [[bin.mean_confidence, bin.accuracy]],
          ),
        })),
      ],
    );
  }
  const swept = stages.filter((s) => s.summary.threshold !== null);
  if (swept.length > 0) {
    const max = Math.max(
      0.05,
      ...swept.flatMap((s) => (s.summary.threshold?.sweep ?? []).map((row) => row.costly.rate ?? 0)),
    );
    result.thresholds = lineChartSvg(
      'Costly error against the threshold',
      { x: { label: 'threshold', min: 0, max: 1 }, y: { label: 'costly error rate', min: 0, max: max } },
      swept.map((s, i) => ({
        label: `${chartName(s.name)} ≤ ${percent(s.summary.threshold?.target ?? null)}`,
        color: PALETTE[i % PALETTE.length],
        points: (s.summary.threshold?.sweep ?? []).map((row): [number, number] => [
          row.threshold,
          row.costly.rate ?? 0,
        ]),
      })),
    );
  }
  return result;
}

function slug(text: string): string {
  return text.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 60) || 'run';
}

function writeFiles(
  dir: string,
  prefix: string,
  markdown: (charts: string[]) => string,
  svgs: Record<string, string>,
  json?: unknown,
): ReportFiles {
  const absolute = resolve(dir);
  mkdirSync(absolute, { recursive: true });
  const names = Object.keys(svgs).map((name) => `${prefix}-${name}.svg`);
  Object.values(svgs).forEach((svg, i) => writeFileSync(join(absolute, names[i]), `${svg}\n`));
  const markdownPath = join(absolute, `${prefix}.md`);
  writeFileSync(markdownPath, `${markdown(names)}\n`);
  const jsonPath = join(absolute, `${prefix}.json`);
  if (json !== undefined) writeFileSync(jsonPath, `${JSON.stringify(json, null, 2)}\n`);
  return {
    markdown: markdownPath,
    json: json === undefined ? '' : jsonPath,
    charts: names.map((n) => join(absolute, n)),
  };
}

/** Writes `eval-<label>-<time>.md`, `.json` and the charts under `dir`. */
export function writeReport(report: EvalReport, dir: string): ReportFiles {
  const prefix = `eval-${slug(report.meta.label)}-${report.meta.generated_at.replace(/[:.]/g, '-')}`;
  return writeFiles(dir, prefix, (names) => renderMarkdown(report, names), charts(report), report);
}

// ------------------------------------------------------------------ comparison

const ratioSchema = z.object({ count: z.number(), total: z.number(), rate: z.number().nullable() });

/** What a comparison reads of a JSON report: validated, so a file of another shape is refused with the reason. */
const comparedSchema = z.object({
  format: z.literal(REPORT_FORMAT),
  meta: z.object({
    generated_at: z.string(),
    label: z.string(),
    git_commit: z.string().nullable(),
    endpoint: z.string().nullable(),
    limit: z.number().nullable(),
  }),
  stages: z.array(
    z.object({
      name: z.string(),
      title: z.string(),
      models: z.array(z.object({ model: z.string().nullable() })),
      summary: z.object({
        usage: z.object({ currency: z.string().nullable() }),
        cases: z.number(),
        accuracy: ratioSchema,
        model_accuracy: ratioSchema,
        macro_f1: z.number().nullable(),
        invalid_output: ratioSchema,
        per_label: z.array(
          z.object({ label: z.string(), recall: z.number().nullable(), precision: z.number().nullable() }),
        ),
        threshold: z
          .object({
            configured: z.number(),
            recommended: z.number().nullable(),
            costly_error: z.string(),
            at_configured: z.object({ costly: ratioSchema }),
          })
          .nullable(),
        calibration: z.object({ ece: z.number().nullable() }).nullable(),
        latency_ms: z.object({ p50: z.number().nullable(), p95: z.number().nullable() }),
        tokens_per_case: z.number().nullable(),
        cost_per_1000_cases: z.number().nullable(),
      }),
      headline: z.array(z.object({ measure: z.string(), value: ratioSchema })),
      cases: z.array(
        z.object({
          id: z.string(),
          expected: z.string(),
          decided: z.string(),
          text: z.string(),
          language: z.string(),
        }),
      ),
    }),
  ),
});
export type ComparedReport = z.output<typeof comparedSchema>;

export class ReportFileError extends Error {}

export function readReport(path: string): ComparedReport {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ReportFileError(`${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const parsed = comparedSchema.safeParse(raw);
  if (!parsed.success) {
    const first = parsed.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    throw new ReportFileError(`${path} is not a report of npm run eval (${REPORT_FORMAT}): ${first}`);
  }
  return parsed.data;
}

type ComparedStage = ComparedReport['stages'][number];

function change(a: number | null, b: number | null, unit: 'pp' | 'x' = 'pp'): string {
  if (a === null || b === null) return 'n/a';
  if (unit === 'x') return a === 0 ? 'n/a' : `${(b / a).toFixed(2)}×`;
  const points = (b - a) * 100;
  return `${points >= 0 ? '+' : ''}${points.toFixed(1)} pp`;
}

function stageRows(a: ComparedStage | undefined, b: ComparedStage | undefined): string[][] {
  const rate = (
    s: ComparedStage | undefined,
    pick: (s: ComparedStage) => { rate: number | null; count: number; total: number },
  ) => (s ? formatRate(pick(s)) : 'not run');
  const value = (s: ComparedStage | undefined, pick: (s: ComparedStage) => number | null) =>
    s ? pick(s) : null;
  const row = (
    measure: string,
    pick: (s: ComparedStage) => { rate: number | null; count: number; total: number },
  ): string[] => [
    measure,
    rate(a, pick),
    rate(b, pick),
    change(
      value(a, (s) => pick(s).rate),
      value(b, (s) => pick(s).rate),
    ),
  ];
  const costly = (s: ComparedStage) => s.summary.threshold?.at_configured.costly ?? ratio(0, 0);
  return [
    [
      'model',
      a ? [...new Set(a.models.map((m) => m.model ?? 'none'))].join(', ') : 'not run',
      b ? [...new Set(b.models.map((m) => m.model ?? 'none'))].join(', ') : 'not run',
      '',
    ],
    row('accuracy', (s) => s.summary.accuracy),
    row('model label accuracy', (s) => s.summary.model_accuracy),
    row('invalid output', (s) => s.summary.invalid_output),
    row('costly error at the configured threshold', costly),
    [
      'threshold: configured → recommended',
      thresholdText(a?.summary.threshold ?? null),
      thresholdText(b?.summary.threshold ?? null),
      '',
    ],
    [
      'expected calibration error',
      decimal(value(a, (s) => s.summary.calibration?.ece ?? null)),
      decimal(value(b, (s) => s.summary.calibration?.ece ?? null)),
      '',
    ],
    [
      'latency p50 / p95 ms',
      a ? `${decimal(a.summary.latency_ms.p50, 0)} / ${decimal(a.summary.latency_ms.p95, 0)}` : 'not run',
      b ? `${decimal(b.summary.latency_ms.p50, 0)} / ${decimal(b.summary.latency_ms.p95, 0)}` : 'not run',
      change(
        value(a, (s) => s.summary.latency_ms.p50),
        value(b, (s) => s.summary.latency_ms.p50),
        'x',
      ),
    ],
    [
      'tokens / case',
      decimal(
        value(a, (s) => s.summary.tokens_per_case),
        0,
      ),
      decimal(
        value(b, (s) => s.summary.tokens_per_case),
        0,
      ),
      change(
        value(a, (s) => s.summary.tokens_per_case),
        value(b, (s) => s.summary.tokens_per_case),
        'x',
      ),
    ],
    [
      'cost / 1,000 cases',
      money(
        value(a, (s) => s.summary.cost_per_1000_cases),
        a?.summary.usage.currency ?? null,
      ),
      money(
        value(b, (s) => s.summary.cost_per_1000_cases),
        b?.summary.usage.currency ?? null,
      ),
      change(
        value(a, (s) => s.summary.cost_per_1000_cases),
        value(b, (s) => s.summary.cost_per_1000_cases),
        'x',
      ),
    ],
    ...(b ?? a ?? { headline: [] }).headline.map((h, i) => [
      h.measure,
      a?.headline[i] ? formatRate(a.headline[i].value) : 'n/a',
      b?.headline[i] ? formatRate(b.headline[i].value) : 'n/a',
      change(a?.headline[i]?.value.rate ?? null, b?.headline[i]?.value.rate ?? null),
    ]),
  ];
}

/** The cases one run got right and the other wrong, by case id. */
function changedCases(a: ComparedStage, b: ComparedStage, max = 20): string[] {
  const byId = new Map(a.cases.map((c) => [c.id, c]));
  const fixed: string[][] = [];
  const broken: string[][] = [];
  for (const after of b.cases) {
    const before = byId.get(after.id);
    if (!before) continue;
    const wasRight = before.decided === before.expected;
    const isRight = after.decided === after.expected;
    if (wasRight === isRight) continue;
    (isRight ? fixed : broken).push([
      after.id,
      after.language,
      after.expected,
      before.decided,
      after.decided,
      excerpt(after.text, 100),
    ]);
  }
  const header = ['case', 'lang', 'expected', 'A decided', 'B decided', 'message'];
  const part = (title: string, rows: string[][]) =>
    rows.length === 0
      ? [`${title}: none.`, '']
      : [
          `${title} (${rows.length}${rows.length > max ? `, the first ${max}` : ''}):`,
          '',
          table(header, rows.slice(0, max)),
          '',
        ];
  return [...part('Right in B, wrong in A', fixed), ...part('Wrong in B, right in A', broken)];
}

function runLine(name: string, report: ComparedReport, path: string): string {
  const { meta } = report;
  return (
    `- **${name}**: \`${meta.label}\`, ${meta.generated_at}` +
    (meta.git_commit ? `, commit \`${meta.git_commit.slice(0, 12)}\`` : '') +
    `, endpoint \`${meta.endpoint ?? 'per profile'}\`` +
    (meta.limit !== null ? `, only the first ${meta.limit} cases per set` : '') +
    ` (\`${path}\`)`
  );
}

export function renderComparison(
  a: ComparedReport,
  b: ComparedReport,
  paths: readonly [string, string],
  chartNames: readonly string[] = [],
): string {
  const names = [...new Set([...a.stages.map((s) => s.name), ...b.stages.map((s) => s.name)])];
  const lines: string[] = [`# Model evaluation: ${a.meta.label} (A) against ${b.meta.label} (B)`, ''];
  lines.push(runLine('A', a, paths[0]), runLine('B', b, paths[1]), '');
  lines.push(
    'Changes are B against A: percentage points for rates, a ratio for latency, tokens and cost. Compare runs of ' +
      'the same sets (a set that changed between them changes the figures too).',
    '',
  );
  lines.push('## Overview', '');
  lines.push(
    table(
      [
        'stage',
        'accuracy A',
        'accuracy B',
        'change',
        'costly error A',
        'costly error B',
        'invalid output A',
        'invalid output B',
      ],
      names.map((name) => {
        const sa = a.stages.find((s) => s.name === name);
        const sb = b.stages.find((s) => s.name === name);
        const costly = (s: ComparedStage | undefined) =>
          s?.summary.threshold ? formatRate(s.summary.threshold.at_configured.costly) : 'n/a';
        return [
          (sb ?? sa)?.title ?? name,
          sa ? formatRate(sa.summary.accuracy) : 'not run',
          sb ? formatRate(sb.summary.accuracy) : 'not run',
          change(sa?.summary.accuracy.rate ?? null, sb?.summary.accuracy.rate ?? null),
          costly(sa),
          costly(sb),
          sa ? formatRate(sa.summary.invalid_output) : 'not run',
          sb ? formatRate(sb.summary.invalid_output) : 'not run',
        ];
      }),
    ),
    '',
  );
  for (const chart of chartNames) lines.push(`![${chart}](${chart})`, '');
  for (const name of names) {
    const sa = a.stages.find((s) => s.name === name);
    const sb = b.stages.find((s) => s.name === name);
    lines.push(`## ${(sb ?? sa)?.title ?? name}`, '');
    lines.push(table(['measure', 'A', 'B', 'change'], stageRows(sa, sb)), '');
    if (sa && sb) {
      const labels = [
        ...new Set([
          ...sa.summary.per_label.map((l) => l.label),
          ...sb.summary.per_label.map((l) => l.label),
        ]),
      ];
      const score = (s: ComparedStage, label: string) => s.summary.per_label.find((l) => l.label === label);
      lines.push(
        table(
          ['label', 'recall A', 'recall B', 'precision A', 'precision B'],
          labels.map((label) => [
            label,
            percent(score(sa, label)?.recall ?? null),
            percent(score(sb, label)?.recall ?? null),
            percent(score(sa, label)?.precision ?? null),
            percent(score(sb, label)?.precision ?? null),
          ]),
        ),
        '',
        ...changedCases(sa, sb),
      );
    }
  }
  return lines.join('\n');
}

export function comparisonChart(a: ComparedReport, b: ComparedReport): string {
  const names = [...new Set([...a.stages.map((s) => s.name), ...b.stages.map((s) => s.name)])];
  const accuracy = (report: ComparedReport) =>
    names.map((name) => (report.stages.find((s) => s.name === name)?.summary.accuracy.rate ?? 0) * 100);
  return barChartSvg(
    'Accuracy per stage',
    names.map(chartName),
    [
      { label: `A: ${a.meta.label}`.slice(0, 24), color: PALETTE[0], values: accuracy(a) },
      { label: `B: ${b.meta.label}`.slice(0, 24), color: PALETTE[3], values: accuracy(b) },
    ],
    '%',
  );
}

/** Writes `compare-<A>-vs-<B>-<time>.md` and its chart under `dir`. */
export function writeComparison(
  a: ComparedReport,
  b: ComparedReport,
  paths: readonly [string, string],
  dir: string,
  generatedAt: string,
): ReportFiles {
  const prefix = `compare-${slug(a.meta.label)}-vs-${slug(b.meta.label)}-${generatedAt.replace(/[:.]/g, '-')}`;
  return writeFiles(dir, prefix, (names) => renderComparison(a, b, paths, names), {
    accuracy: comparisonChart(a, b),
  });
}
