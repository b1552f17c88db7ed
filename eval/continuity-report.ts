import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { StructuredOutputMode } from '@agent/config';
import { CONTINUITY_DECISIONS } from '@agent/contracts';
import type { DatasetStats } from './continuity-dataset';
import {
  acceptedAt,
  ConfusionMatrix,
  effectiveDecision,
  EvalSummary,
  GroupAccuracy,
  LabelScore,
  RAW_COLUMNS,
  Ratio,
  rawPrediction,
  TurnOutcome,
} from './continuity-metrics';

export interface EvalMeta {
  generated_at: string;
  model: string;
  /** The endpoint's origin and path; never a key. */
  base_url: string;
  profile_name: string;
  threshold: number;
  /** The service ran with this threshold so every label and confidence was recorded; see the README. */
  service_threshold: number;
  history_turns: number;
  max_tokens: number;
  timeout_seconds: number;
  structured_output: StructuredOutputMode;
  concurrency: number;
  duration_ms: number;
  dataset: { path: string; sha256: string; conversations: number; turns: number };
  /** Distinct warnings the service logged (rejected outputs, endpoint errors), first ones only. */
  service_warnings: string[];
}

export interface EvalReport {
  meta: EvalMeta;
  dataset_stats: DatasetStats;
  summary: EvalSummary;
  turns: TurnOutcome[];
}

export function formatRate(value: Ratio): string {
  return value.rate === null ? `n/a (0/0)` : `${percent(value.rate)} (${value.count}/${value.total})`;
}

function percent(rate: number | null): string {
  return rate === null ? 'n/a' : `${(rate * 100).toFixed(1)}%`;
}

function decimal(value: number | null, digits = 3): string {
  return value === null ? 'n/a' : value.toFixed(digits);
}

function table(header: string[], rows: string[][]): string {
  const escape = (cell: string) => cell.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  return [
    `| ${header.map(escape).join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${row.map(escape).join(' | ')} |`),
  ].join('\n');
}

function matrixTable<C extends string>(matrix: ConfusionMatrix<C>, columns: readonly C[]): string {
  return table(
    ['expected \\ decided', ...columns],
    CONTINUITY_DECISIONS.map((label) => [
      label,
      ...columns.map((column) => {
        const count = matrix[label][column];
        return column === (label as string) ? `**${count}**` : String(count);
      }),
    ]),
  );
}

function scoresTable(scores: readonly LabelScore[]): string {
  return table(
    ['label', 'support', 'decided', 'precision', 'recall', 'F1'],
    scores.map((s) => [
      s.label,
      String(s.support),
      String(s.predicted),
      percent(s.precision),
      percent(s.recall),
      decimal(s.f1),
    ]),
  );
}

function groupTable(title: string, groups: readonly GroupAccuracy[]): string {
  return table(
    [title, 'turns', 'model label correct', 'decision correct at threshold', 'misroutes', 'failures'],
    groups.map((g) => [
      g.group,
      String(g.turns),
      formatRate(g.raw_accuracy),
      formatRate(g.accuracy),
      String(g.misroutes),
      String(g.failures),
    ]),
  );
}

/** The decision the workflow acted on, with the reason when it differs from the model's label. */
function decisionCell(turn: TurnOutcome, threshold: number): string {
  if (acceptedAt(turn, threshold)) return turn.decision;
  if (turn.fallback_reason !== null) return `ROUTE (${turn.fallback_reason})`;
  return turn.decision === 'ROUTE' ? 'ROUTE' : 'ROUTE (below_threshold)';
}

