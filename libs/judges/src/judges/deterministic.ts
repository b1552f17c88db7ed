import { foldText, type Diagnostics } from '@agent/contracts';
import type { JudgeName } from '../judges.config';
import { clamp01, countMatches, round2 } from '../text';
import { JudgeContext, evidenceText } from './evidence';

export interface JudgeScore {
  score: number;
  reason: string;
  metadata: Diagnostics;
}

const PLACEHOLDERS = [
  /\{\{.*?\}\}/,
  /\[(nome|name|cliente|customer|valor|value|data|date)\]/i,
  /\bTODO\b/,
  /lorem ipsum/i,
];

/** Non-empty, long enough to help, no template leftovers, not looping. */
export function responseQuality(context: JudgeContext): JudgeScore {
  const answer = context.answer.trim();
  if (answer === '') return { score: 0, reason: 'empty answer', metadata: {} };
  let score = 1;
  const problems: string[] = [];
  if (answer.length < 20) {
    score -= 0.5;
    problems.push('very short');
  }
  if (PLACEHOLDERS.some((p) => p.test(answer))) {
    score -= 0.5;
    problems.push('template placeholder left in the answer');
  }
  const sentenceList = foldText(answer)
    .split(/[.!?]+/)
    .map((s) => s.trim())
    .filter((s) => s.length > 10);
  if (sentenceList.length > 1 && new Set(sentenceList).size < sentenceList.length) {
    score -= 0.3;
    problems.push('repeated sentences');
  }
  return {
    score: round2(clamp01(score)),
    reason: problems.length > 0 ? problems.join('; ') : 'complete, non-trivial answer',
    metadata: { chars: answer.length },
  };
}

/** Amounts, percentages, dates and long identifiers stated in a text (digits only, for comparison). */
export function factualTokens(text: string): string[] {
  const patterns = [
    /(?:R\$|US\$|\$|€|£)\s?\d[\d.,]*/g,
    /\b\d+(?:[.,]\d+)?\s?%/g,
    /\b\d{1,2}\/\d{1,2}(?:\/\d{2,4})?\b/g,
    /\b\d{4}-\d{2}-\d{2}\b/g,
    /\b\d{4,}\b/g,
  ];
  const tokens = new Set<string>();
  const spans: [number, number][] = [];
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) {
      const start = match.index;
      const end = start + match[0].length;
      // A year inside a date or digits inside an amount are part of that fact, not another one.
      if (spans.some(([s, e]) => start < e && end > s)) continue;
      spans.push([start, end]);
      const digits = match[0].replace(/\D/g, '');
      if (digits.length > 0) tokens.add(digits);
    }
  }
  return [...tokens];
}

/**
 * Share of the answer's figures (amounts, dates, percentages, identifiers) found in the MCP, RAG or
 * transaction evidence or in the user's own message. An answer with no figures has nothing to ground.
 */
export function groundedness(context: JudgeContext): JudgeScore {
  const facts = factualTokens(context.answer);
  if (facts.length === 0) return { score: 1, reason: 'no factual figures to ground', metadata: { facts: 0 } };
  const evidence = `${evidenceText(context, Number.POSITIVE_INFINITY)} ${context.userText}`;
  const evidenceDigits = new Set(
    [...evidence.matchAll(/\d[\d.,/-]*/g)].map((m) => m[0].replace(/\D/g, '')).filter((d) => d.length > 0),
  );
  const evidenceJoined = [...evidenceDigits].join(' ');
  const grounded = facts.filter((f) => evidenceDigits.has(f) || evidenceJoined.includes(f));
  const ungrounded = facts.filter((f) => !grounded.includes(f));
  return {
    score: round2(grounded.length / facts.length),
    reason:
      ungrounded.length === 0
        ? 'every figure of the answer appears in the evidence'
        : `${ungrounded.length} of ${facts.length} figure(s) not found in the evidence`,
    metadata: { facts: facts.length, ungrounded },
  };
}

