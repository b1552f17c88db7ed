import { Injectable, Logger } from '@nestjs/common';
import { z } from 'zod';
import { ToolConfig } from '@agent/config';
import type { ToolArguments } from '@agent/contracts';
import { confidenceSchema, LlmService, StructuredOutput, structuredOutput } from '@agent/llm';
import { EventBusService } from '@agent/observability';

const extractedValue = z.union([z.string(), z.number(), z.boolean()]).nullish();

/**
 * What a customer does with a parameter question: answers it (ANSWER), gives the operation up (ABANDON), asks
 * for another operation instead (REPLACE), or something else (OTHER: a question, doubt).
 */
export const COLLECTION_ACTIONS = ['ANSWER', 'ABANDON', 'REPLACE', 'OTHER'] as const;
export type CollectionAction = (typeof COLLECTION_ACTIONS)[number];

const actionSchema = z.preprocess(
  (value) => (typeof value === 'string' ? value.trim().toUpperCase() : value),
  z.enum(COLLECTION_ACTIONS),
);

type ExtractedValues = {
  values: Record<string, z.output<typeof extractedValue>>;
  action?: CollectionAction | null;
  confidence?: number | null;
  operation?: string | null;
};

/**
 * {"action", "confidence", "operation", "values": {"<field>": value or null}} with exactly the fields asked
 * for. Only `values` is required, so an answer that just extracts reads as ANSWER.
 */
export function parameterValuesOutput(fields: readonly string[]): StructuredOutput<ExtractedValues> {
  const shape = Object.fromEntries(fields.map((field) => [field, extractedValue]));
  return structuredOutput(
    'parameter_values',
    z.object({
      action: actionSchema.nullish(),
      confidence: confidenceSchema.nullish(),
      operation: z.string().trim().min(1).nullish(),
      values: z.object(shape),
    }),
  );
}

/** A parameter question and what the customer answered to it. */
export interface CollectionQuestion {
  toolName: string;
  config: ToolConfig;
  /** The customer-facing name of the operation. */
  operation: string;
  /** Fields still missing. */
  fields: readonly string[];
  /** Other operations the customer may switch to: name and description. */
  alternatives: readonly { name: string; description: string }[];
  text: string;
  profile: string;
  /** ABANDON and REPLACE count only at or above it: doubt never ends a transaction. */
  minConfidence: number;
}

/** The customer's reply read: the action taken and the values found (pattern first, then the model). */
export interface CollectionReading {
  action: CollectionAction;
  confidence: number | null;
  /** For REPLACE: the operation the customer wants instead (one of the alternatives). */
  operation: string | null;
  values: ToolArguments;
}

/**
 * Reads the customer's reply to a parameter question: first each field's `extract_pattern` (a bad pattern is
 * caught and logged as mcp.parameter.regex_extract_failed), then one model call that says what the customer
 * does (answers, abandons, replaces the operation) and extracts what is still missing (failures logged as
 * mcp.parameter.llm_extract_failed and read as an answer without values). Only values present in the message
 * count; no pattern or phrase decides the action.
 */
@Injectable()
export class ParameterExtractor {
  private readonly logger = new Logger(ParameterExtractor.name);
  /** One output per tool and field set: the tools are static, so each JSON schema is derived once. */
  private readonly outputs = new Map<string, StructuredOutput<ExtractedValues>>();
  /** extract_pattern sources compiled once; the compile error's message for one that does not compile. */
  private readonly patterns = new Map<string, RegExp | string>();

  constructor(
    private readonly llm: LlmService,
    private readonly events: EventBusService,
  ) {}

  /** Regex-only extraction: cheap, deterministic, used on every call that lacks an argument. */
  byPattern(toolName: string, config: ToolConfig, fields: readonly string[], text: string): ToolArguments {
    const found: ToolArguments = {};
    for (const field of fields) {
      const pattern = config.args_schema.properties[field]?.extract_pattern;
      if (!pattern) continue;
      const compiled = this.compiled(pattern);
      if (compiled instanceof RegExp) {
        const match = compiled.exec(text);
        const value = match ? (match[1] ?? match[0]) : undefined;
        if (value !== undefined && value.trim() !== '') found[field] = value.trim();
      } else {
        this.logger.warn(`extract_pattern of ${toolName}.${field} failed: ${compiled}`);
        this.events.emit('mcp.parameter.regex_extract_failed', {
          tool_name: toolName,
          field,
          pattern,
          error: compiled,
        });
      }
    }
    return found;
  }

