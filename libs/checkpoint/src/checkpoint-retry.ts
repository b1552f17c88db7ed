import { Inject, Injectable } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { checkpointConfig } from '@agent/config';
import { DatabaseUnavailableError, isConnectionError, isTimeoutError } from '@agent/database';
import { EventBusService } from '@agent/observability';

/** Operations retried on connection failures; each retry emits `checkpoint.<operation>.retry`. */
export type CheckpointOperation =
  'lease' | 'release' | 'load' | 'save' | 'idempotency_lookup' | 'read' | 'delete';

/** The retry every store call of the checkpoint module goes through. */
@Injectable()
export class CheckpointRetry {
  constructor(
    @Inject(checkpointConfig.KEY) private readonly config: ConfigType<typeof checkpointConfig>,
    private readonly events: EventBusService,
  ) {}

  /**
   * Bounded exponential backoff with jitter on connection failures:
   * delay = min(max, base * 2^(attempt-1)) + U(0, jitter); the last error is re-raised.
   */
  async run<T>(operation: CheckpointOperation, work: () => Promise<T>): Promise<T> {
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

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
