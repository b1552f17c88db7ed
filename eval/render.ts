/** The markdown of the measures every stage shares (see summarizeStage). */
import { decimal, money, excerpt, formatRate, matrixTable, percent, table } from './markdown';
import type { Calibration } from './metrics';
import { CaseOutcome, modelColumn, ReportSection, StageSummary, ThresholdSummary } from './stage';

export function failuresText(summary: StageSummary): string {
  const entries = Object.entries(summary.failures);
  return entries.length === 0 ? 'none' : entries.map(([kind, n]) => `${kind} ${n}`).join(', ');
}

export function thresholdText(
  threshold: Pick<ThresholdSummary, 'configured' | 'recommended'> | null,
): string {
  if (!threshold) return 'n/a';
  const recommended =
    threshold.recommended === null ? 'none under the target' : String(threshold.recommended);
  return `${threshold.configured} → ${recommended}`;
}

export function latencyText(summary: StageSummary): string {
  const { p50, p95 } = summary.latency_ms;
  return `${decimal(p50, 0)} / ${decimal(p95, 0)} ms`;
}

/** The generic headline of a stage: what the service does, what the model said, failures, cost. */
export function headlineRows(summary: StageSummary): string[][] {
  const threshold = summary.threshold;
  const usage = summary.usage;
  return [
    ['accuracy (the decision the service acts on)', formatRate(summary.accuracy)],
    [
      'model label accuracy (before the threshold, cases that asked the model)',
      formatRate(summary.model_accuracy),
    ],
    ['macro F1 (decision)', decimal(summary.macro_f1)],
    ['cases that asked the model', formatRate(summary.asked_model)],
    ['invalid output (of the cases that asked the model)', formatRate(summary.invalid_output)],
    ['failures', failuresText(summary)],
    ...(threshold
      ? [
          [
            `${threshold.costly_error.split(':')[0]} at the configured threshold ${threshold.configured} (over ${threshold.at_risk})`,
            formatRate(threshold.at_configured.costly),
          ],
          [
            `threshold keeping it at or under ${percent(threshold.target)} (${threshold.setting})`,
            threshold.recommended === null ? 'none of the swept thresholds' : String(threshold.recommended),
          ],
        ]
      : []),
    ...(summary.calibration ? [['expected calibration error', decimal(summary.calibration.ece)]] : []),
    [
      'latency p50 / p95 / max',
      `${latencyText(summary).replace(' ms', '')} / ${decimal(summary.latency_ms.max, 0)} ms`,
    ],
    [
      'tokens: prompt (cached) / completion / per case',
      `${usage.prompt_tokens} (${usage.cached_prompt_tokens}) / ${usage.completion_tokens} / ${decimal(summary.tokens_per_case, 1)}`,
    ],
    [
      'cost: this run / per 1,000 cases',
      `${money(usage.cost, usage.currency)} / ${money(summary.cost_per_1000_cases, usage.currency)}`,
    ],
  ];
}

export function perLabelTable(summary: StageSummary): string {
  return table(
    ['label', 'support', 'decided', 'precision', 'recall', 'F1'],
    summary.per_label.map((s) => [
      s.label,
      String(s.support),
      String(s.predicted),
      percent(s.precision),
      percent(s.recall),
      decimal(s.f1),
    ]),
  );
}

export function calibrationTable(value: Calibration): string {
  return table(
    ['confidence', 'cases', 'mean confidence', 'accuracy', 'gap'],
    value.bins.map((bin) => [
      `${bin.from.toFixed(2)}–${bin.to.toFixed(2)}`,
      String(bin.cases),
      decimal(bin.mean_confidence),
      percent(bin.accuracy),
      bin.mean_confidence === null || bin.accuracy === null
        ? 'n/a'
        : decimal(bin.accuracy - bin.mean_confidence),
    ]),
  );
}

export function sweepTable(threshold: ThresholdSummary): string {
  return table(
    ['threshold', threshold.costly_error.split(':')[0], 'accuracy', 'model label acted on'],
    threshold.sweep.map((row) => {
      const marks = [
        row.threshold === threshold.configured ? 'configured' : '',
        row.threshold === threshold.recommended ? 'recommended' : '',
      ].filter(Boolean);
      const label = marks.length > 0 ? `**${row.threshold}** (${marks.join(', ')})` : String(row.threshold);
      return [label, formatRate(row.costly), formatRate(row.accuracy), formatRate(row.acted)];
    }),
  );
}

/** The sections every stage has: labels and confusion, calibration, threshold, languages. */
export function summarySections(summary: StageSummary): ReportSection[] {
  const sections: ReportSection[] = [
    {
      title: 'Per-label precision and recall',
      lines: [
        'The decision the service acts on, at its configured threshold:',
        '',
        perLabelTable(summary),
        '',
        'Confusion (rows: expected; columns: decided):',
        '',
        matrixTable(summary.confusion, summary.labels, summary.columns),
        '',
        'The model’s own label before any threshold (cases that asked the model; FAILED: no usable answer):',
        '',
        matrixTable(summary.model_confusion, summary.labels, summary.model_columns, 'expected \\ model'),
        '',
      ],
    },
  ];
  if (summary.calibration) {
    sections.push({
      title: 'Calibration',
      lines: [
        'How often the model is right at the confidence it states. A positive gap: more right than it says; a ' +
          'negative gap: overconfident, and a threshold at that confidence lets through more errors than it seems.',
        '',
        calibrationTable(summary.calibration),
        '',
      ],
    });
  }
  const threshold = summary.threshold;
  if (threshold) {
    sections.push({
      title: 'Threshold',
      lines: [
        `Set with ${threshold.setting}. Costly error: ${threshold.costly_error}; counted over ${threshold.at_risk}. ` +
          `Target: at most ${percent(threshold.target)}. ` +
          (threshold.recommended === null
            ? 'No swept threshold keeps the error under the target: the errors at the highest threshold are those ' +
              'no threshold removes (see the wrong cases).'
            : `Recommended: ${threshold.recommended}, the swept threshold that keeps it under the target with the best accuracy.`),
        '',
        sweepTable(threshold),
        '',
      ],
    });
  }
  sections.push({
    title: 'By language',
    lines: [
      table(
        ['language', 'cases', 'accuracy'],
        summary.by_language.map((g) => [g.group, String(g.cases), formatRate(g.accuracy)]),
      ),
      '',
    ],
  });
  return sections;
}

/** The cases the stage got wrong (decision or model label), the first `max`; the JSON holds them all. */
export function wrongCasesSection(cases: readonly CaseOutcome[], max = 40): ReportSection {
  const wrong = cases.filter(
    (c) => c.decided !== c.expected || (c.asked_model && modelColumn(c) !== c.expected),
  );
  const shown = wrong.slice(0, max);
  return {
    title: `Wrong cases (${wrong.length})`,
    lines:
      wrong.length === 0
        ? ['None.', '']
        : [
            ...(wrong.length > max ? [`The first ${max}; the JSON report has every case.`, ''] : []),
            table(
              ['case', 'lang', 'expected', 'decided', 'model', 'confidence', 'message', 'model reason'],
              shown.map((c) => [
                c.id,
                c.language,
                c.expected,
                c.decided,
                c.asked_model ? modelColumn(c) : 'not asked',
                c.confidence === null ? 'n/a' : c.confidence.toFixed(2),
                excerpt(c.text),
                excerpt(c.reason, 80),
              ]),
            ),
            '',
          ],
  };
}
