/** Default profile names of each LLM-backed stage (docs/architecture.md#llm-stages-and-their-contracts). */
export const DEFAULT_PROFILES = {
  continuity: 'route_continuity',
  router: 'router',
  agent: 'agent',
  judge: 'judge',
  guardrail: 'guardrail',
  confirmation: 'confirmation',
  memoryExtraction: 'memory_extraction',
} as const;
