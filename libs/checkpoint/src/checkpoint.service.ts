import { Injectable } from '@nestjs/common';
import { CheckpointReading, readCheckpoint } from './canonical-json';
import { CheckpointRecovery } from './checkpoint-recovery';
import { CheckpointRetry } from './checkpoint-retry';
import { CheckpointStore } from './checkpoint.store';
import type {
  CheckpointRow,
  CheckpointSummary,
  ConversationIdentity,
  LoadedCheckpoint,
  SessionListFilter,
  SessionRow,
  StoredEventRow,
  StoredResponse,
} from './checkpoint.types';
import { ConversationLease, ConversationLeases, Replay } from './conversation-leases';

export interface VerifiedCheckpointRow extends CheckpointSummary {
  valid: boolean;
}

/**
 * Facade of CheckpointModule: the one-writer lease (ConversationLeases), which commits its own writes
 * (CheckpointCommits), the integrity-checked load with recovery (CheckpointRecovery), and the admin reads.
 */
@Injectable()
export class CheckpointService {
  constructor(
    private readonly store: CheckpointStore,
    private readonly leases: ConversationLeases,
    private readonly recovery: CheckpointRecovery,
    private readonly retry: CheckpointRetry,
  ) {}

  /** The conversation's lease (see `acquireFor`), for work that is not a message (operator actions). */
  async acquire(identity: ConversationIdentity): Promise<ConversationLease> {
    const outcome = await this.leases.acquire(identity);
    if ('replay' in outcome) throw new Error('a lease without a message id cannot be a replay');
    return outcome;
  }

  /** The conversation's lease, or the stored response when `messageId` was already processed. */
  acquireFor(identity: ConversationIdentity, messageId?: string): Promise<ConversationLease | Replay> {
    return this.leases.acquire(identity, messageId);
  }

  /**
   * The state a turn under `lease` starts from: the head read with the lease when it passes integrity, else the
   * newest valid version below it. A turn reads only what it carries over (`'carried over'`).
   */
  load(
    lease: ConversationLease,
    reading: CheckpointReading = 'whole state',
  ): Promise<LoadedCheckpoint | null> {
    return this.recovery.fromHead(
      {
        conversationKey: lease.session.conversation_key,
        headVersion: lease.session.head_version,
        head: lease.head,
      },
      reading,
    );
  }

  /** The newest checkpoint that passes integrity, without a lease (admin reads). */
  loadLatest(conversationKey: string): Promise<LoadedCheckpoint | null> {
    return this.recovery.latest(conversationKey);
  }

  findProcessedMessage(conversationKey: string, messageId: string): Promise<StoredResponse | null> {
    return this.retry.run('idempotency_lookup', () =>
      this.store.findProcessedMessage(conversationKey, messageId),
    );
  }

  getSession(conversationKey: string): Promise<SessionRow | null> {
    return this.retry.run('read', () => this.store.getSession(conversationKey));
  }

  listSessions(filter: SessionListFilter): Promise<{ items: SessionRow[]; next_cursor: string | null }> {
    return this.retry.run('read', () => this.store.listSessions(filter));
  }

  listEvents(conversationKey: string): Promise<StoredEventRow[]> {
    return this.retry.run('read', () => this.store.listEvents(conversationKey));
  }

  /** Every stored version, newest first, with whether it passes integrity. */
  async listCheckpoints(conversationKey: string): Promise<VerifiedCheckpointRow[]> {
    const rows = await this.retry.run('read', () => this.store.latestVersions(conversationKey, 1000));
    return rows.map((row) => {
      const { state_text: _state, ...summary } = row;
      return { ...summary, valid: 'state' in readCheckpoint(row) };
    });
  }

  getVersion(conversationKey: string, version: number): Promise<CheckpointRow | null> {
    return this.retry.run('read', () => this.store.getVersion(conversationKey, version));
  }

  deleteConversation(conversationKey: string): Promise<void> {
    return this.retry.run('delete', () => this.store.deleteConversation(conversationKey));
  }
}
