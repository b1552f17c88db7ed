import type { Ratio } from './metrics';

/** "12.5% (1/8)", or "n/a (0/0)" when there was nothing to measure. */
export function formatRate(value: Ratio): string {
  return value.rate === null ? `n/a (0/0)` : `${percent(value.rate)} (${value.count}/${value.total})`;
}

export function percent(rate: number | null): string {
  return rate === null ? 'n/a' : `${(rate * 100).toFixed(1)}%`;
}

export function decimal(value: number | null, digits = 3): string {
  return value === null ? 'n/a' : value.toFixed(digits);
}

/** An amount in the price table's currency, with enough digits for the cost of a few calls. */
export function money(value: number | null, currency: string | null): string {
  if (value === null) return 'n/a';
  return `${currency ?? ''} ${value >= 1 ? value.toFixed(2) : value.toFixed(4)}`.trim();
}

/** A markdown table; pipes and newlines inside cells are escaped. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const escape = (cell: string) => cell.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  return [
    `| ${header.map(escape).join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${row.map(escape).join(' | ')} |`),
  ].join('\n');
}

/** A confusion matrix with the diagonal in bold. */
export function matrixTable(
  matrix: Readonly<Record<string, Readonly<Record<string, number>>>>,
  rows: readonly string[],
  columns: readonly string[],
  corner = 'expected \\ decided',
): string {
  return table(
    [corner, ...columns],
    rows.map((label) => [
      label,
      ...columns.map((column) => {
        const count = matrix[label]?.[column] ?? 0;
        return column === label ? `**${count}**` : String(count);
      }),
    ]),
  );
}

/** A message cut for a table cell. */
export function excerpt(text: string, max = 120): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
