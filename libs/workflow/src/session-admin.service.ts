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
import { EventBusService, TurnContext, TurnContextStore } from '@agent/observability';
import { SessionControlService } from '@agent/session-control';
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
    private readonly events: EventBusService,
  ) {}

  /** The END_SESSION contract, source `admin`; ending an ended session changes nothing. */
  end(conversationKey: ConversationKey, requestId: string, reason: string): Promise<SessionAdminResult> {
    return this.apply('end', conversationKey, requestId, (state) =>
      state.session_ended === true ? null : this.sessionNodes.endSession(state, 'admin', reason),
    );
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
      return this.sessionNodes.humanHandoff(state, 'admin', reason);
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

  /** Back to the bot after a human: clears a held (or pending) handoff. */
  resume(conversationKey: ConversationKey, requestId: string): Promise<SessionAdminResult> {
    return this.apply('resume', conversationKey, requestId, async (state, session) => {
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
    options: { keepMemory: boolean },
  ): Promise<SessionDeleteResult> {
    const lease = await this.lease(conversationKey);
    try {
      const { tenant_id, agent_id, session_id } = lease.session;
      const loaded = await this.checkpoints.load(lease);
      const subjectKey = loaded?.state.long_term_memory_subject_key ?? lease.session.user_id ?? null;
      const deleted = options.keepMemory
        ? null
        : await this.memory.purgeSession({ tenant_id, agent_id, session_id });
      await this.deadLetters.purgeConversation(conversationKey);
      await this.relay.forgetConversation(conversationKey);
      await this.checkpoints.deleteConversation(conversationKey);
      return {
        conversation_key: conversationKey,
        memory_items_deleted: deleted,
        memory_subject_key: subjectKey,
      };
    } finally {
      await lease.release();
    }
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
    try {
      const session = lease.session;
      const context: TurnContext = {
        request_id: requestId,
        tenant_id: session.tenant_id,
        agent_id: session.agent_id,
        session_id: session.session_id,
        conversation_key: conversationKey,
        turn: session.turn_count,
        events: [],
        nodes: [],
      };
      return await TurnContextStore.run(context, async () => {
        // Inside the context, so a skipped corrupt checkpoint's event is stored with this commit.
        const loaded = await this.checkpoints.load(lease);
        const state: AgentState = loaded?.state ?? {};
        const patch = await decide(state, session);
        if (patch === null) {
          return { action, changed: false, version: session.head_version, session, state, events: [] };
        }
        const next: AgentState = { ...state, ...patch };
        const status = statusOf(next);
        // The lease makes head_version current: the new version extends the head even when it was corrupt.
        const version = await this.checkpoints.commit({
          identity: identityOf(session),
          leaseToken: lease.token,
          parentVersion: session.head_version > 0 ? session.head_version : null,
          turn: session.turn_count,
          state: next,
          status,
          summary: turnSummary(next, 'admin', null, action),
          events: context.events,
        });
        this.events.publishCommitted(context);
        const updated = (await this.checkpoints.getSession(conversationKey)) ?? {
          ...session,
          status,
          head_version: version,
        };
        return { action, changed: true, version, session: updated, state: next, events: context.events };
      });
    } finally {
      await lease.release();
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
