import { z } from 'zod';
import { SERVICE_LANGUAGES, SERVICE_MESSAGES, ServiceLanguage, TransactionMessages } from '@agent/config';

const message = z.string().trim().min(1);

/** A label for every language, or one per language (a language without one falls back to the name). */
const label = z.union([message, z.object({ pt: message, en: message, es: message }).partial().strict()]);

const MESSAGE_KEYS = [
  'ask_parameters',
  'ask_parameters_again',
  'confirm',
  'confirm_again',
  'cancelled',
  'interrupted',
  'gave_up',
  'out_of_scope',
  'validation_failed',
  'completed',
  'failed',
  'system_unavailable',
  'unknown_error',
  'and',
] as const satisfies readonly (keyof TransactionMessages)[];

/** config/prompts/transactions.yaml: thresholds, labels and overrides of the transaction flow's messages. */
export const transactionSettingsSchema = z
  .object({
    confirmation_min_confidence: z.number().min(0).max(1).default(0.7),
    max_attempts: z.number().int().min(1).max(10).default(3),
    extraction_profile: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9_.-]*$/)
      .default('parameter_extraction'),
    /** Language of the default messages and of the labels; DEFAULT_LANGUAGE when absent. */
    language: z.enum(SERVICE_LANGUAGES).optional(),
    operations: z.record(z.string(), label).default({}),
    fields: z.record(z.string(), label).default({}),
    argument_labels: z.record(z.string(), label).default({}),
    /** Overrides of the language's messages (the catalogue in libs/config messages.ts). */
    messages: z.record(z.enum(MESSAGE_KEYS), message).default({}),
  })
  .strict();

export type TransactionSettings = z.output<typeof transactionSettingsSchema>;
export type TransactionMessageKey = keyof TransactionMessages;
type Label = z.output<typeof label>;

/** The flow's texts in one language: the catalogue's messages under the file's overrides, and the labels. */
export class TransactionTexts {
  readonly language: ServiceLanguage;
  readonly messages: TransactionMessages;

  constructor(
    private readonly settings: TransactionSettings,
    defaultLanguage: ServiceLanguage,
  ) {
    this.language = settings.language ?? defaultLanguage;
    this.messages = { ...SERVICE_MESSAGES[this.language].transactions, ...settings.messages };
  }

  /** The customer-facing name of an operation ("the cancellation of the order"), else the tool's name. */
  operation(toolName: string): string {
    return this.pick(this.settings.operations[toolName]) ?? toolName.replace(/_/g, ' ');
  }

  /** How a missing field is asked for ("the order number"); null when the file has no label for it. */
  field(name: string): string | null {
    return this.pick(this.settings.fields[name]);
  }

  /** How an argument is shown in a confirmation ("order 100231"). */
  argument(name: string): string {
    return this.pick(this.settings.argument_labels[name]) ?? name;
  }

  /** "a", "a and b", "a, b and c" in the language. */
  list(items: readonly string[]): string {
    return items.length <= 1
      ? (items[0] ?? '')
      : `${items.slice(0, -1).join(', ')} ${this.messages.and} ${items[items.length - 1]}`;
  }

  private pick(value: Label | undefined): string | null {
    if (value === undefined) return null;
    return typeof value === 'string' ? value : (value[this.language] ?? null);
  }
}

/** Fills {placeholders}; an unknown placeholder is left as written so a typo is visible, not silent. */
export function fillTemplate(template: string, values: Record<string, string>): string {
  return template
    .replace(/\{([a-z_]+)\}/g, (match, key: string) => (key in values ? values[key] : match))
    .replace(/\s{2,}/g, ' ')
    .trim();
}
