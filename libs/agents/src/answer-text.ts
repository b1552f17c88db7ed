import { DOMAIN_AGENT_NODES } from '@agent/contracts';

const NODE_NAMES = [...DOMAIN_AGENT_NODES, 'supervisor_agent', 'supervisor'];

/**
 * A leading "billing_agent:", "[orders_agent]", "**Supervisor** -" or "<display name>:" that a model may copy
 * from its instructions; the display names are the configured agents', so it is built once at start-up.
 */
export function answerPrefix(displayNames: readonly string[] = []): RegExp {
  const names = displayNames
    .map((name) => name.trim())
    .filter((name) => name !== '')
    .map((name) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(
    `^\\s*(?:\\*\\*)?[\\[(]?(?:${[...NODE_NAMES, ...names].join('|')})[\\])]?(?:\\*\\*)?\\s*[:\\-–—]\\s*`,
    'i',
  );
}

const NODE_PREFIX = answerPrefix();

/** The customer never sees who answered: drops up to three stacked prefixes matched by `prefix`. */
export function stripAgentPrefix(answer: string, prefix: RegExp = NODE_PREFIX): string {
  let text = answer.trim();
  for (let i = 0; i < 3; i++) {
    const before = text;
    text = text.replace(prefix, '');
    if (text === before) break;
  }
  return text.trim();
}
