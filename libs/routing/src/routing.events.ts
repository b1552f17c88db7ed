import type { RouteDecision } from '@agent/contracts';

/* The router's events (docs/api.md#events), declared by the module that emits them. */
declare module '@agent/contracts' {
  interface EventPayloads {
    'router.decision': Pick<
      RouteDecision,
      'route' | 'intent' | 'method' | 'confidence' | 'reason' | 'domain' | 'mcp_tools'
    >;
    /** Supervisor mode: the topics planned for the turn and where the plan came from. */
    'router.supervisor.plan': {
      source: string;
      intents: string[];
      deferred: string[];
      state_policy: string | null;
      held: boolean;
      llm_rejection: string | null;
    };
  }
}
