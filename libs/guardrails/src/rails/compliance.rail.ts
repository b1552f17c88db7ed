import { z } from 'zod';
import { RailAction, RailEvaluation } from '../rail.types';
import { compileUserPattern, matchesEither } from '../text';
import { defineRail } from './rail-definition';

/** A regex field that must compile; the error carries the key path of guardrails.yaml. */
const patternField = z
  .string()
  .min(1)
  .superRefine((source, ctx) => {
    const compiled = compileUserPattern(source);
    if (typeof compiled === 'string') {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `invalid regex: ${compiled}` });
    }
  });

const forbiddenRule = z
  .object({ id: z.string().min(1), pattern: patternField, reason: z.string().optional() })
  .strict();
const requiredRule = z
  .object({
    id: z.string().min(1),
    /** The statement that must be present. */
    pattern: patternField,
    /** Only required when the text matches this. */
    when: patternField.optional(),
    /** Appended when missing (sanitize); without it a missing statement asks for a rewrite (retry). */
    append: z.string().min(1).optional(),
  })
  .strict();

const compileRule = (source: string) => new RegExp(source, 'iu');

/**
 * CMP: configurable compliance statements (deterministic). On input a forbidden statement blocks; on output
 * a forbidden statement or a missing required one asks the agent to rewrite (retry), unless the rule says
 * what to append.
 */
export const complianceRail = defineRail({
  code: 'CMP',
  stages: ['input', 'output'],
  params: z
    .object({
      forbidden: z.array(forbiddenRule).default([]),
      required: z.array(requiredRule).default([]),
      /** Action for a forbidden statement on output (input always blocks). */
      output_action: z.enum(['retry', 'block']).default('retry'),
    })
    .strict(),
  usesLlm: () => false,
  create: (params) => {
    const forbidden = params.forbidden.map((r) => ({ ...r, regex: compileRule(r.pattern) }));
    const required = params.required.map((r) => ({
      ...r,
      regex: compileRule(r.pattern),
      whenRegex: r.when ? compileRule(r.when) : null,
    }));
    return {
      code: 'CMP',
      evaluate: ({ text, stage }): Promise<RailEvaluation> => {
        const violated = forbidden.filter((r) => matchesEither(r.regex, text));
        if (violated.length > 0) {
          const ids = violated.map((r) => r.id);
          return Promise.resolve({
            action:
              stage === 'output' && params.output_action === 'retry' ? RailAction.RETRY : RailAction.BLOCK,
            reason: violated.map((r) => r.reason ?? `forbidden statement ${r.id}`).join('; '),
            guidance: `Rewrite the answer without these statements: ${violated.map((r) => r.reason ?? r.id).join('; ')}.`,
            metadata: { forbidden: ids },
          });
        }
        if (stage !== 'output') {
          return Promise.resolve({
            action: RailAction.ALLOW,
            reason: 'no forbidden statement',
            metadata: {},
          });
        }
        const missing = required.filter(
          (r) => (!r.whenRegex || matchesEither(r.whenRegex, text)) && !matchesEither(r.regex, text),
        );
        if (missing.length === 0) {
          return Promise.resolve({ action: RailAction.ALLOW, reason: 'compliant', metadata: {} });
        }
        const unfixable = missing.filter((r) => !r.append);
        if (unfixable.length > 0) {
          return Promise.resolve({
            action: RailAction.RETRY,
            reason: `missing required statement(s): ${unfixable.map((r) => r.id).join(', ')}`,
            guidance: `The answer must include the required statement(s): ${unfixable.map((r) => r.id).join(', ')}.`,
            metadata: { missing: missing.map((r) => r.id) },
          });
        }
        const appended = missing.map((r) => r.append as string);
        return Promise.resolve({
          action: RailAction.SANITIZE,
          reason: `appended required statement(s): ${missing.map((r) => r.id).join(', ')}`,
          sanitize: (current) => [current.trimEnd(), ...appended].join(' '),
          metadata: { appended: missing.map((r) => r.id) },
        });
      },
    };
  },
});
