import { relative } from 'node:path';
import type { LlmService } from '@agent/llm';
import type { EvalContext } from '../eval-context';
import { LoadedSet, setStats } from '../datasets';
import type { DatasetInfo, PriceOf, StageModel } from '../stage';

/** What a stage runner gets: the stages as the service builds them and how to run. */
export interface StageRunOptions {
  context: EvalContext;
  priceOf: PriceOf;
  concurrency: number;
  /** Only the first cases of the set, in its order (CI proves the plumbing on a few). */
  limit: number | undefined;
  /** The costly error rate the recommended threshold keeps the stage under. */
  target: number;
  /** The repository root, for the dataset paths of the report. */
  root: string;
  onProgress: (done: number, total: number) => void;
}

/** The models the given profiles call, as the service resolves them. */
export function stageModels(llm: LlmService, profiles: readonly string[]): StageModel[] {
  return [...new Set(profiles)].map((profile) => {
    const resolved = llm.resolveProfile(profile);
    return {
      profile: resolved?.name === profile || resolved === null ? profile : `${profile} → ${resolved.name}`,
      tier: resolved?.config.tier ?? 'none',
      model: resolved?.model ?? null,
      provider: resolved?.provider ?? 'none',
    };
  });
}

/** The set as the report names it, with its cases per language and per label. */
export function datasetInfo<C>(
  set: LoadedSet<C>,
  languageOf: (item: C) => string,
  labelOf: (item: C) => string,
  root: string,
): DatasetInfo {
  const stats = setStats(set.cases, languageOf, labelOf);
  return {
    path: relative(root, set.path) || set.path,
    sha256: set.sha256,
    cases: stats.cases,
    by_language: stats.by_language,
    by_label: stats.by_label,
  };
}

/** The first `limit` items (all without a limit). */
export function limited<T>(items: readonly T[], limit: number | undefined): T[] {
  return items.slice(0, limit);
}
