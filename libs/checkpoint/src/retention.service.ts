import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { checkpointConfig } from '@agent/config';
import { CheckpointStore } from './checkpoint.store';
import type { RetainedTable } from './checkpoint.types';

/** Rows deleted per statement: short transactions that never hold many locks. */
const SWEEP_BATCH = 1000;
const DAY_MS = 86_400_000;

/**
 * Deletes turn log rows and failed-run records older than TURN_LOG_RETENTION_DAYS and idempotency records older
 * than PROCESSED_MESSAGES_RETENTION_DAYS, in batches by their `created_at` index, every RETENTION_SWEEP_INTERVAL_MS
 * (and once at start-up). Replicas sweep side by side: each skips the rows another one is deleting.
 */
@Injectable()
export class RetentionService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(RetentionService.name);
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly store: CheckpointStore,
    @Inject(checkpointConfig.KEY) private readonly config: ConfigType<typeof checkpointConfig>,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.sweepInBackground(), this.config.RETENTION_SWEEP_INTERVAL_MS);
    this.timer.unref();
    void this.sweepInBackground();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One sweep of every retained table; returns how many rows of each went. */
  async sweep(now = new Date()): Promise<Record<RetainedTable, number>> {
    return {
      turn_log: await this.sweepTable('turn_log', this.config.TURN_LOG_RETENTION_DAYS, now),
      processed_messages: await this.sweepTable(
        'processed_messages',
        this.config.PROCESSED_MESSAGES_RETENTION_DAYS,
        now,
      ),
      turn_failures: await this.sweepTable('turn_failures', this.config.TURN_LOG_RETENTION_DAYS, now),
    };
  }

  private async sweepTable(table: RetainedTable, days: number, now: Date): Promise<number> {
    if (days <= 0) return 0;
    const before = new Date(now.getTime() - days * DAY_MS);
    let total = 0;
    for (;;) {
      const deleted = await this.store.deleteExpired(table, before, SWEEP_BATCH);
      total += deleted;
      if (deleted < SWEEP_BATCH) return total;
    }
  }

  private async sweepInBackground(): Promise<void> {
    if (this.running) return;
    this.running = this.sweep()
      .then((deleted) => {
        if (deleted.turn_log + deleted.processed_messages + deleted.turn_failures > 0) {
          this.logger.log(
            `retention: ${deleted.turn_log} turn log rows, ${deleted.processed_messages} idempotency records, ` +
              `${deleted.turn_failures} failed runs deleted`,
          );
        }
      })
      .catch((error: unknown) => this.logger.warn(`retention sweep failed: ${String(error)}`))
      .finally(() => {
        this.running = null;
      });
    await this.running;
  }
}
