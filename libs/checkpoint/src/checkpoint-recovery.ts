import { Inject, Injectable, Logger } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { checkpointConfig } from '@agent/config';
import { EventBusService } from '@agent/observability';
import { CheckpointReading, readCheckpoint } from './canonical-json';
import { CheckpointRetry } from './checkpoint-retry';
import { CheckpointStore } from './checkpoint.store';
import type { CheckpointRow, LoadedCheckpoint } from './checkpoint.types';

/** The head a lease read, for `fromHead`. */
export interface LeasedHead {
  conversationKey: string;
  headVersion: number;
  /** The row at `headVersion` as the lease read it, unverified; null when none is stored there. */
  head: CheckpointRow | null;
}

/** The integrity-checked load: the newest valid version, skipping corrupt ones and reporting gaps. */
@Injectable()
export class CheckpointRecovery {
  private readonly logger = new Logger(CheckpointRecovery.name);

  constructor(
    private readonly store: CheckpointStore,
    private readonly retry: CheckpointRetry,
    @Inject(checkpointConfig.KEY) private readonly config: ConfigType<typeof checkpointConfig>,
    private readonly events: EventBusService,
  ) {}

  /**
   * The state a lease starts from: the head read with the lease when it passes integrity (no further read), else
   * the newest valid version below it (see `latest`). A head version without its row (deleted by hand, lost in a
   * restore), or any missing version above the one restored, emits `checkpoint.recovery.version_gap`.
   */
  async fromHead(leased: LeasedHead, reading: CheckpointReading): Promise<LoadedCheckpoint | null> {
    const { conversationKey, headVersion, head } = leased;
    if (headVersion === 0) return null;
    if (head) {
      const read = readCheckpoint(head, reading);
      if ('state' in read) return { version: head.version, state: read.state, skipped: 0 };
      this.skipCorrupt(conversationKey, head.version, read.problem);
      return this.scan(conversationKey, head.version, 1, head.version - 1, reading);
    }
    return this.scan(conversationKey, headVersion + 1, 0, headVersion, reading);
  }

  /**
   * The newest checkpoint that passes integrity among the newest CHECKPOINT_RECOVERY_SCAN_LIMIT versions.
   * Each corrupt one emits `checkpoint.recovery.skip_corrupt`; when none is valid, `checkpoint.recovery.clean_start`
   * and null (the turn starts from an empty state). Only the head is read unless it is corrupt.
   */
  latest(conversationKey: string): Promise<LoadedCheckpoint | null> {
    return this.scan(conversationKey, undefined, 0, null, 'whole state');
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
    reading: CheckpointReading,
  ): Promise<LoadedCheckpoint | null> {
    const limit = this.config.CHECKPOINT_RECOVERY_SCAN_LIMIT;
    let skipped = scanned;
    let next = expected;
    let before = beforeVersion;
    while (scanned < limit) {
      // The first read asks for the head only: it is valid almost always.
      const size = before === undefined ? 1 : limit - scanned;
      const rows = await this.retry.run('load', () =>
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
}
