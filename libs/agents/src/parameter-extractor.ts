import { Injectable, Logger } from '@nestjs/common';
import { z } from 'zod';
import { ToolConfig } from '@agent/config';
import type { JsonRecord } from '@agent/contracts';
import { LlmService, StructuredOutput, structuredOutput } from '@agent/llm';
import { EventBusService } from '@agent/observability';

const extractedValue = z.union([z.string(), z.number(), z.boolean()]).nullish();
type ExtractedValues = { values: Record<string, z.output<typeof extractedValue>> };

/** {"values": {"<field>": value or null}} with exactly the fields asked for. */
export function parameterValuesOutput(fields: readonly string[]): StructuredOutput<ExtractedValues> {
  const shape = Object.fromEntries(fields.map((field) => [field, extractedValue]));
  return structuredOutput('parameter_values', z.object({ values: z.object(shape) }));
}

/**
 * Fills missing tool arguments from the customer's message: first each field's `extract_pattern` (a bad
 * pattern is caught and logged as mcp.parameter.regex_extract_failed), then one LLM call for what is still
 * missing (failures logged as mcp.parameter.llm_extract_failed). Only values present in the message count.
 */
@Injectable()
export class ParameterExtractor {
  private readonly logger = new Logger(ParameterExtractor.name);
  /** One output per tool and field set: the tools are static, so each JSON schema is derived once. */
  private readonly outputs = new Map<string, StructuredOutput<ExtractedValues>>();

  constructor(
    private readonly llm: LlmService,
    private readonly events: EventBusService,
  ) {}

  /** Regex-only extraction: cheap, deterministic, used on every call that lacks an argument. */
  byPattern(toolName: string, config: ToolConfig, fields: readonly string[], text: string): JsonRecord {
    const found: JsonRecord = {};
    for (const field of fields) {
      const pattern = config.args_schema.properties[field]?.extract_pattern;
      if (!pattern) continue;
      try {
        const match = new RegExp(pattern, 'u').exec(text);
        const value = match ? (match[1] ?? match[0]) : undefined;
        if (value !== undefined && value.trim() !== '') found[field] = value.trim();
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        this.logger.warn(`extract_pattern of ${toolName}.${field} failed: ${message}`);
        this.events.emit('mcp.parameter.regex_extract_failed', {
          tool_name: toolName,
          field,
          pattern,
          error: message,
        });
      }
    }
    return found;
  }

  /** Pattern first, then the LLM for the fields the patterns did not find. */
  async extract(
    toolName: string,
    config: ToolConfig,
    fields: readonly string[],
    text: string,
    profile: string,
  ): Promise<JsonRecord> {
    const found = this.byPattern(toolName, config, fields, text);
    const remaining = fields.filter((field) => found[field] === undefined);
    if (remaining.length === 0 || text.trim() === '') return found;
    return { ...found, ...(await this.byLlm(toolName, config, remaining, text, profile)) };
  }

  private async byLlm(
    toolName: string,
    config: ToolConfig,
    fields: readonly string[],
    text: string,
    profile: string,
  ): Promise<JsonRecord> {
    const described = fields
      .map((field) => {
        const property = config.args_schema.properties[field];
        return `- ${field} (${property?.type ?? 'string'}): ${property?.description ?? ''}`;
      })
      .join('\n');
    const result = await this.llm.structured({
      profile,
      output: this.outputFor(toolName, fields),
      maxTokens: 200,
      messages: [
        {
          role: 'system',
          content:
            `Extract the arguments of the operation "${toolName}" (${config.description}) from the customer's ` +
            `message. Fields:\n${described}\n` +
            'Use only values written in the message; never guess. Answer only JSON: ' +
            '{"values": {"<field>": <value or null>}}.',
        },
        { role: 'user', content: text },
      ],
    });
    if (!result.ok) {
      // Not configured, timeout, HTTP error or invalid output: the agent asks the customer again.
      const message =
        result.reason === 'invalid_output' ? `invalid extraction output: ${result.detail}` : result.detail;
      this.logger.warn(`LLM extraction for ${toolName} failed: ${message}`);
      this.events.emit('mcp.parameter.llm_extract_failed', {
        tool_name: toolName,
        fields: [...fields],
        error: message,
      });
      return {};
    }
    const values: JsonRecord = {};
    for (const field of fields) {
      const value = result.value.values[field];
      if (value !== null && value !== undefined && String(value).trim() !== '') values[field] = value;
    }
    return values;
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
