import { Injectable, Logger } from '@nestjs/common';
import { z } from 'zod';
import type { HistoryMessage } from '@agent/contracts';
import { DEFAULT_PROFILES } from '@agent/contracts';
import { confidenceSchema, LlmService, structuredOutput } from '@agent/llm';
import { CONFIRMATION_DECISIONS, ConfirmationResult } from './transaction.types';

/** The `confirmation` profile's JSON contract: {decision: CONFIRM|REJECT|OTHER, confidence}. */
export const confirmationOutput = structuredOutput(
  'confirmation_decision',
  z.object({
    decision: z.preprocess(
      (value) => (typeof value === 'string' ? value.trim().toUpperCase() : value),
      z.enum(CONFIRMATION_DECISIONS),
    ),
    confidence: confidenceSchema,
    reason: z.string().nullish(),
  }),
);

export interface ConfirmationQuestion {
  /** What will run on CONFIRM, in words ("o cancelamento do pedido (pedido 100231)"). */
  operation: string;
  /** The question the customer is answering (the last assistant message). */
  question: string;
  message: string;
  history: readonly HistoryMessage[];
  minConfidence: number;
}

/**
 * The `confirmation` profile (docs/architecture.md, LLM stages): {"decision":"CONFIRM"|"REJECT"|"OTHER","confidence"}. Anything
 * but a valid CONFIRM at or above the threshold never executes: invalid output, an LLM failure or low
 * confidence become OTHER and the customer is asked again.
 */
@Injectable()
export class ConfirmationClassifier {
  private readonly logger = new Logger(ConfirmationClassifier.name);

  constructor(private readonly llm: LlmService) {}

  async classify(input: ConfirmationQuestion): Promise<ConfirmationResult> {
    const recent = input.history
      .slice(-4)
      .map((m) => `${m.role === 'user' ? 'Cliente' : 'Atendente'}: ${m.content}`)
      .join('\n');
    const result = await this.llm.structured({
      profile: DEFAULT_PROFILES.confirmation,
      output: confirmationOutput,
      maxTokens: 60,
      messages: [
        {
          role: 'system',
          content:
            'You decide whether the customer confirms a pending operation. ' +
            `Pending operation: ${input.operation}.\nQuestion asked: ${input.question}\n` +
            (recent ? `Recent conversation:\n${recent}\n` : '') +
            'CONFIRM only for an explicit yes to this operation; REJECT for an explicit no or giving up; ' +
            'OTHER for anything else (questions, another topic, doubt). Answer only JSON: ' +
            '{"decision": "CONFIRM"|"REJECT"|"OTHER", "confidence": 0..1}.',
        },
        { role: 'user', content: input.message },
      ],
    });
    if (!result.ok && result.reason === 'invalid_output') {
      return {
        decision: 'OTHER',
        confidence: 0,
        accepted: false,
        reason: 'invalid classifier output',
        fallback_reason: 'invalid_output',
      };
    }
    if (!result.ok) {
      this.logger.warn(`confirmation classifier failed: ${result.detail}`);
      return {
        decision: 'OTHER',
        confidence: 0,
        accepted: false,
        reason: result.detail,
        fallback_reason: 'llm_error',
      };
    }
    const { decision, confidence, reason } = result.value;
    if (decision !== 'OTHER' && confidence < input.minConfidence) {
      return {
        decision: 'OTHER',
        confidence,
        accepted: false,
        reason: reason ?? '',
        fallback_reason: 'below_threshold',
      };
    }
    return { decision, confidence, accepted: true, reason: reason ?? '', fallback_reason: null };
  }
}
