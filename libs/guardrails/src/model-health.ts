/** What readiness reports about the guardrail model. */
export interface GuardrailModelStatus {
  /** True after `degraded_after_failures` failed calls in a row, until one succeeds. */
  degraded: boolean;
  consecutive_failures: number;
  degraded_after_failures: number;
  last_failure: { at: string; cause: string; error: string } | null;
  last_success_at: string | null;
}

/** Readiness over every guardrails file: guardrails.yaml's counters, `degraded` when any file's model is. */
export interface GuardrailModelReport extends GuardrailModelStatus {
  files: (GuardrailModelStatus & { path: string; agents: string[]; llm_profile: string })[];
}

/** Counts failed guardrail-model calls in a row; one usable answer clears it. */
export class GuardrailModelHealth {
  private failures = 0;
  private lastFailure: GuardrailModelStatus['last_failure'] = null;
  private lastSuccessAt: string | null = null;

  constructor(private readonly degradedAfter: number) {}

  /** Returns true when this success ends a degraded period. */
  succeeded(): boolean {
    const recovered = this.degraded;
    this.failures = 0;
    this.lastSuccessAt = new Date().toISOString();
    return recovered;
  }

  /** Returns true when this failure starts a degraded period. */
  failed(cause: string, error: string): boolean {
    this.failures++;
    this.lastFailure = { at: new Date().toISOString(), cause, error };
    return this.failures === this.degradedAfter;
  }

  get degraded(): boolean {
    return this.failures >= this.degradedAfter;
  }

  status(): GuardrailModelStatus {
    return {
      degraded: this.degraded,
      consecutive_failures: this.failures,
      degraded_after_failures: this.degradedAfter,
      last_failure: this.lastFailure,
      last_success_at: this.lastSuccessAt,
    };
  }
}
