/** Lower-cases, strips accents and collapses whitespace (Portuguese and English heuristics share patterns). */
export function normalizeText(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim();
}

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
