/**
 * Lower-cases, strips accents and collapses whitespace, so one pattern covers "instruções" and
 * "instrucoes" and the deterministic screens hold in Portuguese and English alike.
 */
export function normalizeText(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim();
}

/** The first pattern that matches the normalized text, or null. */
export function firstMatch(
  text: string,
  patterns: readonly RegExp[],
): { pattern: RegExp; match: string } | null {
  for (const pattern of patterns) {
    const found = pattern.exec(text);
    if (found) return { pattern, match: found[0] };
  }
  return null;
}

/**
 * Compiles an operator-written pattern (guardrails.yaml, judges.yaml): case-insensitive and Unicode-aware.
 * Returns the error message instead of throwing so the schema can report it with its key path.
 */
export function compileUserPattern(source: string): RegExp | string {
  try {
    return new RegExp(source, 'iu');
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** Matches the raw text or its accent-free form, so operators need not write both spellings. */
export function matchesEither(pattern: RegExp, text: string): boolean {
  return pattern.test(text) || pattern.test(normalizeText(text));
}

/** Splits an answer into sentences (., !, ?, ; or line breaks), keeping the terminator. */
export function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?;])\s+|\n+/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Rough token estimate used by INPUT_SIZE (the reference's chars/4). */
export function estimateTokens(text: string, charsPerToken: number): number {
  return Math.ceil(text.length / charsPerToken);
}
