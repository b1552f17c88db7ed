import { Inject, Injectable, Logger } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { randomUUID } from 'node:crypto';
import { checkpointConfig } from '@agent/config';
import type { AgentState } from '@agent/contracts';
import { isConnectionError } from '@agent/database';
import { EventBusService, MetricsService } from '@agent/observability';
import { canonicalJson, checkpointChecksum } from './canonical-json';
import { AgentMismatchError, CheckpointFencingError, TurnLockTimeoutError } from './checkpoint.errors';
import { CheckpointStore } from './checkpoint.store';
import type {
  CheckpointRow,
  ConversationIdentity,
  LoadedCheckpoint,
  SessionListFilter,
  SessionRow,
  StoredEventRow,
  TurnCommit,
} from './checkpoint.types';

export interface ConversationLease {
  token: string;
  session: SessionRow;
  waitedMs: number;
  release(): Promise<void>;
}

export interface VerifiedCheckpointRow extends Omit<CheckpointRow, 'state'> {
  valid: boolean;
}

const INSTANCE_ID = randomUUID().slice(0, 8);

/**
 * Facade of CheckpointModule: the one-writer lease, integrity-checked load with recovery,
 * the atomic turn commit with retry, compaction, and the admin reads.
 */
@Injectable()
export class CheckpointService {
  private readonly logger = new Logger(CheckpointService.name);
  /** In-process FIFO per conversation, in front of the cross-process lease, so arrival order is kept. */
  private readonly localQueues = new Map<string, Promise<void>>();

