import type { ServiceMessages } from '@agent/config';

/** The guardrails' texts: the DEFAULT_LANGUAGE entries of the message catalogue, merged with guardrails.yaml's. */
export type GuardrailMessages = ServiceMessages['guardrails'];

/** The message for `code` from a code-keyed table, falling back to its `default` entry. */
export function messageFor(table: Record<string, string>, code: string | null | undefined): string {
  return (code ? table[code] : undefined) ?? table.default;
}
