import { z } from 'zod';
import type { AgentState } from '@agent/contracts';
import type { IntentCatalogue } from './intent-catalogue';

/**
 * A request of an earlier message that waits for a later turn, as stored in `pending_topics` (both modes: the
 * supervisor defers transactional topics beyond the first, the router keeps every request beyond the first).
 * It survives turns, so it is re-validated on read.
 */
export const pendingTopicSchema = z.object({
  operation_id: z.string(),
  plan_id: z.string(),
  intent: z.string(),
  agent: z.string(),
  domain: z.string().nullable(),
  tools: z.array(z.string()),
  label: z.string(),
  source_text: z.string(),
  disposition: z.literal('defer'),
  status: z.enum(['deferred', 'offered']),
  reason: z.string(),
  created_turn: z.number().nullable(),
});
export type PendingTopic = z.output<typeof pendingTopicSchema>;

/** The state's pending topics that still parse and name an enabled intent. */
export function readPendingTopics(state: AgentState, catalogue: IntentCatalogue): PendingTopic[] {
  return (state.pending_topics ?? []).flatMap((raw) => {
    const parsed = pendingTopicSchema.safeParse(raw);
    return parsed.success && catalogue.intent(parsed.data.intent) ? [parsed.data] : [];
  });
}

/** A configured message with its `{topics}` placeholder filled with the topics' labels. */
export function fillTopics(template: string, labels: readonly string[]): string {
  return template.replace(/\{topics\}/g, labels.join(', '));
}
