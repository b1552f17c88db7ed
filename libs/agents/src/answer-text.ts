const FIXED_NAMES = ['supervisor_agent', 'supervisor'];

/**
 * A leading "billing_agent:", "[orders_agent]", "**Supervisor** -" or "<display name>:" that a model may copy
 * from its instructions; the graph agents and display names are the configured ones, so it is built once at
 * start-up.
 */
export function answerPrefix(agentNames: readonly string[]): RegExp {
  const names = agentNames
    .map((name) => name.trim())
    .filter((name) => name !== '')
    .map((name) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(
    `^\\s*(?:\\*\\*)?[\\[(]?(?:${[...FIXED_NAMES, ...names].join('|')})[\\])]?(?:\\*\\*)?\\s*[:\\-–—]\\s*`,
    'i',
  );
}

/** The customer never sees who answered: drops up to three stacked prefixes matched by `prefix`. */
export function stripAgentPrefix(answer: string, prefix: RegExp): string {
  let text = answer.trim();
  for (let i = 0; i < 3; i++) {
    const before = text;
    text = text.replace(prefix, '');
    if (text === before) break;
  }
  return text.trim();
}