export function renderMarkdown(report: EvalReport): string {
  const { meta, summary, dataset_stats: stats } = report;
  const languages = Object.entries(stats.by_language)
    .map(([language, n]) => `${language} ${n.turns}`)
    .join(', ');
  const failures = Object.entries(summary.failures).filter(([reason]) => reason !== 'no_active_agent');
  const lines: string[] = [];
  lines.push('# Continuity classifier evaluation', '');
  lines.push(
    `Model \`${meta.model}\` at \`${meta.base_url}\`, profile \`${meta.profile_name}\`, run ${meta.generated_at} ` +
      `in ${(meta.duration_ms / 1000).toFixed(1)} s. Threshold ${meta.threshold}, ${meta.history_turns} history turns, ` +
      `max ${meta.max_tokens} output tokens, timeout ${meta.timeout_seconds} s, structured output ${meta.structured_output}.`,
    '',
    `Dataset \`${meta.dataset.path}\` (sha256 \`${meta.dataset.sha256.slice(0, 12)}\`): ${stats.conversations} conversations, ` +
      `${stats.turns} labelled turns (${languages}), max depth ${stats.max_depth}. Every turn went through the real ` +
      '`ContinuityService` once; decisions at other thresholds are computed from the recorded label and confidence.',
    '',
  );

  lines.push('## Headline', '');
  lines.push(
    table(
      ['measure', `value at threshold ${meta.threshold}`],
      [
        ['accuracy (decision the workflow acts on)', formatRate(summary.accuracy)],
        ['model label accuracy (before the threshold)', formatRate(summary.raw_accuracy)],
        [
          'macro F1 (decision / model label)',
          `${decimal(summary.macro_f1)} / ${decimal(summary.raw_macro_f1)}`,
        ],
        [
          'missed-switch rate (ROUTE turns with an agent, accepted CONTINUE)',
          formatRate(summary.missed_switch),
        ],
        ['misroute rate (wrong accepted CONTINUE / HANDOFF / END, all turns)', formatRate(summary.misroute)],
        ['bypass rate (router skipped, all turns)', formatRate(summary.bypass)],
        [
          "ROUTE turns naming their target (router's model skipped) / right among them",
          `${formatRate(summary.route_targets.named)} / ${formatRate(summary.route_targets.right)}`,
        ],
        [
          'classifier failures',
          failures.length === 0 ? 'none' : failures.map(([reason, n]) => `${reason} ${n}`).join(', '),
        ],
        [
          'lowest swept threshold with no misroute',
          summary.lowest_safe_threshold === null ? 'none' : String(summary.lowest_safe_threshold),
        ],
        [
          'classifier latency p50 / p95 / max',
          `${decimal(summary.latency_ms.p50, 0)} / ${decimal(summary.latency_ms.p95, 0)} / ${decimal(summary.latency_ms.max, 0)} ms`,
        ],
        [
          'tokens (prompt / completion / per turn)',
          `${summary.tokens.prompt} / ${summary.tokens.completion} / ${decimal(summary.tokens.per_turn, 1)}`,
        ],
      ],
    ),
    '',
  );

  lines.push('## Per-label precision and recall', '');
  lines.push(
    `Decision at threshold ${meta.threshold} (below it, or on a failure, the turn goes to the router: ROUTE):`,
  );
  lines.push('', scoresTable(summary.per_label), '');
  lines.push('Model label, before the threshold (a failure is counted under FAILED):');
  lines.push('', scoresTable(summary.raw_per_label), '');

  lines.push('## Confusion matrix', '');
  lines.push(`Rows: expected label. Columns: decision at threshold ${meta.threshold}.`, '');
  lines.push(matrixTable(summary.confusion, CONTINUITY_DECISIONS), '');
  lines.push('Columns: the model label before the threshold.', '');
  lines.push(matrixTable(summary.raw_confusion, RAW_COLUMNS), '');

  lines.push('## Threshold sweep', '');
  lines.push(
    'Bypass: the router is skipped (accepted CONTINUE, HUMAN_HANDOFF or END_SESSION), over all turns. ' +
      'Misroute: an accepted CONTINUE whose label is not CONTINUE, or an accepted HUMAN_HANDOFF / END_SESSION that ' +
      'is wrong, over all turns. Missed switch: label ROUTE with an active agent but accepted CONTINUE. ' +
      'Missed continue: label CONTINUE that still went to the router (a cost, not a harm). ' +
      'Missed session action: a handoff or end request that was not accepted as such.',
    '',
  );
  lines.push(
    table(
      [
        'threshold',
        'bypass',
        'CONTINUE bypass',
        'misroute',
        'misroute among bypasses',
        'missed switch',
        'missed continue',
        'missed session action',
        'accuracy',
      ],
      summary.sweep.map((row) => {
        const mark = row.threshold === meta.threshold ? '**' : '';
        return [
          `${mark}${row.threshold}${mark}`,
          formatRate(row.bypass),
          formatRate(row.continue_bypass),
          formatRate(row.misroute),
          formatRate(row.misroute_among_bypasses),
          formatRate(row.missed_switch),
          formatRate(row.missed_continue),
          formatRate(row.missed_session_action),
          formatRate(row.accuracy),
        ];
      }),
    ),
    '',
  );

  lines.push('## Accuracy by turn depth', '');
  lines.push(
    'Depth is the position of the turn in its conversation (1 = first message). A drop with depth is the ' +
      '"deep conversation" effect reported for Galaxy\'s ChatGXY router (galaxyproject/galaxy#22791).',
    '',
  );
  lines.push(groupTable('depth', summary.by_depth), '');
  lines.push('## By language', '', groupTable('language', summary.by_language), '');
  lines.push('## By domain', '', groupTable('domain', summary.by_domain), '');
  lines.push('## By situation (hard cases)', '');
  lines.push('A turn can carry several tags; see eval/README.md for their meaning.', '');
  lines.push(
    groupTable(
      'tag',
      summary.by_tag.filter((g) => g.turns > 0),
    ),
    '',
  );

  const wrong = report.turns.filter(
    (turn) => effectiveDecision(turn, meta.threshold) !== turn.label || rawPrediction(turn) !== turn.label,
  );
  lines.push(`## Turns with a wrong label or decision (${wrong.length})`, '');
  if (wrong.length === 0) {
    lines.push('None.', '');
  } else {
    lines.push(
      table(
        [
          'conversation',
          'turn',
          'expected',
          'model label',
          'confidence',
          'decision',
          'message',
          'model reason',
        ],
        wrong.map((turn) => [
          turn.conversation_id,
          String(turn.depth),
          turn.label,
          rawPrediction(turn),
          turn.confidence.toFixed(2),
          decisionCell(turn, meta.threshold),
          turn.user,
          turn.reason,
        ]),
      ),
      '',
    );
  }

  if (meta.service_warnings.length > 0) {
    lines.push('## Service warnings', '');
    for (const warning of meta.service_warnings) lines.push(`- ${warning}`);
    lines.push('');
  }
  return lines.join('\n');
}

/** Writes `<prefix>.md` and `<prefix>.json` under `dir`; returns both paths. */
export function writeReport(report: EvalReport, dir: string): { markdown: string; json: string } {
  const absolute = resolve(dir);
  mkdirSync(absolute, { recursive: true });
  const stamp = report.meta.generated_at.replace(/[:.]/g, '-');
  const model = report.meta.model.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 60);
  const prefix = join(absolute, `continuity-${model}-${stamp}`);
  const markdown = `${prefix}.md`;
  const json = `${prefix}.json`;
  writeFileSync(markdown, `${renderMarkdown(report)}\n`);
  writeFileSync(json, `${JSON.stringify(report, null, 2)}\n`);
  return { markdown, json };
}
