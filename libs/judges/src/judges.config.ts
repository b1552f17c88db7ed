import { z } from 'zod';
import { SERVICE_LANGUAGES } from '@agent/config';

export const JUDGES_FILE = 'judges.yaml';
export const JUDGE_NAMES = ['response_quality', 'groundedness', 'sentiment', 'tone'] as const;
export type JudgeName = (typeof JUDGE_NAMES)[number];

/** The reference's thresholds (RQLT 0.7, ALUC 0.6) and ours for sentiment and tone. */
export const DEFAULT_THRESHOLDS: Record<JudgeName, number> = {
  response_quality: 0.7,
  groundedness: 0.6,
  sentiment: 0.25,
  tone: 0.6,
};

const patternField = z
  .string()
  .min(1)
  .superRefine((source, ctx) => {
    try {
      new RegExp(source, 'iu');
    } catch (error) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `invalid regex: ${(error as Error).message}` });
    }
  });

const judgeEntrySchema = z
  .object({
    name: z.enum(JUDGE_NAMES, {
      errorMap: (issue, ctx) => ({
        message:
          issue.code === z.ZodIssueCode.invalid_enum_value
            ? `unknown judge "${String(ctx.data)}" (known: ${JUDGE_NAMES.join(', ')})`
            : ctx.defaultError,
      }),
    }),
    enabled: z.boolean().default(true),
    /** Score at or above which the judge passes; defaults per judge. */
    threshold: z.number().min(0).max(1).optional(),
    type: z.enum(['llm', 'deterministic']).default('deterministic'),
    /** A failing enforced judge makes supervisor_review replace the answer; otherwise judges only observe. */
    enforce: z.boolean().default(false),
    /** Overrides the global fail_closed (what an LLM failure or invalid verdict scores). */
    fail_closed: z.boolean().optional(),
    /** Overrides the global LLM profile for this judge. */
    profile: z.string().trim().min(1).optional(),
  })
  .strict();

const reviewRuleSchema = z
  .object({
    id: z.string().trim().min(1),
    description: z.string().optional(),
    pattern: patternField,
    /** flag: recorded, answer kept; replace: the answer is replaced by `message` (or the review's default). */
    action: z.enum(['flag', 'replace']).default('flag'),
    message: z.string().trim().min(1).optional(),
  })
  .strict();

export const judgesFileSchema = z
  .object({
    enabled: z.boolean().default(true),
    profile: z.string().trim().min(1).default('judge'),
    /** Share of ordinary turns judged (0..1). */
    sample_rate: z.number().min(0).max(1).default(1),
    /** Judge every turn that touches a transaction, whatever the sample rate. */
    always_run_for_transactional: z.boolean().default(true),
    /** An LLM judge that fails or answers invalid JSON scores 0 / failed (true) or is skipped as passed (false). */
    fail_closed: z.boolean().default(true),
    /** Cap of the evidence sent to an LLM judge. */
    max_context_chars: z.number().int().positive().default(12000),
    /** Language of the default replacement text; DEFAULT_LANGUAGE when absent. */
    language: z.enum(SERVICE_LANGUAGES).optional(),
    /** Replaces the answer when an enforced judge fails. */
    fallback_message: z.string().trim().min(1).optional(),
    judges: z
      .array(judgeEntrySchema)
      .default([])
      .superRefine((entries, ctx) => {
        const seen = new Set<string>();
        entries.forEach((entry, index) => {
          if (seen.has(entry.name)) {
            ctx.addIssue({
              code: z.ZodIssueCode.custom,
              path: [index, 'name'],
              message: `judge ${entry.name} is listed twice`,
            });
          }
          seen.add(entry.name);
        });
      }),
    supervisor_review: z
      .object({
        enabled: z.boolean().default(true),
        /** Default replacement for `replace` rules without their own message. */
        replacement_message: z.string().trim().min(1).optional(),
        rules: z
          .array(reviewRuleSchema)
          .default([])
          .superRefine((rules, ctx) => {
            const seen = new Set<string>();
            rules.forEach((rule, index) => {
              if (seen.has(rule.id)) {
                ctx.addIssue({
                  code: z.ZodIssueCode.custom,
                  path: [index, 'id'],
                  message: `rule ${rule.id} is listed twice`,
                });
              }
              seen.add(rule.id);
            });
          }),
      })
      .strict()
      .default({}),
  })
  .strict();

export type JudgesFile = z.output<typeof judgesFileSchema>;
export type JudgeEntry = z.output<typeof judgeEntrySchema>;
export type ReviewRule = z.output<typeof reviewRuleSchema>;
