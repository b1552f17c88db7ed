import { z } from 'zod';
import type { IntentConfig } from '@agent/config';
import { confidenceSchema, LlmService, StructuredFailureReason, structuredOutput } from '@agent/llm';
import { IntentCatalogue } from './intent-catalogue';

/** The router LLM stage output: {intent, confidence, reason}. Extra keys (an `agent`, say) are ignored. */
export const routerOutput = structuredOutput(
  'router_intent',
  z.object({
    intent: z.string().trim().min(1),
    confidence: confidenceSchema,
    reason: z.string().nullish(),
    /** The message's other requests, in the order the user makes them (absent: only one). */
    more_intents: z
      .array(z.object({ intent: z.string().trim().min(1), confidence: confidenceSchema }))
      .nullish(),
  }),
);

/** Why an LLM-backed routing stage did not decide; recorded in the decision's metadata. */
export type LlmRejectionReason =
  StructuredFailureReason | 'disabled' | 'empty_message' | 'unknown_intent' | 'below_threshold';

export interface LlmRejection {
  accepted: false;
  reason: LlmRejectionReason;
  detail: string;
  latency_ms: number;
}

export interface IntentClassification {
  accepted: true;
  intent: IntentConfig;
  confidence: number;
  reason: string;
  latency_ms: number;
  /** The other catalogue intents the message asks for, at or above the threshold, each once, in order. */
  more: IntentConfig[];
}

/** Not accepted; `intent` and `confidence` are what the model said, when it said something valid. */
export type IntentRejection = LlmRejection & { intent?: string; confidence?: number };

/** Minimal session context: no history, RAG, tools or business rules reach the router prompt. */
export interface ClassifyContext {
  active_agent: string | null;
  previous_intent: string | null;
  /** Present while a state policy holds: what the pending transaction is waiting for. */
  transaction?: {
    state: string;
    agent: string;
    intent: string | null;
    missing_parameters: string[];
  };
  /** Topics of an earlier message still waiting to be served (router mode's multi-intent). */
  pending_topics?: { intent: string; label: string }[];
}

const SYSTEM_PROMPT = [
  'You are the intent router of a customer-service assistant.',
  'Classify the user message into exactly one intent of allowed_intents, using their descriptions and examples.',
  'Answer only with a JSON object: {"intent": "<a name from allowed_intents>", "confidence": <0..1>, "reason": "<short reason>"}.',
  'When no intent fits, answer {"intent": "none", "confidence": 0, "reason": "..."}.',
  'When transaction_context is present, a transaction is waiting for the user: if the message only answers what',
  'it waits for (a value, a name, an identifier, a yes or no), return the transaction intent; choose another intent',
  'only when the user clearly asks for something else.',
  'When the message asks for several things, put the first one the user mentions in intent and the others, in order,',
  'in more_intents: [{"intent": "<name>", "confidence": <0..1>}]; leave more_intents out for a single request.',
  'When pending_topics is present, the assistant offered to take those topics up next: when the user accepts one or',
  'asks for it, return its intent. Never answer the user.',
].join('\n');

/** The router LLM stage: one call, validated output, threshold and catalogue checks. */
export class LlmIntentClassifier {
  constructor(
    private readonly llm: LlmService,
    private readonly catalogue: IntentCatalogue,
    private readonly profile: string,
    private readonly threshold: number,
  ) {}

  async classify(message: string, context: ClassifyContext): Promise<IntentClassification | IntentRejection> {
    if (message.trim() === '') {
      return { accepted: false, reason: 'empty_message', detail: 'nothing to classify', latency_ms: 0 };
    }
    const payload = {
      message,
      allowed_intents: this.catalogue.cards(),
      session_context: { active_agent: context.active_agent, previous_intent: context.previous_intent },
      ...(context.transaction ? { transaction_context: context.transaction } : {}),
      ...(context.pending_topics?.length ? { pending_topics: context.pending_topics } : {}),
    };
    const result = await this.llm.structured({
      profile: this.profile,
      messages: [
        { role: 'system', content: SYSTEM_PROMPT },
        { role: 'user', content: JSON.stringify(payload) },
      ],
      output: routerOutput,
    });
    const latencyMs = Math.round(result.latencyMs);
    if (!result.ok) {
      return { accepted: false, reason: result.reason, detail: result.detail, latency_ms: latencyMs };
    }
    const { intent: name, confidence } = result.value;
    const reason = result.value.reason ?? '';
    const intent = this.catalogue.intent(name);
    if (!intent) {
      return {
        accepted: false,
        reason: 'unknown_intent',
        detail: `"${name}" is not an enabled intent`,
        intent: name,
        confidence,
        latency_ms: latencyMs,
      };
    }
    if (confidence < this.threshold) {
      return {
        accepted: false,
        reason: 'below_threshold',
        detail: `confidence ${confidence} < ${this.threshold}`,
        intent: name,
        confidence,
        latency_ms: latencyMs,
      };
    }
    const more: IntentConfig[] = [];
    for (const extra of result.value.more_intents ?? []) {
      const known = this.catalogue.intent(extra.intent);
      // Unknown, unsure and repeated requests are dropped: a second topic is offered, never guessed.
      if (known && extra.confidence >= this.threshold && known !== intent && !more.includes(known)) {
        more.push(known);
      }
    }
    return { accepted: true, intent, confidence, reason, latency_ms: latencyMs, more };
  }
}