  constructor(
    private readonly store: CheckpointStore,
    @Inject(checkpointConfig.KEY) private readonly config: ConfigType<typeof checkpointConfig>,
    private readonly events: EventBusService,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * Waits (bounded by TURN_LOCK_TIMEOUT_MS) for the conversation's lease: first behind earlier turns of this
   * process, then for the Postgres lease row held by any process. A crashed holder's lease expires after TURN_LEASE_MS.
   */
  async acquire(identity: ConversationIdentity): Promise<ConversationLease> {
    const started = Date.now();
    const deadline = started + this.config.TURN_LOCK_TIMEOUT_MS;
    const previous = this.localQueues.get(identity.conversation_key) ?? Promise.resolve();
    let releaseLocal!: () => void;
    const mine = new Promise<void>((resolve) => (releaseLocal = resolve));
    const chained = previous.then(() => mine);
    this.localQueues.set(identity.conversation_key, chained);
    const cleanupLocal = () => {
      releaseLocal();
      if (this.localQueues.get(identity.conversation_key) === chained)
        this.localQueues.delete(identity.conversation_key);
    };

    try {
      await withDeadline(previous, deadline);
      const token = `${INSTANCE_ID}:${randomUUID()}`;
      let delay = 10;
      for (;;) {
        const session = await this.store.tryAcquireLease(identity, token, this.config.TURN_LEASE_MS);
        if (session) {
          if (session.agent_id !== identity.agent_id) {
            await this.store.releaseLease(identity.conversation_key, token);
            throw new AgentMismatchError(identity.conversation_key, session.agent_id, identity.agent_id);
          }
          const waitedMs = Date.now() - started;
          this.metrics.lockWait.observe(waitedMs / 1000);
          const heartbeat = setInterval(
            () => {
              this.store
                .renewLease(identity.conversation_key, token, this.config.TURN_LEASE_MS)
                .catch((error: unknown) => {
                  this.logger.warn(`lease renewal failed for ${identity.conversation_key}: ${String(error)}`);
                });
            },
            Math.max(1000, Math.floor(this.config.TURN_LEASE_MS / 3)),
          );
          heartbeat.unref();
          let released = false;
          return {
            token,
            session,
            waitedMs,
            release: async () => {
              if (released) return;
              released = true;
              clearInterval(heartbeat);
              try {
                await this.store.releaseLease(identity.conversation_key, token);
              } catch (error) {
                // The lease expires on its own; the next turn waits at most TURN_LEASE_MS.
                this.logger.warn(`lease release failed for ${identity.conversation_key}: ${String(error)}`);
              } finally {
                cleanupLocal();
              }
            },
          };
        }
        if (Date.now() + delay > deadline)
          throw new TurnLockTimeoutError(identity.conversation_key, Date.now() - started, 1);
        await sleep(delay);
        delay = Math.min(delay * 2, 100);
      }
    } catch (error) {
      cleanupLocal();
      if (error instanceof LocalWaitTimeout) {
        this.metrics.lockTimeouts.inc();
        throw new TurnLockTimeoutError(identity.conversation_key, Date.now() - started, 1);
      }
      if (error instanceof TurnLockTimeoutError) this.metrics.lockTimeouts.inc();
      throw error;
    }
  }

  /**
   * The newest checkpoint that passes integrity, scanning CHECKPOINT_RECOVERY_SCAN_LIMIT versions;
   * each corrupt one emits `checkpoint.recovery.skip_corrupt`; none valid → null (clean start).
   */
  async loadLatest(conversationKey: string): Promise<LoadedCheckpoint | null> {
    const rows = await this.withRetry('load', () =>
      this.store.latestVersions(conversationKey, this.config.CHECKPOINT_RECOVERY_SCAN_LIMIT),
    );
    let skipped = 0;
    for (const row of rows) {
      const problem = verify(row);
      if (!problem) return { version: row.version, state: row.state };
      skipped++;
      this.logger.warn(`skipping corrupt checkpoint ${conversationKey}@${row.version}: ${problem}`);
      this.events.emit('checkpoint.recovery.skip_corrupt', { version: row.version, reason: problem });
    }
    if (skipped > 0) this.events.emit('checkpoint.recovery.clean_start', { skipped });
    return null;
  }

  /** The atomic turn commit (retried on connection failures), then compaction outside the transaction. */
  async commit(commit: TurnCommit): Promise<number> {
    const serialized = canonicalJson(commit.state);
    const checksum = checkpointChecksum(JSON.parse(serialized), commit.parentVersion);
    const started = performance.now();
    const version = await this.withRetry('save', async () => {
      try {
        return await this.store.commitTurn(commit, checksum, serialized);
      } catch (error) {
        // A retried commit whose first attempt did land must not fail: the head already is our version.
        if (error instanceof CheckpointFencingError) {
          const head = await this.store.getVersion(
            commit.identity.conversation_key,
            (commit.parentVersion ?? 0) + 1,
          );
          if (head && head.checksum === checksum) return head.version;
        }
        throw error;
      }
    });
    this.metrics.checkpointWriteDuration.observe((performance.now() - started) / 1000);
    this.metrics.checkpointSize.observe(Buffer.byteLength(serialized));
    await this.compact(commit.identity.conversation_key);
    return version;
  }

  findProcessedMessage(conversationKey: string, messageId: string): Promise<Record<string, unknown> | null> {
    return this.withRetry('idempotency_lookup', () =>
      this.store.findProcessedMessage(conversationKey, messageId),
    );
  }

  getSession(conversationKey: string): Promise<SessionRow | null> {
    return this.store.getSession(conversationKey);
  }

  listSessions(filter: SessionListFilter): Promise<{ items: SessionRow[]; next_cursor: string | null }> {
    return this.store.listSessions(filter);
  }

  listEvents(conversationKey: string): Promise<StoredEventRow[]> {
    return this.store.listEvents(conversationKey);
  }

  async listCheckpoints(conversationKey: string): Promise<VerifiedCheckpointRow[]> {
    const rows = await this.store.latestVersions(conversationKey, 1000);
    return rows.map(({ state: _state, ...rest }) => ({
      ...rest,
      valid: verify({ ...rest, state: _state }) === null,
    }));
  }

  getVersion(conversationKey: string, version: number): Promise<CheckpointRow | null> {
    return this.store.getVersion(conversationKey, version);
  }

  deleteConversation(conversationKey: string): Promise<void> {
    return this.withRetry('delete', () => this.store.deleteConversation(conversationKey));
  }

  private async compact(conversationKey: string): Promise<void> {
    try {
      await this.store.compact(conversationKey, this.config.CHECKPOINT_RETENTION);
    } catch (error) {
      // Compaction is housekeeping: its failure never undoes the committed turn.
      this.logger.warn(`checkpoint compaction failed for ${conversationKey}: ${String(error)}`);
      this.events.emit('checkpoint.compaction.failed', {
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  /** Bounded exponential backoff with jitter on connection failures; the last error is re-raised. */
  private async withRetry<T>(operation: string, work: () => Promise<T>): Promise<T> {
    const attempts = this.config.CHECKPOINT_RETRY_ATTEMPTS;
    for (let attempt = 1; ; attempt++) {
      try {
        return await work();
      } catch (error) {
        if (attempt >= attempts || !isConnectionError(error)) throw error;
        const delay =
          Math.min(
            this.config.CHECKPOINT_RETRY_MAX_MS,
            this.config.CHECKPOINT_RETRY_BASE_MS * 2 ** (attempt - 1),
          ) +
          Math.random() * this.config.CHECKPOINT_RETRY_JITTER_MS;
        this.events.emit(`checkpoint.${operation}.retry`, {
          attempt,
          max_attempts: attempts,
          delay_ms: Math.round(delay),
          error: error instanceof Error ? error.message : String(error),
        });
        await sleep(delay);
      }
    }
  }
}

function verify(row: CheckpointRow): string | null {
  if (row.state === null || typeof row.state !== 'object' || Array.isArray(row.state))
    return 'state is not an object';
  const expected = checkpointChecksum(row.state, row.parent_version);
  return expected === row.checksum ? null : 'checksum mismatch';
}

class LocalWaitTimeout extends Error {}

function withDeadline(promise: Promise<void>, deadline: number): Promise<void> {
  const remaining = deadline - Date.now();
  if (remaining <= 0) return Promise.reject(new LocalWaitTimeout());
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new LocalWaitTimeout()), remaining);
    promise.then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export type { AgentState };
