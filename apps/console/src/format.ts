/** Display helpers shared by the views: pure, so they are unit-tested outside the browser. */
import type { components } from './api/openapi';

/** "42 s", "5 min", "3 h 20 min", "2 d 4 h": coarse enough to read at a glance. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
  const days = Math.floor(hours / 24);
  return hours % 24 ? `${days} d ${hours % 24} h` : `${days} d`;
}

/** How long ago an ISO instant was, relative to `now`. */
export function formatAgo(iso: string, now: number): string {
  const at = Date.parse(iso);
  return Number.isNaN(at) ? '—' : `${formatDuration(now - at)} ago`;
}

/** A local date and time without seconds, e.g. for table cells; the ISO value goes in the title. */
export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  return at.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}

/** 0.834 → "83.4 %"; null (nothing to divide) → "—". */
export function formatPercent(ratio: number | null | undefined): string {
  if (ratio === null || ratio === undefined || !Number.isFinite(ratio)) return '—';
  return `${(ratio * 100).toFixed(1)} %`;
}

/** 1234567 → "1,234,567" (thousands grouped for the reader's locale). */
export function formatCount(value: number): string {
  return value.toLocaleString();
}

/** What a checkpoint recovery did to the turn that ran into it, in one sentence. */
export function recoveryText(recovery: components['schemas']['CheckpointRecoveryDto']): string {
  const version = recovery.version ?? '?';
  switch (recovery.kind) {
    case 'skip_corrupt':
      return `Checkpoint version ${version} failed its integrity check and was skipped${recovery.reason ? ` (${recovery.reason})` : ''}.`;
    case 'clean_start':
      return `No checkpoint was usable (${recovery.skipped ?? '?'} corrupt): the conversation started afresh.`;
    case 'version_gap': {
      const missing = recovery.skipped ?? 1;
      const versions =
        recovery.version !== null && missing > 1
          ? `versions ${recovery.version - missing + 1}–${recovery.version} are`
          : `version ${version} is`;
      return recovery.found_version === null
        ? `Checkpoint ${versions} missing and nothing older is stored: the conversation started afresh.`
        : `Checkpoint ${versions} missing (deleted or lost in a restore): the turn went on from version ${recovery.found_version}.`;
    }
  }
}

const UNAVAILABLE_SUBJECT: Record<string, string> = {
  MODEL_UNAVAILABLE: 'the model of profile',
  GUARDRAIL_MODEL_UNAVAILABLE: 'the guardrail model of profile',
  MCP_UNAVAILABLE: 'the MCP server',
};

/** A dependency a turn could not use, in words: what it was and why ("the MCP server telecom (timeout)"). */
export function unavailableText(dependency: components['schemas']['UnavailableDependencyDto']): string {
  const cause = dependency.status === null ? dependency.cause : `${dependency.cause} ${dependency.status}`;
  return `${UNAVAILABLE_SUBJECT[dependency.code] ?? dependency.code} ${dependency.name} (${cause})`;
}

/**
 * An amount of `currency` for the reader's locale: cents above one unit, three significant digits below (a
 * period's classifier may cost $0.000878), "—" when unknown.
 */
export function formatMoney(amount: number | null | undefined, currency: string | null | undefined): string {
  if (amount === null || amount === undefined || !currency || !Number.isFinite(amount)) return '—';
  const small = amount !== 0 && Math.abs(amount) < 1;
  return amount.toLocaleString(undefined, {
    style: 'currency',
    currency,
    ...(small ? { maximumSignificantDigits: 3 } : { minimumFractionDigits: 2, maximumFractionDigits: 2 }),
  });
}
