import { Inject, Injectable, Logger } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { randomUUID } from 'node:crypto';
import { checkpointConfig } from '@agent/config';
import { DatabaseUnavailableError, isConnectionError, isTimeoutError } from '@agent/database';
import { EventBusService, MetricsService } from '@agent/observability';
import { CheckpointReading, readCheckpoint, serializeCheckpoint } from './canonical-json';
import { AgentMismatchError, CheckpointFencingError, TurnLockTimeoutError } from './checkpoint.errors';
import { CheckpointStore } from './checkpoint.store';
import type {
  CheckpointRow,
  CheckpointSummary,
  ConversationIdentity,
  FailedRun,
  LoadedCheckpoint,
  SessionListFilter,
  SessionRow,
  StoredEventRow,
  StoredResponse,
  TurnCommit,
} from './checkpoint.types';

export interface ConversationLease {
  token: string;
  /** The session row as the lease found it: `head_version` is the head this lease's commit extends. */
  session: SessionRow;
  /** The checkpoint at `session.head_version`, read with the lease and not yet verified (see `load`). */
  head: CheckpointRow | null;
  waitedMs: number;
  /** Gives the lease back; nothing to do after a commit, which released it. */
  release(): Promise<void>;
  /**
   * Gives the lease back and records the failed run after the head it started from, in one statement; false when
   * nothing was recorded (the lease was lost, or the database could not be reached).
   */
  releaseFailed(run: FailedRun): Promise<boolean>;
}

/** A message already processed: its stored response, and no lease taken. */
export interface Replay {
  replay: StoredResponse;
}

export interface VerifiedCheckpointRow extends CheckpointSummary {
  valid: boolean;
}

/** Operations retried on connection failures; each retry emits `checkpoint.<operation>.retry`. */
export type CheckpointOperation =
  'lease' | 'release' | 'load' | 'save' | 'idempotency_lookup' | 'read' | 'delete';

/** A live lease of this instance: the head its commit is fenced on, and how to end it once committed. */
interface HeldLease {
  head: number;
  settle(): void;
}

