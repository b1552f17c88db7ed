import { z } from 'zod';
import { confidenceSchema, structuredOutput } from '@agent/llm';
import type { MemoryFact } from './memory.types';

/** Facts one turn may write: bounds the writes and the prompt echo of a misbehaving model. */
export const MAX_FACTS_PER_TURN = 10;
const MAX_VALUE_CHARS = 300;
const MAX_MESSAGE_CHARS = 4000;

export interface ExtractionInput {
  customerMessage: string;
  previousAssistantMessage: string | null;
  knownFacts: { category: string; key: string; value: string }[];
}

/**
 * The `memory_extraction` prompt. The model decides what is a durable fact in any language; no
 * pattern in this code does.
 */
export function extractionMessages(input: ExtractionInput): { role: 'system' | 'user'; content: string }[] {
  const system = [
    'You maintain the long-term memory of a customer-service assistant across conversations.',
    'From the customer message, extract durable facts about the customer: how they want to be addressed,',
    'lasting preferences (language, channel, contact times), products or plans they own, constraints that',
    'will still hold in a later conversation.',
    'Do not extract: one-off requests or questions, the reason for this contact, anything the assistant said,',
    'secrets or credentials (passwords, card numbers, document numbers, codes), or guesses.',
    'Rules:',
    '- key: short snake_case identifier in English, stable for the same fact; reuse the key of a known fact',
    '  when the customer updates it.',
    '- category: one of profile, preference, contact, account, constraint, other.',
    '- value: concise, in the language the customer used.',
    '- confidence: 0..1, how explicitly the customer stated it.',
    'Answer with JSON only: {"facts": [{"category": "...", "key": "...", "value": "...", "confidence": 0.0}]}',
    'Answer {"facts": []} when there is nothing durable.',
  ].join('\n');
  const user = JSON.stringify({
    known_facts: input.knownFacts,
    previous_assistant_message: truncate(input.previousAssistantMessage ?? '', MAX_MESSAGE_CHARS) || null,
    customer_message: truncate(input.customerMessage, MAX_MESSAGE_CHARS),
  });
  return [
    { role: 'system', content: system },
    { role: 'user', content: user },
  ];
}

const factSchema = z.object({
  category: z.string(),
  key: z.string(),
  value: z.union([z.string(), z.number(), z.boolean()]).transform(String),
  confidence: confidenceSchema,
});

/**
 * The memory_extraction contract: {facts: [{category, key, value, confidence}]}. Only the list itself must be
 * valid; each fact is checked on its own (validateExtraction), so one malformed fact does not lose the others.
 */
export const memoryFactsOutput = structuredOutput(
  'memory_facts',
  z.object({ facts: z.array(z.unknown()) }),
  z.object({
    facts: z.array(
      z.object({ category: z.string(), key: z.string(), value: z.string(), confidence: confidenceSchema }),
    ),
  }),
);

export interface ExtractionResult {
  facts: MemoryFact[];
  /** Facts dropped: malformed, empty after normalization, below the minimum confidence, or over the cap. */
  discarded: number;
}

/** The facts of a valid answer: a malformed or weak individual fact is dropped and counted. */
export function validateExtraction(candidates: readonly unknown[], minConfidence: number): ExtractionResult {
  const facts: MemoryFact[] = [];
  let discarded = 0;
  for (const candidate of candidates) {
    const fact = factSchema.safeParse(candidate);
    if (!fact.success) {
      discarded++;
      continue;
    }
    const normalized: MemoryFact = {
      category: identifier(fact.data.category) || 'other',
      key: identifier(fact.data.key),
      value: truncate(oneLine(fact.data.value), MAX_VALUE_CHARS),
      confidence: fact.data.confidence,
    };
    if (!normalized.key || !normalized.value || normalized.confidence < minConfidence) {
      discarded++;
      continue;
    }
    if (facts.length >= MAX_FACTS_PER_TURN) {
      discarded++;
      continue;
    }
    facts.push(normalized);
  }
  return { facts, discarded };
}

/** Lower-case, words joined by `_`, at most 64 characters; Unicode letters are kept. */
function identifier(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .trim()
    .replace(/[^\p{L}\p{N}]+/gu, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 64);
}

/**
 * One line, no control characters and no angle brackets: values are rendered as `- key: value` lines between
 * the delimiters of the agent prompt's data block, which a value must never be able to close.
 */
function oneLine(text: string): string {
  return text
    .replace(/[\p{Cc}\p{Zl}\p{Zp}]+/gu, ' ')
    .replace(/</g, '‹')
    .replace(/>/g, '›')
    .replace(/\s+/g, ' ')
    .trim();
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** `- key: value` lines, in the given order (`long_term_memory_context`). */
export function renderMemoryContext(facts: { key: string; value: string }[]): string {
  return facts.map((fact) => `- ${fact.key}: ${oneLine(fact.value)}`).join('\n');
}
