import type {
  CheckpointRow,
  ConversationIdentity,
  SessionListFilter,
  SessionRow,
  StoredEventRow,
  TurnCommit,
} from './checkpoint.types';

/**
 * Port of the conversation store (checkpoints, sessions, events, idempotency records).
 * Implementations must keep: versions contiguous per conversation; a commit is all-or-nothing;
 * a commit whose parent is not the head, or whose lease token is not the holder, changes nothing.
 */
export abstract class CheckpointStore {
  /** Newest first, at most `limit` rows, without verifying them. */
  abstract latestVersions(conversationKey: string, limit: number): Promise<CheckpointRow[]>;
  abstract getVersion(conversationKey: string, version: number): Promise<CheckpointRow | null>;
  /** Versions newest first (state omitted for size). */
  abstract listVersions(conversationKey: string): Promise<Omit<CheckpointRow, 'state'>[]>;
  /** Takes the lease when free, expired or already ours; returns the session row (created when new) or null when held. */
  abstract tryAcquireLease(
    identity: ConversationIdentity,
    token: string,
    leaseMs: number,
  ): Promise<SessionRow | null>;
  abstract renewLease(conversationKey: string, token: string, leaseMs: number): Promise<boolean>;
  abstract releaseLease(conversationKey: string, token: string): Promise<void>;
  /** Atomic turn commit; returns the new version. Throws CheckpointFencingError when fenced. */
  abstract commitTurn(commit: TurnCommit, checksum: string, serializedState: string): Promise<number>;
  /** Deletes all but the newest `keep` versions of a conversation. */
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
  /** Purges checkpoints, events, idempotency records and the session row. */
  abstract deleteConversation(conversationKey: string): Promise<void>;
}
