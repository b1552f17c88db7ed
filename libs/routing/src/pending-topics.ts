import { type PendingTopic, pendingTopicsOf, type TurnState } from '@agent/contracts';
import type { IntentCatalogue } from './intent-catalogue';

/** The state's pending topics that still name an enabled intent. */
export function readPendingTopics(state: TurnState, catalogue: IntentCatalogue): PendingTopic[] {
  return pendingTopicsOf(state).filter((topic) => catalogue.intent(topic.intent));
}

/** A configured message with its `{topics}` placeholder filled with the topics' labels. */
export function fillTopics(template: string, labels: readonly string[]): string {
  return template.replace(/\{topics\}/g, labels.join(', '));
}
