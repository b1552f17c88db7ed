import type {
  CheckpointRow,
  CheckpointSummary,
  CheckpointWrite,
  ConversationIdentity,
  SessionListFilter,
  SessionRow,
  StoredEventRow,
  TurnCommit,
} from './checkpoint.types';

/**
 * Port of the conversation store (checkpoints, sessions, events, idempotency records).
 * Implementations must keep: versions contiguous per conversation; a commit is all-or-nothing; a commit whose
 * expected head is not the head, or whose lease token is not the holder, changes nothing and throws
 * CheckpointFencingError. The contract suite (test/integration/checkpoint-store.int-spec.ts) pins this down.
 */
export abstract class CheckpointStore {
  /**
   * Newest first, at most `limit` rows, only versions below `beforeVersion` when given; not verified
   * (integrity is the service's job, so a corrupt row is returned as stored).
   */
  abstract latestVersions(
    conversationKey: string,
    limit: number,
    beforeVersion?: number,
  ): Promise<CheckpointRow[]>;
  abstract getVersion(conversationKey: string, version: number): Promise<CheckpointRow | null>;
  /** Versions newest first, without their state (for size). */
  abstract listVersions(conversationKey: string): Promise<CheckpointSummary[]>;
  /**
   * Takes the lease when it is free, expired, or held by a token starting with `reclaimPrefix` (a previous
   * turn of the calling process that could not release it, e.g. while the database was down). Creates the
   * session row when new. Returns the session row, or null while another holder has the lease.
   */
  abstract tryAcquireLease(
    identity: ConversationIdentity,
    token: string,
    leaseMs: number,
    reclaimPrefix?: string,
  ): Promise<SessionRow | null>;
  /** Extends the lease; false when `token` no longer holds it. */
  abstract renewLease(conversationKey: string, token: string, leaseMs: number): Promise<boolean>;
  abstract releaseLease(conversationKey: string, token: string): Promise<void>;
  /**
   * The atomic turn commit: session row, checkpoint `write.expectedHead + 1`, events and idempotency record in
   * one transaction. Returns the new version; throws CheckpointFencingError when fenced.
   */
  abstract commitTurn(commit: TurnCommit, write: CheckpointWrite): Promise<number>;
  /** Deletes all but the newest `keep` versions of a conversation; returns how many went. */
  abstract compact(conversationKey: string, keep: number): Promise<number>;
  abstract findProcessedMessage(
    conversationKey: string,
    messageId: string,
  ): Promise<Record<string, unknown> | null>;
  abstract getSession(conversationKey: string): Promise<SessionRow | null>;
  abstract listSessions(
    filter: SessionListFilter,
  ): Promise<{ items: SessionRow[]; next_cursor: string | null }>;
  abstract listEvents(conversationKey: string): Promise<StoredEventRow[]>;
  /** Purges checkpoints, events, idempotency records and the session row, in one transaction. */
  abstract deleteConversation(conversationKey: string): Promise<void>;
}
