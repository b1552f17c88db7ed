import { Inject, Injectable, Logger } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { randomUUID } from 'node:crypto';
import { checkpointConfig } from '@agent/config';
import { MetricsService } from '@agent/observability';
import { CheckpointCommits } from './checkpoint-commits';
import { CheckpointRetry, sleep } from './checkpoint-retry';
import { AgentMismatchError, TurnLockTimeoutError } from './checkpoint.errors';
import { CheckpointStore } from './checkpoint.store';
import type {
  CheckpointRow,
  ConversationIdentity,
  FailedRun,
  SessionRow,
  StoredResponse,
  TurnCommit,
} from './checkpoint.types';

/** What a lease commits: a turn's writes, for the conversation and under the token the lease holds. */
export type LeaseCommit = Omit<TurnCommit, 'identity' | 'leaseToken'>;

export interface ConversationLease {
  identity: ConversationIdentity;
  token: string;
  /** The session row as the lease found it: `head_version` is the head this lease's commit extends. */
  session: SessionRow;
  /** The checkpoint at `session.head_version`, read with the lease and not yet verified (see `load`). */
  head: CheckpointRow | null;
  waitedMs: number;
  /**
   * The atomic commit fenced on the head the lease saw (retried on connection failures); it releases the lease.
   * Returns the new version.
   */
  commit(work: LeaseCommit): Promise<number>;
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

/** The one-writer lease of a conversation: the in-process FIFO, the lease row, its heartbeat and its end. */
@Injectable()
export class ConversationLeases {
  private readonly logger = new Logger(ConversationLeases.name);
  /**
   * Identifies this instance in lease tokens. Per instance, not per module load: two apps in one process (tests)
   * are two writers and must not reclaim each other's leases.
   */
  private readonly instanceId = randomUUID();
  /** In-process FIFO per conversation, in front of the cross-process lease, so arrival order is kept. */
  private readonly localQueues = new Map<string, Promise<void>>();

  constructor(
    private readonly store: CheckpointStore,
    private readonly retry: CheckpointRetry,
    private readonly commits: CheckpointCommits,
    @Inject(checkpointConfig.KEY) private readonly config: ConfigType<typeof checkpointConfig>,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * Waits (bounded by TURN_LOCK_TIMEOUT_MS) for the conversation's lease: first behind earlier turns of this
   * process, then for the Postgres lease row held by any process. Each attempt is one statement that also looks
   * `messageId` up (a processed message returns its response at once, without a lease) and reads the head
   * checkpoint. A crashed holder's lease expires after TURN_LEASE_MS; a lease this instance could not release
   * (database down) is reclaimed at once, because the local FIFO proves its turn is over.
   */
  async acquire(identity: ConversationIdentity, messageId?: string): Promise<ConversationLease | Replay> {
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
        const attempt = await this.retry.run('lease', () => this.store.acquireLease(identity, request));
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
          return this.held(identity, token, session, attempt.head, waitedMs, cleanupLocal);
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

  /** A lease taken: renewed by a heartbeat until it is committed or given back. */
  private held(
    identity: ConversationIdentity,
    token: string,
    session: SessionRow,
    head: CheckpointRow | null,
    waitedMs: number,
    cleanupLocal: () => void,
  ): ConversationLease {
    const key = identity.conversation_key;
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
    };
    return {
      identity,
      token,
      session,
      head,
      waitedMs,
      commit: async (work) => {
        const version = await this.commits.commit(
          { ...work, identity, leaseToken: token },
          session.head_version,
        );
        // The commit released the lease row.
        end();
        cleanupLocal();
        return version;
      },
      release: async () => {
        if (released) return;
        end();
        try {
          await this.retry.run('release', () => this.store.releaseLease(key, token));
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
          return await this.retry.run('release', () => this.store.releaseFailed(key, token, run));
        } catch (error) {
          this.logger.warn(`failed run of ${key} not recorded, lease release failed: ${String(error)}`);
          return false;
        } finally {
          cleanupLocal();
        }
      },
    };
  }
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
