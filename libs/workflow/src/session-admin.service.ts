import { Injectable } from '@nestjs/common';
import {
  CheckpointService,
  ConversationIdentity,
  ConversationLease,
  SessionRow,
  SessionStatus,
  turnSummary,
} from '@agent/checkpoint';
import { conversationKeyOf, type AgentState, type ConversationKey, type StoredEvent } from '@agent/contracts';
import { DeadLetterService, EventRelayService, HandoffClaim, HandoffDeskService } from '@agent/events';
import { MemoryService } from '@agent/memory';
import { SessionControlService } from '@agent/session-control';
import { ConversationWork } from './conversation-work';
import { SessionNodes } from './session-nodes';
import { HandoffClaimedError, SessionNotFoundError, SessionStateConflictError } from './workflow.errors';

export type SessionAdminAction = 'end' | 'handoff' | 'resume' | 'claim';

export interface SessionAdminResult {
  action: SessionAdminAction;
  /** False when the session already was in the requested state: nothing was written. */
  changed: boolean;
  /** The head checkpoint version after the operation. */
  version: number;
  session: SessionRow;
  state: AgentState;
  /** The events this operation stored (empty when unchanged). */
  events: StoredEvent[];
  /** Who holds the conversation after the operation (claim only). */
  claim?: HandoffClaim | null;
}

export interface SessionDeleteResult {
  conversation_key: string;
  /** Long-term memory items this session produced, removed with it; null when kept on request. */
  memory_items_deleted: number | null;
  memory_subject_key: string | null;
}

export interface SubjectPurgeResult {
  tenant_id: string;
  /** Null: every agent of the tenant. */
  agent_id: string | null;
  subject_key: string;
  memory_items_deleted: number;
}

/**
 * Operator actions on a conversation (admin API). Each one holds the conversation's lease, like a turn, and
 * commits atomically: a new checkpoint version, the session row and the events, with event source `admin`.
 * They are not turns: the turn count stays, so the next message still gets the next turn number, and the
 * events are stored under the current turn number.
 */
@Injectable()
export class SessionAdminService {
  constructor(
    private readonly checkpoints: CheckpointService,
    private readonly sessionControl: SessionControlService,
    private readonly sessionNodes: SessionNodes,
    private readonly memory: MemoryService,
    private readonly handoffs: HandoffDeskService,
    private readonly deadLetters: DeadLetterService,
    private readonly relay: EventRelayService,
    private readonly work: ConversationWork,
  ) {}

  /**
   * The END_SESSION contract, source `admin`; ending an ended session changes nothing. `operator` acts for a
   * key of some tenants (see `refuseOthersClaim`), null for a key that serves every tenant.
   */
  end(
    conversationKey: ConversationKey,
    requestId: string,
    reason: string,
    operator: string | null,
  ): Promise<SessionAdminResult> {
    return this.apply('end', conversationKey, requestId, async (state, session) => {
      await this.refuseOthersClaim(conversationKey, session, operator);
      return state.session_ended === true
        ? null
        : this.sessionNodes.endSession(state, { source: 'admin', reason });
    });
  }

  /** The HUMAN_HANDOFF contract, source `admin` (held when HUMAN_HANDOFF_MODE=hold). */
  handoff(conversationKey: ConversationKey, requestId: string, reason: string): Promise<SessionAdminResult> {
    return this.apply('handoff', conversationKey, requestId, (state, session) => {
      if (state.session_ended === true) {
        throw new SessionStateConflictError(
          conversationKey,
          session.status,
          'session has ended; it cannot be handed off',
        );
      }
      if (state.human_handoff_requested === true) return null;
      return this.sessionNodes.humanHandoff(state, { source: 'admin', reason });
    });
  }

  /**
   * A person takes a conversation waiting for one. Claiming one's own claim again changes nothing; a claim by
   * someone else is a conflict, as is a conversation that is not waiting.
   */
  async claim(
    conversationKey: ConversationKey,
    requestId: string,
    claimedBy: string,
  ): Promise<SessionAdminResult> {
    let claim: HandoffClaim | null = null;
    const result = await this.apply('claim', conversationKey, requestId, async (_state, session) => {
      if (session.status !== 'handoff') {
        throw new SessionStateConflictError(
          conversationKey,
          session.status,
          'session is not waiting for a person',
        );
      }
      claim = await this.handoffs.currentClaim(conversationKey);
      if (claim !== null) {
        if (claim.claimed_by !== claimedBy) throw new HandoffClaimedError(conversationKey, claim);
        return null;
      }
      return this.sessionControl.claim(claimedBy);
    });
    return { ...result, claim: result.changed ? await this.handoffs.currentClaim(conversationKey) : claim };
  }

  /** Back to the bot after a human: clears a held (or pending) handoff. `operator` as for `end`. */
  resume(
    conversationKey: ConversationKey,
    requestId: string,
    operator: string | null,
  ): Promise<SessionAdminResult> {
    return this.apply('resume', conversationKey, requestId, async (state, session) => {
      await this.refuseOthersClaim(conversationKey, session, operator);
      if (state.session_ended === true) {
        throw new SessionStateConflictError(
          conversationKey,
          session.status,
          'session has ended; it cannot be resumed',
        );
      }
      const pending =
        state.human_handoff_held === true ||
        state.human_handoff_requested === true ||
        session.status === 'handoff';
      if (!pending) return null;
      const claim = await this.handoffs.currentClaim(conversationKey);
      return this.sessionControl.resume(claim?.claimed_by ?? null);
    });
  }

