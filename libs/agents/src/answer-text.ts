import { DOMAIN_AGENT_NODES } from '@agent/contracts';

const NODE_PREFIX = new RegExp(
  `^\\s*(?:\\*\\*)?[\\[(]?(?:${[...DOMAIN_AGENT_NODES, 'supervisor_agent', 'supervisor'].join('|')})[\\])]?(?:\\*\\*)?\\s*[:\\-–—]\\s*`,
  'i',
);

/**
 * The customer never sees who answered: drops a leading "billing_agent:", "[orders_agent]", "**Supervisor** -"
 * or "<agent display name>:" that a model may copy from its instructions.
 */
export function stripAgentPrefix(answer: string, displayNames: readonly string[] = []): string {
  let text = answer.trim();
  for (let i = 0; i < 3; i++) {
    const before = text;
    text = text.replace(NODE_PREFIX, '');
    for (const name of displayNames) {
      if (name.trim() === '') continue;
      const escaped = name.trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      text = text.replace(
        new RegExp(`^\\s*(?:\\*\\*)?[\\[(]?${escaped}[\\])]?(?:\\*\\*)?\\s*[:\\-–—]\\s*`, 'i'),
        '',
      );
    }
    if (text === before) break;
  }
  return text.trim();
}
