import type { JudgeResult } from '@agent/contracts';
import type { JudgesFile } from './judges.config';

export type ReviewRule = JudgesFile['supervisor_review']['rules'][number];
/** What the supervisor review objects to: a configured rule, or an enforced judge that failed. */
export type ReviewViolation =
  { rule: string; action: ReviewRule['action'] } | { judge: string; action: 'replace' };

/** Why the judges ran on a turn or not. */
export type JudgesSampling = 'session_control' | 'not_sampled' | 'transactional' | 'sampled';

/* The judges' and the supervisor review's events (docs/api.md#events), declared by the module that emits them. */
declare module '@agent/contracts' {
  interface EventPayloads {
    /** One judge's verdict on the turn. */
    [name: `judge.${string}.evaluated`]: JudgeResult;
    /** The judges' pass on the turn: whether it was sampled and, when it ran, which judges failed. */
    'judges.completed': {
      sampled: boolean;
      reason: JudgesSampling;
      count: number;
      sample_rate?: number;
      transactional?: boolean;
      failed?: string[];
      enforced_failed?: string[];
    };
    'supervisor.review.completed': {
      approved: boolean;
      violations: ReviewViolation[];
      /** Why the review did not look at the answer (e.g. a session-control message). */
      skipped?: string;
    };
  }
}
