import { z } from 'zod';
import { findPii, PII_TYPES, PiiType, placeholder, replacePii } from '../pii';
import { RailAction } from '../rail.types';
import { defineRail } from './rail-definition';

/** MSK: masks CPF/CNPJ, e-mail, phone and card numbers (sanitize, deterministic). */
export const maskingRail = defineRail({
  code: 'MSK',
  stages: ['input', 'output', 'retrieval', 'tool'],
  params: z
    .object({
      types: z
        .array(z.enum(PII_TYPES))
        .min(1)
        .default([...PII_TYPES]),
      /** `{type}` becomes CPF, CNPJ, EMAIL, PHONE or CARD. */
      placeholder: z.string().min(1).default('[{type}]'),
    })
    .strict(),
  usesLlm: () => false,
  create: (params) => {
    const types: readonly PiiType[] = params.types;
    const mask = (text: string) =>
      replacePii(text, findPii(text, types), (m) => placeholder(params.placeholder, m.type));
    return {
      code: 'MSK',
      evaluate: ({ text }) => {
        const found = findPii(text, types);
        if (found.length === 0) {
          return Promise.resolve({ action: RailAction.ALLOW, reason: 'no personal data', metadata: {} });
        }
        return Promise.resolve({
          action: RailAction.SANITIZE,
          reason: `masked ${found.length} personal data item(s)`,
          sanitize: mask,
          metadata: { types: [...new Set(found.map((m) => m.type))], count: found.length },
        });
      },
    };
  },
});
