import { Injectable, Logger } from '@nestjs/common';
import type { HistoryMessage } from '@agent/contracts';
import { DEFAULT_PROFILES } from '@agent/contracts';
import { LlmError, LlmService, parseJsonObject } from '@agent/llm';
import { ConfirmationResult, confirmationOutputSchema } from './transaction.types';

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
    let content: string | null;
    try {
      const result = await this.llm.chat({
        profile: DEFAULT_PROFILES.confirmation,
        json: true,
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
      content = result.content;
    } catch (error) {
      if (!(error instanceof LlmError)) throw error;
      this.logger.warn(`confirmation classifier failed: ${error.message}`);
      return {
        decision: 'OTHER',
        confidence: 0,
        accepted: false,
        reason: error.message,
        fallback_reason: 'llm_error',
      };
    }
    const parsed = confirmationOutputSchema.safeParse(parseJsonObject(content));
    if (!parsed.success) {
      return {
        decision: 'OTHER',
        confidence: 0,
        accepted: false,
        reason: 'invalid classifier output',
        fallback_reason: 'invalid_output',
      };
    }
    const { decision, confidence, reason } = parsed.data;
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
