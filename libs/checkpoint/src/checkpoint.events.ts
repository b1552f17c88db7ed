/* The checkpoint module's events (docs/api.md#events), declared by the module that emits them. */
declare module '@agent/contracts' {
  interface EventPayloads {
    /** A checkpoint operation (a `CheckpointOperation`) failed on the connection and is tried again. */
    [name: `checkpoint.${string}.retry`]: {
      attempt: number;
      max_attempts: number;
      delay_ms: number;
      error: string;
    };
    'checkpoint.recovery.skip_corrupt': { version: number; reason: string };
    'checkpoint.recovery.clean_start': { skipped: number };
    'checkpoint.recovery.version_gap': {
      expected_version: number;
      found_version: number | null;
      missing_versions: number;
    };
  }
}

export {};
