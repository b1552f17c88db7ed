import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { checkpointConfig } from '@agent/config';
import { DeadLetterStore } from './dead-letter.store';

const DAY_MS = 86_400_000;

/**
 * Dead letters are copies of turn log events, so they are kept no longer than the turn log: letters older than
 * TURN_LOG_RETENTION_DAYS are deleted every RETENTION_SWEEP_INTERVAL_MS (and once at start-up).
 */
@Injectable()
export class DeadLetterRetentionService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(DeadLetterRetentionService.name);
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;

  constructor(
    private readonly store: DeadLetterStore,
    @Inject(checkpointConfig.KEY) private readonly config: ConfigType<typeof checkpointConfig>,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => this.sweepInBackground(), this.config.RETENTION_SWEEP_INTERVAL_MS);
    this.timer.unref();
    this.sweepInBackground();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Deletes the expired letters; returns how many went (0 when TURN_LOG_RETENTION_DAYS is 0: kept forever). */
  async sweep(now = new Date()): Promise<number> {
    const days = this.config.TURN_LOG_RETENTION_DAYS;
    if (days <= 0) return 0;
    return this.store.deleteExpired(new Date(now.getTime() - days * DAY_MS));
  }

  private sweepInBackground(): void {
    if (this.running) return;
    this.running = this.sweep()
      .then((deleted) => {
        if (deleted > 0) this.logger.log(`retention: ${deleted} dead letters deleted`);
      })
      .catch((error: unknown) => this.logger.warn(`dead letter retention sweep failed: ${String(error)}`))
      .finally(() => {
        this.running = null;
      });
  }
}
