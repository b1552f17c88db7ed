import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { REPO_ROOT } from '../test/support/repo-root';

export { REPO_ROOT } from '../test/support/repo-root';

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

export function mean(values: number[]): number {
  return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}

export function round(value: number, digits = 1): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export interface LlmCallRow {
  conversation_key: string;
  turn: number;
  profile: string;
  latency_ms: number;
  prompt_tokens: number;
  cached_prompt_tokens: number;
  completion_tokens: number;
  outcome: string;
}

/** Every `llm.call` event stored for these conversations (the turn's own accounting). */
export async function llmCalls(dataSource: DataSource, conversationKeys: string[]): Promise<LlmCallRow[]> {
  if (conversationKeys.length === 0) return [];
  const rows: { conversation_key: string; turn: number; payload: Record<string, unknown> }[] =
    await dataSource.query(
      `SELECT conversation_key, turn, payload FROM session_events WHERE name = 'llm.call' AND conversation_key = ANY($1)`,
      [conversationKeys],
    );
  return rows.map((row) => ({
    conversation_key: row.conversation_key,
    turn: row.turn,
    profile: String(row.payload.profile),
    latency_ms: Number(row.payload.latency_ms ?? 0),
    prompt_tokens: Number(row.payload.prompt_tokens ?? 0),
    cached_prompt_tokens: Number(row.payload.cached_prompt_tokens ?? 0),
    completion_tokens: Number(row.payload.completion_tokens ?? 0),
    outcome: String(row.payload.outcome),
  }));
}

/** Runs `work` over `items` with at most `limit` in flight. */
export async function pool<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]);
    }
  });
  await Promise.all(workers);
  return results;
}

/** Asks a benchmark or evaluation run to rewrite its committed reports. */
export const UPDATE_REPORT_FLAG = '--update-report';

/**
 * Where a run of `area` (`bench`, `eval`) writes: the committed `<area>/reports/` only when asked with
 * `--update-report`, else the untracked `<area>/results/`, so a trial run never dirties the repository.
 */
export function reportDirectory(
  area: string,
  updateReport = process.argv.includes(UPDATE_REPORT_FLAG),
  root = REPO_ROOT,
): string {
  return join(root, area, updateReport ? 'reports' : 'results');
}

/** Writes one file of a benchmark report (see reportDirectory) and returns its path. */
export function writeReport(fileName: string, content: string): string {
  const path = join(reportDirectory('bench'), fileName);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
  return path;
}

/**
 * The first markdown table of `report` after the line `heading` (or the first table at all), with its
 * columns padded so it reads as a table on a console too.
 */
export function consoleTable(report: string[], heading?: string): string {
  const start = heading === undefined ? 0 : report.indexOf(heading);
  if (start < 0) throw new Error(`report has no heading "${heading}"`);
  const first = report.findIndex((line, index) => index > start && line.startsWith('|'));
  if (first < 0) throw new Error(`report has no table after "${heading ?? 'its start'}"`);
  const end = report.findIndex((line, index) => index > first && !line.startsWith('|'));
  const rows = report.slice(first, end < 0 ? undefined : end).map((line) =>
    line
      .slice(1, -1)
      .split('|')
      .map((cell) => cell.trim()),
  );
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows
    .map((row, index) =>
      index === 1
        ? widths.map((width) => '-'.repeat(width)).join('-|-')
        : row
            .map((cell, column) => cell.padEnd(widths[column]))
            .join(' | ')
            .trimEnd(),
    )
    .join('\n');
}

export interface BarSeries {
  label: string;
  color: string;
  values: number[];
}

