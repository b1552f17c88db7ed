import { z } from 'zod';
import { RailAction } from '../rail.types';
import { estimateTokens } from '../text';
import { defineRail } from './rail-definition';

/** INPUT_SIZE: a token estimate of the message against a limit (deterministic). */
export const inputSizeRail = defineRail({
  code: 'INPUT_SIZE',
  stages: ['input'],
  params: z
    .object({
      max_tokens: z.number().int().positive().default(4096),
      chars_per_token: z.number().positive().default(4),
    })
    .strict(),
  usesLlm: () => false,
  create: (params) => ({
    code: 'INPUT_SIZE',
    evaluate: ({ text }) => {
      const tokens = estimateTokens(text, params.chars_per_token);
      const metadata = { estimated_tokens: tokens, max_tokens: params.max_tokens };
      return Promise.resolve(
        tokens > params.max_tokens
          ? {
              action: RailAction.BLOCK,
              reason: `about ${tokens} tokens, limit ${params.max_tokens}`,
              metadata,
            }
          : { action: RailAction.ALLOW, reason: 'within the size limit', metadata },
      );
    },
  }),
});
