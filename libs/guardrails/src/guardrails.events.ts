import type { RailAction, RailDecision } from '@agent/contracts';

/* The guardrail stages' events (docs/api.md#events), declared by the module that emits them; the per-rail `GRL.*`, which the metrics count, are in the catalogue of `@agent/contracts`. */
declare module '@agent/contracts' {
  interface EventPayloads {
    'guardrails.input.completed': { blocked: boolean; decisions: RailDecision[]; codes: string[] };
    'guardrails.output.completed': {
      blocked: boolean;
      decisions: RailDecision[];
      codes: string[];
      /** Output supervisor pass (0 = the agent's first answer). */
      attempt: number;
    };
    /** The answer exceeded AGENT_MAX_ANSWER_CHARS and was cut at a sentence end before the output rails. */
    'guardrails.output.truncated': { original_chars: number; kept_chars: number; limit: number };
    'output_supervisor.completed': {
      action: RailAction;
      attempt: number;
      results: { code: string; action: RailAction; attempt?: number }[];
      handover_reason?: string;
      note?: string;
    };
  }
}
