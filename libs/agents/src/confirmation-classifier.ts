import { Injectable, Logger } from '@nestjs/common';
import { z } from 'zod';
import type { HistoryMessage, ToolArguments } from '@agent/contracts';
import { DEFAULT_PROFILES } from '@agent/contracts';
import { confidenceSchema, LlmService, StructuredOutput, structuredOutput } from '@agent/llm';
import { CONFIRMATION_DECISIONS, ConfirmationResult } from './transaction.types';

const givenValue = z.union([z.string(), z.number(), z.boolean()]).nullish();

type ConfirmationAnswer = {
  decision: ConfirmationResult['decision'];
  confidence: number;
  reason?: string | null;
  operation?: string | null;
  values?: Record<string, z.output<typeof givenValue>> | null;
};

/**
 * The `confirmation` profile's JSON contract: {decision: CONFIRM|REJECT|CORRECT|REPLACE|OTHER, confidence,
 * operation, values}, `values` holding exactly the operation's fields. Only decision and confidence are
 * required, so a plain yes/no answer stays valid.
 */
export function confirmationOutput(fields: readonly string[]): StructuredOutput<ConfirmationAnswer> {
  return structuredOutput(
    'confirmation_decision',
    z.object({
      decision: z.preprocess(
        (value) => (typeof value === 'string' ? value.trim().toUpperCase() : value),
        z.enum(CONFIRMATION_DECISIONS),
      ),
      confidence: confidenceSchema,
      reason: z.string().nullish(),
      operation: z.string().trim().min(1).nullish(),
      values: z.object(Object.fromEntries(fields.map((field) => [field, givenValue]))).nullish(),
    }),
  );
}

export interface ConfirmationQuestion {
  /** What will run on CONFIRM, in words ("o cancelamento do pedido (pedido 100231)"). */
  operation: string;
  /** The question the customer is answering (the last assistant message). */
  question: string;
  message: string;
  history: readonly HistoryMessage[];
  minConfidence: number;
  /** The fields of the pending call and their current values, which a CORRECT may change. */
  fields: readonly { name: string; description: string; value: unknown }[];
  /** Other operations the customer may ask for instead: name and description. */
  alternatives: readonly { name: string; description: string }[];
}

/**
 * The `confirmation` profile (docs/architecture.md, LLM stages). Anything but a valid CONFIRM at or above the
 * threshold never executes: invalid output, an LLM failure or low confidence become OTHER and the customer is
 * asked again. A CORRECT without a value, or a REPLACE toward an operation that is not offered, is OTHER too.
 */
@Injectable()
export class ConfirmationClassifier {
  private readonly logger = new Logger(ConfirmationClassifier.name);
  /** One output per field set: the tools are static, so each JSON schema is derived once. */
  private readonly outputs = new Map<string, StructuredOutput<ConfirmationAnswer>>();

  constructor(private readonly llm: LlmService) {}

  async classify(input: ConfirmationQuestion): Promise<ConfirmationResult> {
    const recent = input.history
      .slice(-4)
      .map((m) => `${m.role === 'user' ? 'Cliente' : 'Atendente'}: ${m.content}`)
      .join('\n');
    const fields = input.fields
      .map((field) => `- ${field.name} (${field.description}): ${JSON.stringify(field.value ?? null)}`)
      .join('\n');
    const alternatives = input.alternatives.map((alt) => `- ${alt.name}: ${alt.description}`).join('\n');
    const result = await this.llm.structured({
      profile: DEFAULT_PROFILES.confirmation,
      output: this.outputFor(input.fields.map((field) => field.name)),
      maxTokens: 120,
      messages: [
        {
          role: 'system',
          content:
            'You decide what the customer answers to the confirmation of a pending operation, in any language. ' +
            `Pending operation: ${input.operation}.\nQuestion asked: ${input.question}\n` +
            (fields ? `Its values:\n${fields}\n` : '') +
            (alternatives ? `Other operations the customer may ask for instead:\n${alternatives}\n` : '') +
            (recent ? `Recent conversation:\n${recent}\n` : '') +
            'CONFIRM only for an explicit yes to this operation; REJECT for an explicit no or giving the operation ' +
            'up; CORRECT when the customer keeps the operation but changes one of its values (put the new values ' +
            'in "values"); REPLACE when the customer wants one of the other operations instead (name it in ' +
            '"operation", and put in "values" the values the message gives); OTHER for anything else (questions, ' +
            'another topic, doubt). Answer only JSON: {"decision": "CONFIRM"|"REJECT"|"CORRECT"|"REPLACE"|"OTHER", ' +
            '"confidence": 0..1, "operation": <name or null>, "values": {"<field>": <value or null>}}.',
        },
        { role: 'user', content: input.message },
      ],
    });
    const other = (reason: string, fallback: ConfirmationResult['fallback_reason'], confidence = 0) => ({
      decision: 'OTHER' as const,
      confidence,
      accepted: false,
      reason,
      fallback_reason: fallback,
      values: {},
      operation: null,
    });
    if (!result.ok && result.reason === 'invalid_output') {
      return other('invalid classifier output', 'invalid_output');
    }
    if (!result.ok) {
      if (result.reason !== 'not_configured') {
        this.logger.warn(`confirmation classifier failed: ${result.detail}`);
      }
      return other(result.detail, 'llm_error');
    }
    const { decision, confidence } = result.value;
    const reason = result.value.reason ?? '';
    if (decision !== 'OTHER' && confidence < input.minConfidence) {
      return other(reason, 'below_threshold', confidence);
    }
    const values = givenValues(result.value.values);
    const operation = result.value.operation ?? null;
    if (decision === 'CORRECT' && Object.keys(values).length === 0) {
      return other(reason, 'incomplete', confidence);
    }
    if (decision === 'REPLACE' && !input.alternatives.some((alt) => alt.name === operation)) {
      return other(reason, 'incomplete', confidence);
    }
    return {
      decision,
      confidence,
      accepted: true,
      reason,
      fallback_reason: null,
      values,
      operation: decision === 'REPLACE' ? operation : null,
    };
  }

  private outputFor(fields: readonly string[]): StructuredOutput<ConfirmationAnswer> {
    const key = fields.join('\u0000');
    let output = this.outputs.get(key);
    if (!output) {
      output = confirmationOutput(fields);
      this.outputs.set(key, output);
    }
    return output;
  }
}

/** The values actually given: null, absent and blank ones dropped. */
function givenValues(values: ConfirmationAnswer['values']): ToolArguments {
  return Object.fromEntries(
    Object.entries(values ?? {}).filter(
      ([, value]) => value !== null && value !== undefined && String(value).trim() !== '',
    ),
  );
}