/**
 * Facade of CheckpointModule: the one-writer lease, integrity-checked load with recovery,
 * the atomic turn commit with retry (which also compacts the conversation's old versions), and the admin reads.
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
  private readonly held = new Map<string, HeldLease>();

  constructor(
    private readonly store: CheckpointStore,
    @Inject(checkpointConfig.KEY) private readonly config: ConfigType<typeof checkpointConfig>,
    private readonly events: EventBusService,
    private readonly metrics: MetricsService,
  ) {}

  /** The conversation's lease (see `acquireFor`), for work that is not a message (operator actions). */
  async acquire(identity: ConversationIdentity): Promise<ConversationLease> {
    const outcome = await this.acquireFor(identity);
    if ('replay' in outcome) throw new Error('a lease without a message id cannot be a replay');
    return outcome;
  }

  /**
   * Waits (bounded by TURN_LOCK_TIMEOUT_MS) for the conversation's lease: first behind earlier turns of this
   * process, then for the Postgres lease row held by any process. Each attempt is one statement that also looks
   * `messageId` up (a processed message returns its response at once, without a lease) and reads the head
   * checkpoint. A crashed holder's lease expires after TURN_LEASE_MS; a lease this instance could not release
   * (database down) is reclaimed at once, because the local FIFO proves its turn is over.
   */
  async acquireFor(identity: ConversationIdentity, messageId?: string): Promise<ConversationLease | Replay> {
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
      const request = {
        token,
        leaseMs: this.config.TURN_LEASE_MS,
        reclaimPrefix: `${this.instanceId}:`,
        messageId,
      };
      let delay = 10;
      for (;;) {
        const attempt = await this.withRetry('lease', () => this.store.acquireLease(identity, request));
        if (attempt.replay) {
          cleanupLocal();
          return { replay: attempt.replay };
        }
        const session = attempt.session;
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
          return this.leaseHandle(key, token, session, attempt.head, waitedMs, cleanupLocal);
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
   * The state a turn under `lease` starts from: the head read with the lease when it passes integrity (no
   * further read), else the newest valid version below it (see `loadLatest`). A head version without its row
   * (deleted by hand, lost in a restore), or any missing version above the one restored, emits
   * `checkpoint.recovery.version_gap`. A turn reads only what it carries over (`'carried over'`).
   */
  async load(
    lease: ConversationLease,
    reading: CheckpointReading = 'whole state',
  ): Promise<LoadedCheckpoint | null> {
    const key = lease.session.conversation_key;
    const headVersion = lease.session.head_version;
    if (headVersion === 0) return null;
    if (lease.head) {
      const read = readCheckpoint(lease.head, reading);
      if ('state' in read) return { version: lease.head.version, state: read.state, skipped: 0 };
      this.skipCorrupt(key, lease.head.version, read.problem);
      return this.scan(key, lease.head.version, 1, lease.head.version - 1, reading);
    }
    return this.scan(key, headVersion + 1, 0, headVersion, reading);
  }

  /**
   * The newest checkpoint that passes integrity among the newest CHECKPOINT_RECOVERY_SCAN_LIMIT versions.
   * Each corrupt one emits `checkpoint.recovery.skip_corrupt`; when none is valid, `checkpoint.recovery.clean_start`
   * and null (the turn starts from an empty state). Only the head is read unless it is corrupt.
   */
  loadLatest(conversationKey: string): Promise<LoadedCheckpoint | null> {
    return this.scan(conversationKey, undefined, 0, null);
  }

  /**
   * The atomic turn commit (retried on connection failures), which also releases the lease and deletes the
   * conversation's versions below the newest CHECKPOINT_RETENTION. The new version extends the head the lease saw;
   * `parentVersion` records which state it was built from. The state is serialized and hashed once.
   */
  async commit(commit: TurnCommit): Promise<number> {
    const { text, checksum } = serializeCheckpoint(commit.state, commit.parentVersion);
    const lease = this.held.get(commit.leaseToken);
    const expectedHead = lease?.head ?? commit.parentVersion ?? 0;
    const started = performance.now();
    const version = await this.withRetry('save', async () => {
      try {
        return await this.store.commitTurn(commit, {
          expectedHead,
          checksum,
          serializedState: text,
          keep: this.config.CHECKPOINT_RETENTION,
        });
      } catch (error) {
        // A retried commit whose earlier attempt did land (the acknowledgement was lost) must not fail.
        if (error instanceof CheckpointFencingError) {
          const landed = await this.store.getVersion(commit.identity.conversation_key, expectedHead + 1);
          if (landed && landed.checksum === checksum) return landed.version;
        }
        throw error;
      }
    });
    lease?.settle();
    this.metrics.checkpointWriteDuration.observe((performance.now() - started) / 1000);
    this.metrics.checkpointSize.observe(Buffer.byteLength(text));
    return version;
  }

  findProcessedMessage(conversationKey: string, messageId: string): Promise<StoredResponse | null> {
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
      const { state_text: _state, ...summary } = row;
      return { ...summary, valid: 'state' in readCheckpoint(row) };
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
    head: CheckpointRow | null,
    waitedMs: number,
    cleanupLocal: () => void,
  ): ConversationLease {
    const leaseMs = this.config.TURN_LEASE_MS;
    let released = false;
    const heartbeat = setInterval(
      () => {
        this.store.renewLease(key, token, leaseMs).then(
          (stillHeld) => {
            // The commit will be fenced; say why in the log.
            if (!stillHeld && !released) {
              this.logger.warn(`lease on ${key} was lost before the turn committed`);
            }
          },
          (error: unknown) => this.logger.warn(`lease renewal failed for ${key}: ${String(error)}`),
        );
      },
      Math.max(100, Math.floor(leaseMs / 3)),
    );
    heartbeat.unref();
    const end = () => {
      released = true;
      clearInterval(heartbeat);
      this.held.delete(token);
    };
    this.held.set(token, {
      head: session.head_version,
      settle: () => {
        end();
        cleanupLocal();
      },
    });
    return {
      token,
      session,
      head,
      waitedMs,
      release: async () => {
        if (released) return;
        end();
        try {
          await this.withRetry('release', () => this.store.releaseLease(key, token));
        } catch (error) {
          // This instance reclaims it on its next turn; another process waits at most TURN_LEASE_MS.
          this.logger.warn(`lease release failed for ${key}: ${String(error)}`);
        } finally {
          cleanupLocal();
        }
      },
      releaseFailed: async (run) => {
        if (released) return false;
        end();
        try {
          return await this.withRetry('release', () => this.store.releaseFailed(key, token, run));
        } catch (error) {
          this.logger.warn(`failed run of ${key} not recorded, lease release failed: ${String(error)}`);
          return false;
        } finally {
          cleanupLocal();
        }
      },
    };
  }

  /**
   * Newest first below `beforeVersion`, at most CHECKPOINT_RECOVERY_SCAN_LIMIT versions in all (`scanned`
   * already counted, all of them corrupt). With `expected` (the version that should come next), a stored version
   * below it emits `checkpoint.recovery.version_gap`, as does finding nothing below a missing head.
   */
  private async scan(
    conversationKey: string,
    beforeVersion: number | undefined,
    scanned: number,
    expected: number | null,
    reading: CheckpointReading = 'whole state',
  ): Promise<LoadedCheckpoint | null> {
    const limit = this.config.CHECKPOINT_RECOVERY_SCAN_LIMIT;
    let skipped = scanned;
    let next = expected;
    let before = beforeVersion;
    while (scanned < limit) {
      // The first read asks for the head only: it is valid almost always.
      const size = before === undefined ? 1 : limit - scanned;
      const rows = await this.withRetry('load', () =>
        this.store.latestVersions(conversationKey, size, before),
      );
      if (rows.length === 0) {
        // Nothing stored at or below a missing head (after a corrupt one, older versions may be compacted).
        if (next !== null && next >= 1 && skipped === 0) this.versionGap(conversationKey, next, null);
        break;
      }
      for (const row of rows) {
        scanned++;
        if (next !== null && row.version < next) this.versionGap(conversationKey, next, row.version);
        next = row.version - 1;
        const read = readCheckpoint(row, reading);
        if ('state' in read) return { version: row.version, state: read.state, skipped };
        skipped++;
        this.skipCorrupt(conversationKey, row.version, read.problem);
      }
      before = rows[rows.length - 1].version;
      // Below the stored versions, missing ones are compacted, not lost.
      next = null;
    }
    if (skipped > 0) this.events.emit('checkpoint.recovery.clean_start', { skipped });
    return null;
  }

  private skipCorrupt(conversationKey: string, version: number, reason: string): void {
    this.logger.warn(`skipping corrupt checkpoint ${conversationKey}@${version}: ${reason}`);
    this.events.emit('checkpoint.recovery.skip_corrupt', { version, reason });
  }

  private versionGap(conversationKey: string, expected: number, found: number | null): void {
    this.logger.warn(
      `checkpoint ${conversationKey}@${expected} is missing; next stored version: ${found ?? 'none'}`,
    );
    this.events.emit('checkpoint.recovery.version_gap', {
      expected_version: expected,
      found_version: found,
      missing_versions: expected - (found ?? 0),
    });
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

/**
 * A failure of the connection, not of the statement: worth retrying. A server that did not answer in time is
 * not: another attempt would wait as long again, so the turn's 503 comes after one timeout, not several.
 */
function isTransient(error: unknown): boolean {
  return (error instanceof DatabaseUnavailableError || isConnectionError(error)) && !isTimeoutError(error);
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