  /**
   * Purges the conversation: its webhook dead letters, what the event relay still had to deliver of it,
   * checkpoints, events, idempotency records and the session row; unless `keepMemory`, first the long-term memory
   * facts this session produced (the session row goes last, so a failed purge can simply be retried; the relay's
   * backlog goes before it, so a conversation that starts again under the same key is relayed from its start). Facts the subject's other sessions produced stay: a subject-wide
   * purge is `purgeSubject`.
   */
  async delete(
    conversationKey: ConversationKey,
    requestId: string,
    options: { keepMemory: boolean },
  ): Promise<SessionDeleteResult> {
    const lease = await this.lease(conversationKey);
    const { tenant_id, agent_id, session_id } = lease.session;
    const done = await this.work.run({
      lease,
      request_id: requestId,
      turn: lease.session.turn_count,
      reading: 'whole state',
      failures: 'refused',
      work: async (loaded) => {
        const subjectKey = loaded?.state.long_term_memory_subject_key ?? lease.session.user_id ?? null;
        const deleted = options.keepMemory
          ? null
          : await this.memory.purgeSession({ tenant_id, agent_id, session_id });
        await this.deadLetters.purgeConversation(conversationKey);
        await this.relay.forgetConversation(conversationKey);
        await this.checkpoints.deleteConversation(conversationKey);
        return {
          commit: null,
          result: {
            conversation_key: conversationKey,
            memory_items_deleted: deleted,
            memory_subject_key: subjectKey,
          },
        };
      },
    });
    return done.result;
  }

  /**
   * A privacy request: every long-term memory fact of a subject in a tenant (of one agent, when given), and the
   * webhook dead letters of the sessions whose user is the subject.
   */
  async purgeSubject(
    tenantId: string,
    subjectKey: string,
    agentId: string | null,
  ): Promise<SubjectPurgeResult> {
    const subject = { tenant_id: tenantId, agent_id: agentId, subject_key: subjectKey };
    await this.deadLetters.purgeSubject(subject);
    const deleted = await this.memory.purgeSubject(subject);
    return { tenant_id: tenantId, agent_id: agentId, subject_key: subjectKey, memory_items_deleted: deleted };
  }

  private async apply(
    action: SessionAdminAction,
    conversationKey: ConversationKey,
    requestId: string,
    decide: (
      state: AgentState,
      session: SessionRow,
    ) => Partial<AgentState> | null | Promise<Partial<AgentState> | null>,
  ): Promise<SessionAdminResult> {
    const lease = await this.lease(conversationKey);
    const session = lease.session;
    const done = await this.work.run({
      lease,
      request_id: requestId,
      turn: session.turn_count,
      reading: 'whole state',
      failures: 'refused',
      work: async (loaded) => {
        const state: AgentState = loaded?.state ?? {};
        const patch = await decide(state, session);
        if (patch === null) return { result: state, commit: null };
        const next: AgentState = { ...state, ...patch };
        return {
          result: next,
          commit: {
            // The lease makes head_version current: the new version extends the head even when it was corrupt.
            parentVersion: session.head_version > 0 ? session.head_version : null,
            state: next,
            status: statusOf(next),
            summary: turnSummary(next, 'admin', null, action),
          },
        };
      },
    });
    const state = done.result;
    if (done.version === null) {
      return { action, changed: false, version: session.head_version, session, state, events: [] };
    }
    const updated = (await this.checkpoints.getSession(conversationKey)) ?? {
      ...session,
      status: statusOf(state),
      head_version: done.version,
    };
    return { action, changed: true, version: done.version, session: updated, state, events: done.events };
  }

  /**
   * While a conversation waiting for a person is claimed, only the claimer or a key that serves every tenant
   * (`operator` null) may give it back or end it: anyone else gets the claim's conflict. Checked under the lease,
   * so a claim cannot land between the check and the commit.
   */
  private async refuseOthersClaim(
    conversationKey: ConversationKey,
    session: SessionRow,
    operator: string | null,
  ): Promise<void> {
    if (session.status !== 'handoff') return;
    const claim = await this.handoffs.currentClaim(conversationKey);
    if (claim !== null && operator !== null && claim.claimed_by !== operator) {
      throw new HandoffClaimedError(conversationKey, claim);
    }
  }

  /** The conversation's lease, for a session that exists and has had a turn. */
  private async lease(conversationKey: ConversationKey): Promise<ConversationLease> {
    const session = await this.checkpoints.getSession(conversationKey);
    if (!session || session.turn_count === 0) throw new SessionNotFoundError(conversationKey);
    const lease = await this.checkpoints.acquire(identityOf(session));
    // Deleted while we waited: the lease re-created an empty row, which is not a session.
    if (lease.session.turn_count === 0) {
      await lease.release();
      throw new SessionNotFoundError(conversationKey);
    }
    return lease;
  }
}

function identityOf(session: SessionRow): ConversationIdentity {
  return {
    conversation_key: conversationKeyOf(session.tenant_id, session.session_id),
    tenant_id: session.tenant_id,
    session_id: session.session_id,
    agent_id: session.agent_id,
    user_id: session.user_id,
    channel: session.channel,
  };
}

function statusOf(state: AgentState): SessionStatus {
  if (state.session_ended) return 'ended';
  if (state.human_handoff_requested) return 'handoff';
  return 'active';
}
