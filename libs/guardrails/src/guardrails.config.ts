import { z } from 'zod';
import { RAIL_STAGES, RailStage } from './rail.types';
import { RAIL_CATALOGUE } from './rails/catalogue';
import { SERVICE_LANGUAGES, SERVICE_MESSAGES, ServiceLanguage } from '@agent/config';
import { GuardrailMessages } from './messages';
import { personalDataSchema } from './personal-data-policy';

export const GUARDRAILS_FILE = 'guardrails.yaml';

const railEntrySchema = z
  .object({
    code: z.string().trim().min(1),
    enabled: z.boolean().default(true),
    /** Overrides the global fail_closed for this rail (what a throw or timeout becomes). */
    fail_closed: z.boolean().optional(),
    /** Overrides the global timeout_ms for this rail. */
    timeout_ms: z.number().int().positive().max(120_000).optional(),
    params: z
      .record(z.unknown())
      .nullish()
      .transform((p) => p ?? {}),
  })
  .strict();
export type RailEntry = z.output<typeof railEntrySchema>;

/** A stage's list: every code known, allowed on the stage, listed once, with valid params. */
const stageSchema = (stage: RailStage) =>
  z
    .array(railEntrySchema)
    .nullish()
    .transform((entries) => entries ?? [])
    .superRefine((entries, ctx) => {
      const seen = new Set<string>();
      entries.forEach((entry, index) => {
        const definition = RAIL_CATALOGUE.get(entry.code);
        if (!definition) {
          ctx.addIssue({
            code: z.ZodIssueCode.custom,
            path: [index, 'code'],
            message: `unknown rail code "${entry.code}" (known: ${[...RAIL_CATALOGUE.keys()].join(', ')})`,
          });
          return;
        }
        if (!definition.stages.includes(stage)) {
          ctx.addIssue({
            code: z.ZodIssueCode.custom,
            path: [index, 'code'],
            message: `rail ${entry.code} cannot run on the ${stage} stage (it runs on: ${definition.stages.join(', ')})`,
          });
        }
        if (seen.has(entry.code)) {
          ctx.addIssue({
            code: z.ZodIssueCode.custom,
            path: [index, 'code'],
            message: `rail ${entry.code} is listed twice`,
          });
        }
        seen.add(entry.code);
        const params = definition.params.safeParse(entry.params);
        if (!params.success) {
          for (const issue of params.error.issues) {
            ctx.addIssue({
              code: z.ZodIssueCode.custom,
              path: [index, 'params', ...issue.path],
              message: issue.message,
            });
          }
        }
      });
    });

const codeTable = z.record(z.string().trim().min(1), z.string().trim().min(1));

export const guardrailsFileSchema = z
  .object({
    /** Run a stage's rails concurrently (sequential mode chains sanitizations rail by rail). */
    parallel: z.boolean().default(true),
    /** A rail that throws or times out: BLOCK when true, OBSERVE (with a loud log) when false. */
    fail_closed: z.boolean().default(true),
    /** The first terminal action (block, retry, handover) cancels the rails still running. */
    fail_fast: z.boolean().default(true),
    /** Per-rail time budget unless the rail sets its own. */
    timeout_ms: z.number().int().positive().max(120_000).default(3000),
    /** Failed guardrail-model calls in a row after which readiness reports the model degraded. */
    degraded_after_failures: z.number().int().positive().max(1000).default(3),
    /** LLM profile of the model-backed rails. */
    llm_profile: z.string().trim().min(1).default('guardrail'),
    /** Language of the default user-facing texts; DEFAULT_LANGUAGE when absent. */
    language: z.enum(SERVICE_LANGUAGES).optional(),
    /** Overrides of the default texts (merged over the language's defaults). */
    messages: z
      .object({
        input_blocked: codeTable.default({}),
        output_blocked: codeTable.default({}),
        output_handover: z.string().trim().min(1).optional(),
        input_unverified: z.string().trim().min(1).optional(),
      })
      .strict()
      .default({}),
    /** Personal data in the customer's message, masked before anything else of the turn sees it. */
    personal_data: personalDataSchema,
    input: stageSchema('input'),
    output: stageSchema('output'),
    retrieval: stageSchema('retrieval'),
    tool: stageSchema('tool'),
    memory: stageSchema('memory'),
  })
  .strict();

export type GuardrailsFile = z.output<typeof guardrailsFileSchema>;

/** The configuration the service runs with: enabled rails per stage and the resolved texts. */
export interface ResolvedGuardrailsConfig {
  file: GuardrailsFile;
  stages: Record<RailStage, RailEntry[]>;
  messages: GuardrailMessages;
}

export function resolveGuardrailsConfig(
  file: GuardrailsFile,
  defaultLanguage: ServiceLanguage,
): ResolvedGuardrailsConfig {
  const defaults = SERVICE_MESSAGES[file.language ?? defaultLanguage].guardrails;
  const stages = Object.fromEntries(
    RAIL_STAGES.map((stage) => [stage, file[stage].filter((entry) => entry.enabled)]),
  ) as Record<RailStage, RailEntry[]>;
  return {
    file,
    stages,
    messages: {
      input_blocked: { ...defaults.input_blocked, ...file.messages.input_blocked },
      output_blocked: { ...defaults.output_blocked, ...file.messages.output_blocked },
      output_handover: file.messages.output_handover ?? defaults.output_handover,
      input_unverified: file.messages.input_unverified ?? defaults.input_unverified,
    },
  };
}
