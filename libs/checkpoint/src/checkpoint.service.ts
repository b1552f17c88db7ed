import { Inject, Injectable, Logger } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { randomUUID } from 'node:crypto';
import { checkpointConfig } from '@agent/config';
import { DatabaseUnavailableError, isConnectionError } from '@agent/database';
import { EventBusService, MetricsService } from '@agent/observability';
import { canonicalJson, checkpointChecksum } from './canonical-json';
import { AgentMismatchError, CheckpointFencingError, TurnLockTimeoutError } from './checkpoint.errors';
import { CheckpointStore } from './checkpoint.store';
import type {
  CheckpointRow,
  CheckpointSummary,
  ConversationIdentity,
  LoadedCheckpoint,
  SessionListFilter,
  SessionRow,
  StoredEventRow,
  TurnCommit,
} from './checkpoint.types';

export interface ConversationLease {
  token: string;
  /** The session row as the lease found it: `head_version` is the head this lease's commit extends. */
  session: SessionRow;
  waitedMs: number;
  release(): Promise<void>;
}

export interface VerifiedCheckpointRow extends CheckpointSummary {
  valid: boolean;
}

/** Operations retried on connection failures; each retry emits `checkpoint.<operation>.retry`. */
export type CheckpointOperation =
  'lease' | 'release' | 'load' | 'save' | 'idempotency_lookup' | 'read' | 'delete';

/**
 * Facade of CheckpointModule: the one-writer lease, integrity-checked load with recovery,
 * the atomic turn commit with retry, compaction, and the admin reads.
 */
@Injectable()
export class CheckpointService {
  private readonly logger = new Logger(CheckpointService.name);
  /**
   * Identifies this service instance in lease tokens. Per instance, not per module load: two apps in one
   * process (tests) are two writers and must not reclaim each other's leases.
   */
  private readonly instanceId = randomUUID();
  /** In-process FIFO per conversation, in front of the cross-process lease, so arrival order is kept. */
  private readonly localQueues = new Map<string, Promise<void>>();
  /** The head each live lease saw when taken: its commit is fenced on it. */
  private readonly leaseHeads = new Map<string, number>();

