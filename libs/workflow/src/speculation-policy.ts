import type { ConfigType } from '@nestjs/config';
import type { continuityConfig } from '@agent/config';
import type { DomainAgentNode } from '@agent/contracts';

/**
 * AGENT_SPECULATIVE_START (`off`, `adaptive`, `always`): when the active agent's first model call starts beside
 * the verdict and the classifier; AGENT_SPECULATIVE_MIN_CONTINUE_SHARE: the adaptive policy's threshold. Both
 * validated with the environment.
 */
export type SpeculationSettings = Pick<
  ConfigType<typeof continuityConfig>,
  'AGENT_SPECULATIVE_START' | 'AGENT_SPECULATIVE_MIN_CONTINUE_SHARE'
>;

/** What is known about a turn before any model answers. */
export interface SpeculationSignals {
  /** The agent the turn would go to: the one a keyword names alone, else the active agent. */
  agent: DomainAgentNode;
  /** A transaction waits for parameters or a confirmation: the agent's turn starts without its model. */
  pending: boolean;
  /** The previous turn was blocked by the input guardrails. */
  previousBlocked: boolean;
  /** The agents whose keywords the message matches (empty: no keyword matched). */
  keywordAgents: ReadonlySet<string>;
  /** CONTINUE decisions and all continuity decisions on turns no keyword matched, while this agent was active. */
  history: { continued: number; decided: number };
}

/**
 * Whether to start the agent's first model call speculatively. `adaptive` decides from signals known before any
 * model answers: never on a pending operation (nothing to start) or after a blocked turn (the same customer is
 * likely blocked again); always when keywords name the target agent alone (the active agent, or the new one
 * the keyword stage routes to); never when they name other or several agents. On a turn no keyword speaks to,
 * the draft is used only if the classifier says CONTINUE: it starts when the share of such turns this agent kept
 * so far (Laplace-smoothed, so a new agent starts at one in two) reaches `AGENT_SPECULATIVE_MIN_CONTINUE_SHARE`.
 * A used draft saves the classifier's latency; a cancelled one costs its prompt at the agent model's input price,
 * so the threshold is where the operator trades one for the other (docs/configuration.md).
 */
export function shouldSpeculate(settings: SpeculationSettings, signals: SpeculationSignals): boolean {
  const mode = settings.AGENT_SPECULATIVE_START;
  if (mode === 'off' || signals.pending) return false;
  if (mode === 'always') return true;
  if (signals.previousBlocked) return false;
  if (signals.keywordAgents.size > 0) {
    return signals.keywordAgents.size === 1 && signals.keywordAgents.has(signals.agent);
  }
  const { continued, decided } = signals.history;
  return (continued + 1) / (decided + 2) >= settings.AGENT_SPECULATIVE_MIN_CONTINUE_SHARE;
}

/**
 * CONTINUE and all continuity decisions per agent_id and active agent on turns no keyword matched, in this process
 * since it started: the adaptive policy's record of how often each agent keeps such a turn. Bounded by the
 * configured agents.
 */
export class ContinueShare {
  private readonly counts = new Map<string, { continued: number; decided: number }>();

  of(agentId: string, agent: DomainAgentNode): { continued: number; decided: number } {
    return this.counts.get(`${agentId}|${agent}`) ?? { continued: 0, decided: 0 };
  }

  record(agentId: string, agent: DomainAgentNode, continued: boolean): void {
    const { continued: kept, decided } = this.of(agentId, agent);
    this.counts.set(`${agentId}|${agent}`, {
      continued: kept + (continued ? 1 : 0),
      decided: decided + 1,
    });
  }
}
