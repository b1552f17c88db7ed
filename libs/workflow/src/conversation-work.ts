import { Injectable } from '@nestjs/common';
import {
  CheckpointReading,
  CheckpointService,
  ConversationLease,
  LeaseCommit,
  LoadedCheckpoint,
} from '@agent/checkpoint';
import type { StoredEvent } from '@agent/contracts';
import {
  EventBusService,
  markFailureAnnounced,
  TurnContext,
  TurnContextStore,
  TurnStream,
} from '@agent/observability';

/** What the work decided: the writes to commit (its events are the context's), or none, and its result. */
export type WorkOutcome<T> = { commit: Omit<LeaseCommit, 'turn' | 'events'> | null; result: T };

export interface ConversationWorkItem<T> {
  lease: ConversationLease;
  request_id: string;
  /** The turn number the work's events and commit are stored under. */
  turn: number;
  reading: CheckpointReading;
  /**
   * `recorded`: a failure of the work is a failed run, stored with the lease's release and announced (a turn).
   * `refused`: the work refused the request and wrote nothing (an operator action).
   */
  failures: 'recorded' | 'refused';
  /** A streamed turn's answer stream, which the agent writes through the output rails. */
  stream?: TurnStream;
  work(loaded: LoadedCheckpoint | null, context: TurnContext): Promise<WorkOutcome<T>>;
}

export interface ConversationWorkDone<T> {
  result: T;
  /** The version committed; null when the work committed nothing. */
  version: number | null;
  /** The events stored with the commit (none without one). */
  events: StoredEvent[];
}

/**
 * The unit of work on a conversation, the system's central invariant in one place: under the lease taken by the
 * caller, load the head (with recovery), run the work inside its turn context, commit fenced on the head the lease
 * saw, publish the events only once committed, and release the lease whatever happened.
 */
@Injectable()
export class ConversationWork {
  constructor(
    private readonly checkpoints: CheckpointService,
    private readonly events: EventBusService,
  ) {}

  async run<T>(item: ConversationWorkItem<T>): Promise<ConversationWorkDone<T>> {
    const { lease, turn } = item;
    try {
      const identity = lease.identity;
      const context: TurnContext = {
        request_id: item.request_id,
        tenant_id: identity.tenant_id,
        agent_id: identity.agent_id,
        session_id: identity.session_id,
        conversation_key: identity.conversation_key,
        turn,
        events: [],
        nodes: [],
        ...(item.stream ? { stream: item.stream } : {}),
      };
      return await TurnContextStore.run(context, async () => {
        // Inside the context, so a skipped corrupt checkpoint's event is stored with this commit.
        const loaded = await this.checkpoints.load(lease, item.reading);
        let outcome: WorkOutcome<T>;
        try {
          outcome = await item.work(loaded, context);
        } catch (error) {
          if (item.failures === 'recorded') await this.recordFailure(lease, context, error);
          throw error;
        }
        if (outcome.commit === null) return { result: outcome.result, version: null, events: [] };
        const version = await lease.commit({ ...outcome.commit, turn, events: context.events });
        // Only now do in-process listeners hear of the work: work that failed above announced nothing.
        this.events.publishCommitted(context);
        return { result: outcome.result, version, events: context.events };
      });
    } finally {
      await lease.release();
    }
  }

  /**
   * The run's events go with it, but its failure is recorded with the lease's release (after the head it ran on,
   * so destinations get it in the conversation's order) and announced even when that fails. Its NOC.005 is the
   * error's one announcement.
   */
  private async recordFailure(lease: ConversationLease, context: TurnContext, error: unknown): Promise<void> {
    const failure = context.failure ?? [];
    await lease.releaseFailed({ turn: context.turn, events: failure });
    this.events.publishFailed(context);
    if (failure.some((event) => event.name === 'NOC.005')) markFailureAnnounced(error);
  }
}
