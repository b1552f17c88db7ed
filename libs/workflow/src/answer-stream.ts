import type { TurnState } from '@agent/contracts';
import { AnswerReleaser, GuardrailsService } from '@agent/guardrails';
import type { TurnStream } from '@agent/observability';
import type { TurnAgents, WorkflowNode } from './workflow.graph';

/**
 * Once routing decided, a streamed turn tells its client the routing facts and, when one agent serves the
 * turn, opens the release of its answer through the output rails (docs/adr/0015-streaming-through-the-rails.md).
 * Nothing of any answer leaves before this point: a speculative draft started earlier holds its text until the
 * agent run takes it (AgentDraft), and only that run writes here. The supervisor's several agents, a handoff to a person and the end of a session answer with the
 * turn's final event instead.
 */
export function openAnswerStream(
  stream: TurnStream,
  state: TurnState,
  next: WorkflowNode,
  agents: TurnAgents,
  guardrails: GuardrailsService,
): void {
  stream.send({
    event: 'route',
    data: {
      route: state.route ?? null,
      intent: state.intent ?? null,
      active_agent: state.active_agent ?? null,
      route_bypassed: state.route_bypassed === true,
      continuity_signal: state.continuity_signal ?? null,
      session_control: state.session_control ? state.session_control : null,
      blocked: state.blocked === true,
    },
  });
  if (state.blocked || !(agents.isAgent(next) || next === 'handoff')) return;
  stream.answer = new AnswerReleaser((draft) => guardrails.screenDraft(state, draft), {
    release: (text) => {
      stream.firstReleasedAt ??= performance.now();
      stream.send({ event: 'answer.delta', data: { text } });
    },
    trip: (code, action) => stream.send({ event: 'answer.tripped', data: { code, action } }),
  });
}

/** Time to the first released answer text, from `started` (the start a latency counts from); null when none left. */
export function firstTextMs(stream: TurnStream | undefined, started: number): number | null {
  const released = stream?.firstReleasedAt;
  return released === undefined ? null : Math.round(released - started);
}
