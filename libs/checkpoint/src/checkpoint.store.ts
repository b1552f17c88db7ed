import type {
  CheckpointRow,
  CheckpointSummary,
  CheckpointWrite,
  ConversationIdentity,
  FailedRun,
  LeaseAttempt,
  LeaseRequest,
  RetainedTable,
  SessionListFilter,
  SessionRow,
  StoredEventRow,
  StoredResponse,
  TurnCommit,
} from './checkpoint.types';

/**
 * Port of the conversation store (checkpoints, sessions, the turn log, idempotency records).
 * Implementations must keep: versions contiguous per conversation; a commit is all-or-nothing; a commit whose
 * expected head is not the head, or whose lease token is not the holder, changes nothing and throws
 * CheckpointFencingError. The contract suite (test/support/checkpoint-store-contract.ts, run on each implementation) pins this down.
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
   * One statement: looks `messageId` up (a processed message returns its response and takes nothing), takes the
   * lease when it is free, expired, or held by a token starting with `reclaimPrefix` (a previous turn of the
   * calling process that could not release it), creating the session row when new, and reads the checkpoint at
   * the session's head version. `session` is null while another holder has the lease.
   */
  abstract acquireLease(identity: ConversationIdentity, request: LeaseRequest): Promise<LeaseAttempt>;
  /** Extends the lease; false when `token` no longer holds it. */
  abstract renewLease(conversationKey: string, token: string, leaseMs: number): Promise<boolean>;
  abstract releaseLease(conversationKey: string, token: string): Promise<void>;
  /**
   * Releases the lease of a run that failed and stores the run after the head version it started from (its
   * `attempt`-th failure on that head), in one statement. False, storing nothing, when `token` no longer holds
   * the lease.
   */
  abstract releaseFailed(conversationKey: string, token: string, run: FailedRun): Promise<boolean>;
  /**
   * The atomic turn commit: session row (lease released), checkpoint `write.expectedHead + 1`, turn log row and
   * idempotency record, and the deletion of the versions below the newest `write.keep`, all or nothing. Returns the
   * new version; throws CheckpointFencingError when fenced.
   */
  abstract commitTurn(commit: TurnCommit, write: CheckpointWrite): Promise<number>;
  abstract findProcessedMessage(conversationKey: string, messageId: string): Promise<StoredResponse | null>;
  abstract getSession(conversationKey: string): Promise<SessionRow | null>;
  abstract listSessions(
    filter: SessionListFilter,
  ): Promise<{ items: SessionRow[]; next_cursor: string | null }>;
  abstract listEvents(conversationKey: string): Promise<StoredEventRow[]>;
  /**
   * Deletes up to `limit` rows of `table` created before `before`, oldest first, skipping rows another sweeper
   * holds; returns how many went.
   */
  abstract deleteExpired(table: RetainedTable, before: Date, limit: number): Promise<number>;
  /** Purges checkpoints, turn log, failed runs, idempotency records and the session row, in one transaction. */
  abstract deleteConversation(conversationKey: string): Promise<void>;
}