  private compiled(pattern: string): RegExp | string {
    let regex = this.patterns.get(pattern);
    if (regex === undefined) {
      try {
        regex = new RegExp(pattern, 'u');
      } catch (error) {
        regex = error instanceof Error ? error.message : String(error);
      }
      this.patterns.set(pattern, regex);
    }
    return regex;
  }

  /** Pattern first, then the model for the action and the fields the patterns did not find. */
  async read(question: CollectionQuestion): Promise<CollectionReading> {
    const { toolName, config, text } = question;
    const found = this.byPattern(toolName, config, question.fields, text);
    const answer: CollectionReading = { action: 'ANSWER', confidence: null, operation: null, values: found };
    if (text.trim() === '') return answer;
    const remaining = question.fields.filter((field) => found[field] === undefined);
    const described = remaining
      .map((field) => {
        const property = config.args_schema.properties[field];
        return `- ${field} (${property?.type ?? 'string'}): ${property?.description ?? ''}`;
      })
      .join('\n');
    const alternatives = question.alternatives.map((alt) => `- ${alt.name}: ${alt.description}`).join('\n');
    const result = await this.llm.structured({
      profile: question.profile,
      output: this.outputFor(toolName, remaining),
      maxTokens: 200,
      messages: [
        {
          role: 'system',
          content:
            `The customer is being asked for what the operation "${toolName}" (${question.operation}: ` +
            `${config.description}) still needs.\n` +
            (described ? `Fields still needed:\n${described}\n` : 'No field is still needed.\n') +
            (alternatives ? `Other operations the customer may ask for instead:\n${alternatives}\n` : '') +
            'Decide what the customer does, in any language: ANSWER (gives values or keeps going), ABANDON ' +
            '(gives up this operation, does not want it any more), REPLACE (wants one of the other operations ' +
            'instead; name it in "operation"), OTHER (a question, another subject, doubt). Extract into "values" ' +
            'only values written in the message; never guess. Answer only JSON: {"action": ' +
            '"ANSWER"|"ABANDON"|"REPLACE"|"OTHER", "confidence": 0..1, "operation": <name or null>, ' +
            '"values": {"<field>": <value or null>}}.',
        },
        { role: 'user', content: text },
      ],
    });
    if (!result.ok) {
      // Not configured, timeout, HTTP error or invalid output: the agent asks the customer again.
      const message =
        result.reason === 'invalid_output' ? `invalid extraction output: ${result.detail}` : result.detail;
      if (result.reason !== 'not_configured') {
        this.logger.warn(`LLM extraction for ${toolName} failed: ${message}`);
      }
      this.events.emit('mcp.parameter.llm_extract_failed', {
        tool_name: toolName,
        fields: [...remaining],
        error: message,
      });
      return answer;
    }
    const values: ToolArguments = { ...found };
    for (const field of remaining) {
      const value = result.value.values[field];
      if (value !== null && value !== undefined && String(value).trim() !== '') values[field] = value;
    }
    const confidence = result.value.confidence ?? null;
    const action = result.value.action ?? 'ANSWER';
    const operation = result.value.operation ?? null;
    const sure = confidence !== null && confidence >= question.minConfidence;
    const known = question.alternatives.some((alt) => alt.name === operation);
    // An abandonment or a replacement the model is not sure of, or toward an operation it may not choose, is
    // read as an answer: the transaction goes on and the customer is asked again.
    if ((action === 'ABANDON' && !sure) || (action === 'REPLACE' && !(sure && known))) {
      return { action: 'ANSWER', confidence, operation: null, values };
    }
    return { action, confidence, operation: action === 'REPLACE' ? operation : null, values };
  }

  private outputFor(toolName: string, fields: readonly string[]): StructuredOutput<ExtractedValues> {
    const key = `${toolName}\u0000${fields.join('\u0000')}`;
    let output = this.outputs.get(key);
    if (!output) {
      output = parameterValuesOutput(fields);
      this.outputs.set(key, output);
    }
    return output;
  }
}
