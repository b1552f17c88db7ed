/** How many of the patterns match (each counted once). */
export function countMatches(text: string, patterns: readonly RegExp[]): number {
  return patterns.reduce((n, p) => n + (p.test(text) ? 1 : 0), 0);
}

export function clamp01(value: number): number {
  return Math.min(1, Math.max(0, value));
}

export function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
