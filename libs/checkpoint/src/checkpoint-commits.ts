import { Inject, Injectable } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { checkpointConfig } from '@agent/config';
import { MetricsService } from '@agent/observability';
import { serializeCheckpoint } from './canonical-json';
import { CheckpointRetry } from './checkpoint-retry';
import { CheckpointFencingError } from './checkpoint.errors';
import { CheckpointStore } from './checkpoint.store';
import type { TurnCommit } from './checkpoint.types';

/** The fenced commit of a lease, and with it the compaction of the conversation's old versions. */
@Injectable()
export class CheckpointCommits {
  constructor(
    private readonly store: CheckpointStore,
    private readonly retry: CheckpointRetry,
    @Inject(checkpointConfig.KEY) private readonly config: ConfigType<typeof checkpointConfig>,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * The atomic turn commit (retried on connection failures), which also releases the lease and deletes the
   * conversation's versions below the newest CHECKPOINT_RETENTION. The new version extends `expectedHead`, the
   * head the lease saw; `parentVersion` records which state it was built from. The state is serialized and
   * hashed once.
   */
  async commit(commit: TurnCommit, expectedHead: number): Promise<number> {
    const { text, checksum } = serializeCheckpoint(commit.state, commit.parentVersion);
    const started = performance.now();
    const version = await this.retry.run('save', async () => {
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
    this.metrics.checkpointWriteDuration.observe((performance.now() - started) / 1000);
    this.metrics.checkpointSize.observe(Buffer.byteLength(text));
    return version;
  }
}