const NEGATIVE = [
  /\b(absurd[oa]|ridicul[oa]|pessim[oa]|horrivel|terrivel|vergonha|revoltad[oa]|irritad[oa]|raiva|descaso|palhacada|inaceitavel|nunca mais|cansad[oa] de)\b/,
  /\b(terrible|awful|worst|horrible|ridiculous|unacceptable|angry|furious|disgusted|fed up|never again|useless)\b/,
];
const ESCALATION = [
  /\b(procon|anatel|reclame aqui|processar|advogado|justica)\b/,
  /\b(lawsuit|lawyer|sue you|regulator|attorney)\b/,
];
const POSITIVE = [
  /\b(obrigad[oa]|valeu|otimo|excelente|perfeito|maravilh|adorei|resolvido|muito bom)\b/,
  /\b(thanks|thank you|great|excellent|perfect|awesome|love it|solved|very good)\b/,
];

/** The customer's sentiment in their message: 0 very negative, 0.5 neutral, 1 very positive. */
export function sentiment(context: JudgeContext): JudgeScore {
  const raw = context.userText;
  const text = foldText(raw);
  const negative = countMatches(text, NEGATIVE);
  const escalation = countMatches(text, ESCALATION);
  const positive = countMatches(text, POSITIVE);
  const letters = raw.replace(/[^A-Za-zÀ-ÿ]/g, '');
  const shouting = letters.length >= 12 && letters === letters.toUpperCase() ? 1 : 0;
  const exclamations = /!{2,}/.test(raw) ? 1 : 0;
  const score = clamp01(
    0.5 + 0.2 * positive - 0.2 * negative - 0.3 * escalation - 0.1 * (shouting + exclamations),
  );
  const label = score < 0.35 ? 'negative' : score > 0.65 ? 'positive' : 'neutral';
  return {
    score: round2(score),
    reason: `customer sentiment ${label}`,
    metadata: { label, negative, escalation, positive, shouting: shouting === 1 },
  };
}

const RUDE = [
  /\b(idiota|burr[oa]|imbecil|cala a boca|problema seu|se vira)\b/,
  /\b(stupid|idiot|shut up|your problem|deal with it)\b/,
];
const BLAMING = [
  /\b(voce deveria ter|como eu ja disse|como ja foi dito|voce nao leu|a culpa e sua)\b/,
  /\b(you should have|as i already said|as i said before|you didn't read|it's your fault)\b/,
];
const COURTEOUS = [
  /\b(por favor|obrigad[oa]|desculpe|lamento|sinto muito|fico a disposicao|posso ajudar)\b/,
  /\b(please|thank you|thanks|sorry|apologi[sz]e|happy to help|can i help)\b/,
];

/** Polite, professional answer: no rudeness, blame or shouting. */
export function tone(context: JudgeContext): JudgeScore {
  const raw = context.answer;
  const text = foldText(raw);
  const rude = countMatches(text, RUDE);
  const blaming = countMatches(text, BLAMING);
  const courteous = countMatches(text, COURTEOUS);
  const letters = raw.replace(/[^A-Za-zÀ-ÿ]/g, '');
  const shouting = letters.length >= 12 && letters === letters.toUpperCase();
  const score = clamp01(
    0.8 + 0.1 * Math.min(courteous, 2) - 0.5 * rude - 0.3 * blaming - (shouting ? 0.4 : 0),
  );
  const problems = [
    rude > 0 ? 'rude wording' : '',
    blaming > 0 ? 'blames the customer' : '',
    shouting ? 'shouting' : '',
  ].filter((p) => p !== '');
  return {
    score: round2(score),
    reason: problems.length > 0 ? problems.join('; ') : 'polite and professional',
    metadata: { rude, blaming, courteous, shouting },
  };
}

export const DETERMINISTIC_JUDGES: Record<JudgeName, (context: JudgeContext) => JudgeScore> = {
  response_quality: responseQuality,
  groundedness,
  sentiment,
  tone,
};
