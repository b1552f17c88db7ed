import { Injectable } from '@nestjs/common';
import type { AgentState, JsonRecord } from '@agent/contracts';
import { EventBusService } from '@agent/observability';

/** Facade of JudgesModule: judges (observational) and the supervisor review. */
@Injectable()
export class JudgesService {
  constructor(private readonly events: EventBusService) {}

  evaluate(state: AgentState): Promise<JsonRecord[]> {
    void state;
    return Promise.resolve([]);
  }

  review(state: AgentState): Promise<{ approved: boolean; answer: string }> {
    this.events.emit('supervisor.review.completed', { approved: true });
    return Promise.resolve({ approved: true, answer: state.final_answer ?? state.answer ?? '' });
  }
}
