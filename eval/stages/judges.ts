/**
 * The judges: every answer of the set through the real JudgesService.evaluate, each judge of judges.yaml as an
 * `llm` judge (its threshold, profile and context cap as configured), one judgment per judge and case.
 */
import { ConfigFilesService } from '@agent/config';
import type { JudgeResult, McpToolResult, RoutedTurnState } from '@agent/contracts';
import { JUDGE_NAMES, JUDGES_FILE, judgesFileSchema, JudgesService } from '@agent/judges';
import { LlmService } from '@agent/llm';
import { FALLBACK_INTENT, JudgeCase, judgeCaseLabel, LoadedSet } from '../datasets';
import { table } from '../markdown';
import { Ratio, ratio } from '../metrics';
import { headlineRows, summarySections } from '../render';
import {
  CaseOutcome,
  pool,
  ReportSection,
  runCase,
  StageResult,
  StageSummary,
  StageThreshold,
  summarizeStage,
  Usage,
} from '../stage';
import { datasetInfo, limited, StageRunOptions, stageModels } from './common';
import { routedTurnStateOf } from '../../test/support/states';

export const JUDGE_LABELS = ['pass', 'fail'] as const;

type JudgeDetail = {
  judge: string;
  case_id: string;
  score: number | null;
  /** The threshold the service applied (judges.yaml, else the judge's default). */
  threshold: number;
  answer: string;
};
export type JudgeOutcome = CaseOutcome<JudgeDetail>;

/**
 * At threshold t a judgment passes when the score is at least t (the service also needs the model's own
 * `passed`, which it gave against the configured threshold). The costly error is a failing answer that passes.
 */
export function judgeThreshold(judge: string, configured: number): StageThreshold<JudgeOutcome> {
  return {
    setting: `judges.yaml ${judge} threshold`,
    configured,
    costly_error: 'missed bad answer: an answer that should fail passes',
    at_risk: 'answers that should fail',
    decideAt: (o, t) => (o.detail.score === null ? o.decided : o.detail.score >= t ? 'pass' : 'fail'),
    isCostly: (o, decided) => o.expected === 'fail' && decided === 'pass',
    atRisk: (o) => o.expected === 'fail',
    acts: (_o, decided) => decided === 'fail',
    expected: (o) => o.expected,
    raiseToReduce: true,
  };
}

function judgeState(item: JudgeCase, files: ConfigFilesService): RoutedTurnState {
  const intent = item.intent ? files.routing.intents.find((i) => i.name === item.intent) : undefined;
  const evidence: McpToolResult[] = item.evidence.map((e) => ({
    tool_name: e.tool,
    server: files.tools.tools[e.tool]?.server ?? null,
    ok: true,
    result: e.result,
    error: null,
    latency_ms: 0,
  }));
  return routedTurnStateOf({
    tenant_id: 'eval',
    agent_id: 'eval',
    session_id: item.id,
    user_text: item.message,
    sanitized_input: item.message,
    route: intent?.agent ?? FALLBACK_INTENT,
    intent: intent?.name ?? FALLBACK_INTENT,
    answer: item.answer,
    final_answer: item.answer,
    mcp_results: evidence,
  });
}

/** A case's calls serve every judge at once: each judgment carries its share. */
function share(usage: Usage, parts: number): Usage {
  return {
    calls: usage.calls / parts,
    prompt_tokens: usage.prompt_tokens / parts,
    cached_prompt_tokens: usage.cached_prompt_tokens / parts,
    completion_tokens: usage.completion_tokens / parts,
    cost: usage.cost === null ? null : usage.cost / parts,
    currency: usage.currency,
  };
}

