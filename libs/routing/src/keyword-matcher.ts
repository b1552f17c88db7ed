import type { IntentConfig } from '@agent/config';
import { foldText } from '@agent/contracts';

/** How a keyword matched the message, from the strictest to the loosest (docs/architecture.md, keyword stage). */
export type KeywordStrategy = 'exact' | 'ordered_tokens' | 'ordered_content_tokens';

const STRATEGY_RANK: Record<KeywordStrategy, number> = {
  exact: 0,
  ordered_tokens: 1,
  ordered_content_tokens: 2,
};

export const KEYWORD_CONFIDENCE: Record<KeywordStrategy, number> = {
  exact: 0.85,
  ordered_tokens: 0.82,
  ordered_content_tokens: 0.8,
};

/** Most tokens the user may insert between two words of a multi-word keyword ("cancelar [o meu] pedido"). */
const ORDERED_MAX_GAP = 3;
/** Same, once the keyword's short connectors are dropped ("qual [é o] meu plano" ~ "qual o meu plano"). */
const CONTENT_MAX_GAP = 4;
/** Keyword tokens this short (articles, prepositions) may be omitted by the user. */
const CONNECTOR_MAX_LENGTH = 2;

/** Accent- and case-folded word tokens (letters and digits). */
export function tokenize(text: string): string[] {
  return foldText(text).match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** True when `needle` appears in `tokens` in order, with at most `maxGap` other tokens between neighbours. */
function appearsInOrder(needle: readonly string[], tokens: readonly string[], maxGap: number): boolean {
  const from = (index: number, position: number): boolean => {
    if (index === needle.length) return true;
    const last = Math.min(tokens.length - 1, position + 1 + maxGap);
    for (let j = position + 1; j <= last; j++) {
      if (tokens[j] === needle[index] && from(index + 1, j)) return true;
    }
    return false;
  };
  return tokens.some((token, start) => token === needle[0] && from(1, start));
}

/**
 * Whole-token matching: a single-word keyword must equal one token (no prefixes: "cancela" never matches
 * "cancelar"); a multi-word keyword matches contiguously, then in order with small gaps, then in order on its
 * content words when the user left out a short connector.
 */
export function matchKeyword(
  keywordTokens: readonly string[],
  tokens: readonly string[],
): KeywordStrategy | null {
  if (keywordTokens.length === 0) return null;
  if (keywordTokens.length === 1) return tokens.includes(keywordTokens[0]) ? 'exact' : null;
  if (appearsInOrder(keywordTokens, tokens, 0)) return 'exact';
  if (appearsInOrder(keywordTokens, tokens, ORDERED_MAX_GAP)) return 'ordered_tokens';
  const content = keywordTokens.filter((token) => token.length > CONNECTOR_MAX_LENGTH);
  if (
    content.length >= 2 &&
    content.length < keywordTokens.length &&
    appearsInOrder(content, tokens, CONTENT_MAX_GAP)
  ) {
    return 'ordered_content_tokens';
  }
  return null;
}

export interface KeywordMatch {
  intent: IntentConfig;
  keyword: string;
  strategy: KeywordStrategy;
  confidence: number;
}

interface IndexedKeyword {
  keyword: string;
  tokens: string[];
  /** Specificity tie-breaker: the longer folded keyword wins. */
  length: number;
}

/** The keyword stage over the enabled intents, with the keywords tokenized once at start-up. */
export class KeywordIndex {
  private readonly entries: { intent: IntentConfig; order: number; keywords: IndexedKeyword[] }[];

  constructor(intents: readonly IntentConfig[]) {
    this.entries = intents
      .filter((intent) => intent.enabled)
      .map((intent, order) => ({
        intent,
        order,
        keywords: intent.keywords.map((keyword) => {
          const tokens = tokenize(keyword);
          return { keyword, tokens, length: tokens.join(' ').length };
        }),
      }));
  }

  /**
   * The agents whose intents have a keyword in the message: more than one means the message may ask for
   * several things, which only the model can tell apart.
   */
  agentsMatched(text: string): Set<string> {
    const tokens = tokenize(text);
    const agents = new Set<string>();
    for (const { intent, keywords } of this.entries) {
      if (keywords.some((indexed) => matchKeyword(indexed.tokens, tokens))) agents.add(intent.agent);
    }
    return agents;
  }

  /** The winner by priority (lower wins), then strategy, then keyword length, then catalogue order. */
  match(text: string): KeywordMatch | null {
    const tokens = tokenize(text);
    if (tokens.length === 0) return null;
    let best: { match: KeywordMatch; rank: [number, number, number, number] } | null = null;
    for (const { intent, order, keywords } of this.entries) {
      for (const indexed of keywords) {
        const strategy = matchKeyword(indexed.tokens, tokens);
        if (!strategy) continue;
        const rank: [number, number, number, number] = [
          intent.priority,
          STRATEGY_RANK[strategy],
          -indexed.length,
          order,
        ];
        if (!best || compareRanks(rank, best.rank) < 0) {
          best = {
            match: { intent, keyword: indexed.keyword, strategy, confidence: KEYWORD_CONFIDENCE[strategy] },
            rank,
          };
        }
      }
    }
    return best?.match ?? null;
  }
}

function compareRanks(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return a[i] - b[i];
  }
  return 0;
}