/** A grouped bar chart as a standalone SVG (no dependency). */
export function barChartSvg(title: string, groups: string[], series: BarSeries[], unit: string): string {
  const width = 760;
  const height = 380;
  const margin = { top: 50, right: 20, bottom: 70, left: 70 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const max = Math.max(1, ...series.flatMap((s) => s.values));
  const groupW = plotW / groups.length;
  const barW = (groupW * 0.8) / series.length;
  const y = (v: number) => margin.top + plotH - (v / max) * plotH;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const value = (max * i) / 4;
    parts.push(
      `<line x1="${margin.left}" x2="${width - margin.right}" y1="${y(value)}" y2="${y(value)}" stroke="#ddd"/>`,
      `<text x="${margin.left - 6}" y="${y(value) + 4}" text-anchor="end">${Math.round(value)}</text>`,
    );
  }
  parts.push(
    `<text x="16" y="${margin.top + plotH / 2}" transform="rotate(-90 16 ${margin.top + plotH / 2})" text-anchor="middle">${escapeXml(unit)}</text>`,
  );
  groups.forEach((group, g) => {
    const x0 = margin.left + g * groupW + groupW * 0.1;
    series.forEach((s, i) => {
      const value = s.values[g] ?? 0;
      const x = x0 + i * barW;
      parts.push(
        `<rect x="${x}" y="${y(value)}" width="${barW - 2}" height="${margin.top + plotH - y(value)}" fill="${s.color}"/>`,
        `<text x="${x + barW / 2 - 1}" y="${y(value) - 4}" text-anchor="middle" font-size="10">${Math.round(value)}</text>`,
      );
    });
    parts.push(
      `<text x="${margin.left + g * groupW + groupW / 2}" y="${height - margin.bottom + 18}" text-anchor="middle">${escapeXml(group)}</text>`,
    );
  });
  series.forEach((s, i) => {
    const x = margin.left + i * 150;
    parts.push(
      `<rect x="${x}" y="${height - 28}" width="12" height="12" fill="${s.color}"/>`,
      `<text x="${x + 18}" y="${height - 18}">${escapeXml(s.label)}</text>`,
    );
  });
  parts.push('</svg>');
  return parts.join('\n');
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * A failure a benchmark reports in one line, without a stack: it could not start (no server, no database, no right
 * to create one; exit code 2) or it stopped early (1).
 */
export class BenchFailure extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
  }
}

/** The connection string's server and database, without the password. */
function describeDatabase(url: URL): string {
  return `${url.hostname || 'localhost'}:${url.port || '5432'}/${decodeURIComponent(url.pathname.slice(1))}`;
}

function causeOf(error: unknown): string {
  const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
  const message = error instanceof Error ? error.message : String(error);
  return code && !message.includes(code) ? `${message} (${code})` : message;
}

/**
 * Makes sure the database `url` names exists: when the server answers that it does not (3D000), it is created from
 * the server's `postgres` database. A server that cannot be reached, or a role that may not create the database,
 * is a BenchFailure that names the server, the database and the cause.
 */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const connectTo = async (connectionString: string): Promise<Client> => {
    const client = new Client({ connectionString, connectionTimeoutMillis: 10_000 });
    // A connection the server drops while the bench is idle must not end the process with an unhandled error.
    client.on('error', () => undefined);
    await client.connect();
    return client;
  };
  try {
    await (await connectTo(url)).end();
    return;
  } catch (error) {
    const code = typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
    if (code !== '3D000') {
      throw new BenchFailure(`cannot reach the database ${describeDatabase(target)}: ${causeOf(error)}`);
    }
  }
  const server = new URL(url);
  server.pathname = '/postgres';
  const name = decodeURIComponent(target.pathname.slice(1));
  try {
    const admin = await connectTo(server.toString());
    try {
      await admin.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    } finally {
      await admin.end();
    }
    console.log(`created the database ${describeDatabase(target)}`);
  } catch (error) {
    throw new BenchFailure(
      `the database ${describeDatabase(target)} does not exist and cannot be created: ${causeOf(error)}`,
    );
  }
}

/** Runs a benchmark: a BenchFailure prints one line and exits with its code; anything else its error and 1. */
export function runBench(name: string, main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    if (error instanceof BenchFailure) console.error(`${name}: ${error.message}`);
    else console.error(error);
    process.exit(error instanceof BenchFailure ? error.exitCode : 1);
  });
}
