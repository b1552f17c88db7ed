import type { ToolConfig } from '@agent/config';
import type { ActiveTransaction, McpToolResult, ToolArguments } from '@agent/contracts';
import { MCP_UNAVAILABLE_ERROR } from '@agent/mcp';
import { fillTemplate, TransactionMessageKey, TransactionTexts } from './transaction-settings';
import { isMissing } from './transaction.flow';

/** What the customer reads about an operation: its messages, filled with its labels and values. */
export class TransactionWording {
  constructor(
    private readonly texts: TransactionTexts,
    private readonly toolConfig: (toolName: string) => ToolConfig | null,
  ) {}

  /** The customer-facing name of the operation ("the cancellation of the order"). */
  operation(toolName: string): string {
    return this.texts.operation(toolName);
  }

  message(
    key: TransactionMessageKey,
    transaction: ActiveTransaction,
    values: Record<string, string> = {},
  ): string {
    return fillTemplate(this.texts.messages[key], {
      operation: this.operation(transaction.tool_name),
      arguments: this.arguments(transaction.tool_name, transaction.arguments),
      fields: this.fields(transaction.tool_name, transaction.missing_parameters),
      validation: '',
      reason: '',
      error: '',
      ...values,
    });
  }

  /** The given values in the tool's field order, with their labels ("order 100231, reason broken"). */
  arguments(toolName: string, args: ToolArguments): string {
    const properties = Object.keys(this.toolConfig(toolName)?.args_schema.properties ?? {});
    return properties
      .filter((name) => !isMissing(args[name]))
      .map((name) => `${this.texts.argument(name)} ${String(args[name])}`)
      .join(', ');
  }

  /** Tool errors a customer may read; infrastructure errors become a neutral sentence. */
  customerError(result: McpToolResult): string {
    if (result.error === MCP_UNAVAILABLE_ERROR || /did not answer within/.test(result.error ?? '')) {
      return this.texts.messages.system_unavailable;
    }
    return result.error ?? this.texts.messages.unknown_error;
  }

  private fields(toolName: string, fields: readonly string[]): string {
    const properties = this.toolConfig(toolName)?.args_schema.properties ?? {};
    return this.texts.list(
      fields.map((field) => this.texts.field(field) ?? (properties[field]?.description || field)),
    );
  }
}
