import type { EvalSummary, GroupAccuracy } from './continuity-metrics';
import { decimal, formatRate, table } from './markdown';
import type { ReportSection } from './stage';

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

/**
 * The continuity classifier's own measures, beside the ones every stage has: route stickiness (bypass against
 * misroute and missed switches), the ROUTE targets, and accuracy by turn depth, domain and situation.
 */
export function continuitySections(summary: EvalSummary): ReportSection[] {
  const threshold = summary.threshold;
  const stickiness: ReportSection = {
    title: 'Route stickiness',
    lines: [
      table(
        ['measure', `value at threshold ${threshold}`],
        [
          [
            'missed-switch rate (ROUTE turns with an agent, accepted CONTINUE)',
            formatRate(summary.missed_switch),
          ],
          [
            'misroute rate (wrong accepted CONTINUE / HANDOFF / END, all turns)',
            formatRate(summary.misroute),
          ],
          ['bypass rate (router skipped, all turns)', formatRate(summary.bypass)],
          [
            "ROUTE turns naming their target (router's model skipped) / right among them",
            `${formatRate(summary.route_targets.named)} / ${formatRate(summary.route_targets.right)}`,
          ],
          [
            'lowest swept threshold with no misroute',
            summary.lowest_safe_threshold === null ? 'none' : String(summary.lowest_safe_threshold),
          ],
          ['macro F1 of the model label (before the threshold)', decimal(summary.raw_macro_f1)],
        ],
      ),
      '',
    ],
  };
  const sweep: ReportSection = {
    title: 'Threshold sweep: bypass against misroute',
    lines: [
      'Bypass: the router is skipped (accepted CONTINUE, HUMAN_HANDOFF or END_SESSION), over all turns. ' +
        'Misroute: an accepted CONTINUE whose label is not CONTINUE, or an accepted HUMAN_HANDOFF / END_SESSION that ' +
        'is wrong, over all turns. Missed switch: label ROUTE with an active agent but accepted CONTINUE. ' +
        'Missed continue: label CONTINUE that still went to the router (a cost, not a harm). ' +
        'Missed session action: a handoff or end request that was not accepted as such.',
      '',
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
          const mark = row.threshold === threshold ? '**' : '';
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
    ],
  };
  const depth: ReportSection = {
    title: 'Accuracy by turn depth',
    lines: [
      'Depth is the position of the turn in its conversation (1 = first message). A drop with depth is the ' +
        '"deep conversation" effect reported for Galaxy\'s ChatGXY router (galaxyproject/galaxy#22791).',
      '',
      groupTable('depth', summary.by_depth),
      '',
    ],
  };
  return [
    stickiness,
    sweep,
    depth,
    { title: 'By domain', lines: [groupTable('domain', summary.by_domain), ''] },
    {
      title: 'By situation (hard cases)',
      lines: [
        'A turn can carry several tags; see eval/README.md for their meaning.',
        '',
        groupTable(
          'tag',
          summary.by_tag.filter((g) => g.turns > 0),
        ),
        '',
      ],
    },
  ];
}