  constructor(
    private readonly store: CheckpointStore,
    @Inject(checkpointConfig.KEY) private readonly config: ConfigType<typeof checkpointConfig>,
    private readonly events: EventBusService,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * Waits (bounded by TURN_LOCK_TIMEOUT_MS) for the conversation's lease: first behind earlier turns of this
   * process, then for the Postgres lease row held by any process. A crashed holder's lease expires after
   * TURN_LEASE_MS; a lease this instance could not release (database down) is reclaimed at once, because the
   * local FIFO proves its turn is over.
   */
  async acquire(identity: ConversationIdentity): Promise<ConversationLease> {
    const key = identity.conversation_key;
    const started = Date.now();
    const deadline = started + this.config.TURN_LOCK_TIMEOUT_MS;
    const previous = this.localQueues.get(key) ?? Promise.resolve();
    let releaseLocal!: () => void;
    const mine = new Promise<void>((resolve) => (releaseLocal = resolve));
    const chained = previous.then(() => mine);
    this.localQueues.set(key, chained);
    const cleanupLocal = () => {
      releaseLocal();
      if (this.localQueues.get(key) === chained) this.localQueues.delete(key);
    };

    try {
      await withDeadline(previous, deadline);
      const token = `${this.instanceId}:${randomUUID()}`;
      let delay = 10;
      for (;;) {
        const session = await this.withRetry('lease', () =>
          this.store.tryAcquireLease(identity, token, this.config.TURN_LEASE_MS, `${this.instanceId}:`),
        );
        if (session) {
          if (session.agent_id !== identity.agent_id) {
            // The mismatch is the answer; a lease left behind is reclaimed by this instance's next turn.
            await this.store.releaseLease(key, token).catch((error: unknown) => {
              this.logger.warn(`lease release failed for ${key}: ${String(error)}`);
            });
            throw new AgentMismatchError(key, session.agent_id, identity.agent_id);
          }
          const waitedMs = Date.now() - started;
          this.metrics.lockWait.observe(waitedMs / 1000);
          this.leaseHeads.set(token, session.head_version);
          return this.leaseHandle(key, token, session, waitedMs, cleanupLocal);
        }
        if (Date.now() + delay > deadline) throw new TurnLockTimeoutError(key, Date.now() - started, 1);
        await sleep(delay);
        delay = Math.min(delay * 2, 100);
      }
    } catch (error) {
      cleanupLocal();
      if (error instanceof LocalWaitTimeout) {
        this.metrics.lockTimeouts.inc();
        throw new TurnLockTimeoutError(key, Date.now() - started, 1);
      }
      if (error instanceof TurnLockTimeoutError) this.metrics.lockTimeouts.inc();
      throw error;
    }
  }

  /**
   * The newest checkpoint that passes integrity among the newest CHECKPOINT_RECOVERY_SCAN_LIMIT versions.
   * Each corrupt one emits `checkpoint.recovery.skip_corrupt`; when none is valid, `checkpoint.recovery.clean_start`
   * and null (the turn starts from an empty state). Only the head is read unless it is corrupt.
   */
  async loadLatest(conversationKey: string): Promise<LoadedCheckpoint | null> {
    const limit = this.config.CHECKPOINT_RECOVERY_SCAN_LIMIT;
    let rows = await this.withRetry('load', () => this.store.latestVersions(conversationKey, 1));
    let scanned = 0;
    let skipped = 0;
    while (rows.length > 0) {
      for (const row of rows) {
        scanned++;
        const problem = verify(row);
        if (!problem) return { version: row.version, state: row.state, skipped };
        skipped++;
        this.logger.warn(`skipping corrupt checkpoint ${conversationKey}@${row.version}: ${problem}`);
        this.events.emit('checkpoint.recovery.skip_corrupt', { version: row.version, reason: problem });
      }
      const oldest = rows[rows.length - 1].version;
      if (scanned >= limit) break;
      rows = await this.withRetry('load', () =>
        this.store.latestVersions(conversationKey, limit - scanned, oldest),
      );
    }
    if (skipped > 0) this.events.emit('checkpoint.recovery.clean_start', { skipped });
    return null;
  }

  /**
   * The atomic turn commit (retried on connection failures), then compaction outside the transaction.
   * The new version extends the head the lease saw; `parentVersion` records which state it was built from.
   */
  async commit(commit: TurnCommit): Promise<number> {
    const serialized = canonicalJson(commit.state);
    const checksum = checkpointChecksum(JSON.parse(serialized), commit.parentVersion);
    const expectedHead = this.leaseHeads.get(commit.leaseToken) ?? commit.parentVersion ?? 0;
    const started = performance.now();
    const version = await this.withRetry('save', async () => {
      try {
        return await this.store.commitTurn(commit, { expectedHead, checksum, serializedState: serialized });
      } catch (error) {
        // A retried commit whose earlier attempt did land (the acknowledgement was lost) must not fail.
        if (error instanceof CheckpointFencingError) {
          const landed = await this.store.getVersion(commit.identity.conversation_key, expectedHead + 1);
          if (landed && landed.checksum === checksum) return landed.version;
        }
        throw error;
      }
    });
    if (this.leaseHeads.has(commit.leaseToken)) this.leaseHeads.set(commit.leaseToken, version);
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
    return this.withRetry('read', () => this.store.getSession(conversationKey));
  }

  listSessions(filter: SessionListFilter): Promise<{ items: SessionRow[]; next_cursor: string | null }> {
    return this.withRetry('read', () => this.store.listSessions(filter));
  }

  listEvents(conversationKey: string): Promise<StoredEventRow[]> {
    return this.withRetry('read', () => this.store.listEvents(conversationKey));
  }

  /** Every stored version, newest first, with whether it passes integrity. */
  async listCheckpoints(conversationKey: string): Promise<VerifiedCheckpointRow[]> {
    const rows = await this.withRetry('read', () => this.store.latestVersions(conversationKey, 1000));
    return rows.map((row) => {
      const { state: _state, ...summary } = row;
      return { ...summary, valid: verify(row) === null };
    });
  }

  getVersion(conversationKey: string, version: number): Promise<CheckpointRow | null> {
    return this.withRetry('read', () => this.store.getVersion(conversationKey, version));
  }

  deleteConversation(conversationKey: string): Promise<void> {
    return this.withRetry('delete', () => this.store.deleteConversation(conversationKey));
  }

  private leaseHandle(
    key: string,
    token: string,
    session: SessionRow,
    waitedMs: number,
    cleanupLocal: () => void,
  ): ConversationLease {
    const leaseMs = this.config.TURN_LEASE_MS;
    const heartbeat = setInterval(
      () => {
        this.store.renewLease(key, token, leaseMs).then(
          (held) => {
            // The commit will be fenced; say why in the log.
            if (!held) this.logger.warn(`lease on ${key} was lost before the turn committed`);
          },
          (error: unknown) => this.logger.warn(`lease renewal failed for ${key}: ${String(error)}`),
        );
      },
      Math.max(100, Math.floor(leaseMs / 3)),
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
        this.leaseHeads.delete(token);
        try {
          await this.withRetry('release', () => this.store.releaseLease(key, token));
        } catch (error) {
          // This instance reclaims it on its next turn; another process waits at most TURN_LEASE_MS.
          this.logger.warn(`lease release failed for ${key}: ${String(error)}`);
        } finally {
          cleanupLocal();
        }
      },
    };
  }

  private async compact(conversationKey: string): Promise<void> {
    try {
      await this.store.compact(conversationKey, this.config.CHECKPOINT_RETENTION);
    } catch (error) {
      // Compaction is housekeeping: its failure never undoes the committed turn; the next commit compacts.
      this.logger.warn(`checkpoint compaction failed for ${conversationKey}: ${String(error)}`);
      this.events.emit('checkpoint.compaction.failed', {
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  /**
   * Bounded exponential backoff with jitter on connection failures:
   * delay = min(max, base * 2^(attempt-1)) + U(0, jitter); the last error is re-raised.
   */
  private async withRetry<T>(operation: CheckpointOperation, work: () => Promise<T>): Promise<T> {
    const attempts = this.config.CHECKPOINT_RETRY_ATTEMPTS;
    for (let attempt = 1; ; attempt++) {
      try {
        return await work();
      } catch (error) {
        if (attempt >= attempts || !isTransient(error)) throw error;
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

/** A failure of the connection, not of the statement: worth retrying. */
function isTransient(error: unknown): boolean {
  return error instanceof DatabaseUnavailableError || isConnectionError(error);
}

function verify(row: CheckpointRow): string | null {
  if (row.state === null || typeof row.state !== 'object' || Array.isArray(row.state)) {
    return 'state is not an object';
  }
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