export async function runJudgeStage(
  set: LoadedSet<JudgeCase>,
  options: StageRunOptions,
): Promise<StageResult> {
  const started = performance.now();
  const { app, settings } = options.context;
  const files = app.get(ConfigFilesService);
  const judges = app.get(JudgesService);
  const config = files.load(JUDGES_FILE, judgesFileSchema);
  const cases = limited(set.cases, options.limit);
  const perCase = new Array<JudgeOutcome[] | undefined>(cases.length);
  let done = 0;
  await pool(cases, options.concurrency, async (item, index) => {
    const run = await runCase(item.id, options.priceOf, () => judges.evaluate(judgeState(item, files)));
    const results: JudgeResult[] = run.value;
    const usage = share(run.usage, Math.max(1, results.length));
    perCase[index] = results.map((result) => {
      const failed = result.error !== undefined;
      const modelPassed = result.metadata.model_passed;
      const failure = run.failure(failed);
      return {
        id: `${item.id}:${result.name}`,
        language: item.language,
        tags: [result.name, ...item.tags],
        text: item.message,
        expected: item.expected[result.name as (typeof JUDGE_NAMES)[number]],
        decided: result.passed ? 'pass' : 'fail',
        model_label:
          failure === null && typeof modelPassed === 'boolean' ? (modelPassed ? 'pass' : 'fail') : null,
        confidence: failure === null ? result.score : null,
        asked_model: run.asked,
        failure,
        latency_ms: run.latency_ms,
        usage,
        reason: result.reason,
        detail: {
          judge: result.name,
          case_id: item.id,
          score: failure === null ? result.score : null,
          threshold: result.threshold,
          answer: item.answer,
        },
      };
    });
    options.onProgress(++done, cases.length);
  });
  const outcomes = perCase.flatMap((list) => list ?? []);
  const summary = summarizeStage(outcomes, {
    labels: JUDGE_LABELS,
    calibrated: false,
    threshold: null,
    target: options.target,
  });
  const byJudge: Record<string, StageSummary> = {};
  const sections: ReportSection[] = [];
  for (const entry of config.judges.filter((j) => j.enabled)) {
    const members = outcomes.filter((o) => o.detail.judge === entry.name);
    if (members.length === 0) continue;
    const judgeSummary = summarizeStage(members, {
      labels: JUDGE_LABELS,
      calibrated: false,
      threshold: judgeThreshold(entry.name, members[0].detail.threshold),
      target: options.target,
    });
    byJudge[entry.name] = judgeSummary;
    sections.push({
      title: `Judge ${entry.name}`,
      lines: [
        table(['measure', 'value'], headlineRows(judgeSummary).slice(0, 8)),
        '',
        ...summarySections(judgeSummary)
          .filter((section) => section.title !== 'By language')
          .flatMap((section) => [`**${section.title}**`, '', ...section.lines]),
      ],
    });
  }
  const headline: { measure: string; value: Ratio }[] = Object.entries(byJudge).map(([name, s]) => ({
    measure: `${name} right`,
    value: s.accuracy,
  }));
  return {
    name: 'judges',
    title: 'Judges',
    method:
      'Every answer of the set through the real `JudgesService.evaluate`, with the customer message, the answer ' +
      'and the tool results as evidence; each enabled judge of judges.yaml runs as an `llm` judge with its ' +
      'configured threshold and profile. A judgment is `pass` when the service scores it passed.',
    models: stageModels(
      app.get(LlmService),
      config.judges.filter((j) => j.enabled).map((j) => j.profile ?? config.profile),
    ),
    dataset: datasetInfo(set, (c) => c.language, judgeCaseLabel, options.root),
    summary,
    headline: headline.length > 0 ? headline : [{ measure: 'judgments right', value: ratio(0, 0) }],
    extra: Object.fromEntries(
      Object.entries(byJudge).map(([name, s]) => [
        name,
        {
          accuracy: { ...s.accuracy },
          threshold: s.threshold?.configured ?? null,
          recommended: s.threshold?.recommended ?? null,
          missed_bad_answers: s.threshold ? { ...s.threshold.at_configured.costly } : null,
        },
      ]),
    ),
    sections,
    notes: [
      ...(settings.deterministic_judges.length > 0
        ? [
            `judges.yaml runs ${settings.deterministic_judges.join(', ')} as deterministic judges: these figures are ` +
              'what the model would give as `type: llm`, not what the service runs today.',
          ]
        : []),
      'A case’s judges share its calls: each judgment carries an equal share of its tokens and cost.',
    ],
    cases: outcomes,
    duration_ms: Math.round(performance.now() - started),
  };
}
