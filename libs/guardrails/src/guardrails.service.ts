import { Injectable } from '@nestjs/common';
import type { AgentState, JsonRecord } from '@agent/contracts';
import { EventBusService } from '@agent/observability';

export interface InputGuardrailsResult {
  blocked: boolean;
  decisions: JsonRecord[];
  /** Input after sanitizing rails (masking). */
  sanitizedText: string;
  /** The safe user message when blocked. */
  message?: string;
}

export interface OutputGuardrailsResult {
  blocked: boolean;
  decisions: JsonRecord[];
  answer: string;
}

/** Facade of GuardrailsModule: input rails, output supervisor and output rails. */
@Injectable()
export class GuardrailsService {
  constructor(private readonly events: EventBusService) {}

  runInput(state: AgentState): Promise<InputGuardrailsResult> {
    const text = state.user_text ?? '';
    this.events.emit('guardrails.input.completed', { blocked: false, decisions: [] });
    return Promise.resolve({ blocked: false, decisions: [], sanitizedText: text });
  }

  /**
   * The `output_supervisor` node. `regenerate` asks the producing agent for a new answer with the rails'
   * guidance (null when no agent produced this answer).
   */
  superviseOutput(
    state: AgentState,
    regenerate: (guidance: string) => Promise<string | null>,
  ): Promise<Partial<AgentState>> {
    void regenerate;
    void state;
    return Promise.resolve({});
  }

  runOutput(state: AgentState): Promise<OutputGuardrailsResult> {
    this.events.emit('guardrails.output.completed', { blocked: false, decisions: [] });
    return Promise.resolve({ blocked: false, decisions: [], answer: state.answer ?? '' });
  }
}
