import { z } from 'zod';

const message = z.string().trim().min(1);

/** config/prompts/transactions.yaml: thresholds, labels and the customer-facing messages of a transaction. */
export const transactionSettingsSchema = z
  .object({
    confirmation_min_confidence: z.number().min(0).max(1).default(0.7),
    max_attempts: z.number().int().min(1).max(10).default(3),
    extraction_profile: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9_.-]*$/)
      .default('parameter_extraction'),
    operations: z.record(z.string(), message).default({}),
    fields: z.record(z.string(), message).default({}),
    argument_labels: z.record(z.string(), message).default({}),
    messages: z
      .object({
        ask_parameters: message.default('Para seguir com {operation}, preciso de: {fields}.'),
        ask_parameters_again: message.default(
          'Ainda preciso de {fields} para seguir com {operation}. Pode me informar?',
        ),
        confirm: message.default('{validation}Confirma {operation} ({arguments})? Responda sim ou não.'),
        confirm_again: message.default(
          'Só para confirmar: deseja seguir com {operation} ({arguments})? Responda sim ou não.',
        ),
        cancelled: message.default('Tudo bem, {operation} não foi realizado. Posso ajudar em algo mais?'),
        interrupted: message.default('Deixei {operation} de lado, sem realizar nada.'),
        gave_up: message.default(
          'Como não consegui entender a resposta, {operation} não foi realizado. Se quiser, é só pedir de novo.',
        ),
        out_of_scope: message.default('Não é possível seguir com {operation}: {reason}'),
        validation_failed: message.default(
          'Não consegui verificar {operation} agora. Por favor, tente novamente em instantes.',
        ),
        completed: message.default('Pronto: {operation} foi concluído ({arguments}).'),
        failed: message.default('Não consegui concluir {operation}: {error}'),
      })
      .strict()
      .default({}),
  })
  .strict();

export type TransactionSettings = z.output<typeof transactionSettingsSchema>;
export type TransactionMessageKey = keyof TransactionSettings['messages'];

/** Fills {placeholders}; an unknown placeholder is left as written so a typo is visible, not silent. */
export function fillTemplate(template: string, values: Record<string, string>): string {
  return template
    .replace(/\{([a-z_]+)\}/g, (match, key: string) => (key in values ? values[key] : match))
    .replace(/\s{2,}/g, ' ')
    .trim();
}
