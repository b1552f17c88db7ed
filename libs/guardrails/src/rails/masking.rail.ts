import { z } from 'zod';
import {
  findPersonalData,
  isPhoneRegion,
  PERSONAL_DATA_TYPES,
  PersonalDataType,
  placeholder,
  replacePersonalData,
} from '../personal-data';
import { RailAction } from '../rail.types';
import { defineRail } from './rail-definition';

/**
 * MSK: masks cards, IBANs, CPF/CNPJ, e-mail and phone numbers in content from outside the conversation (passages,
 * tool results) and in answers (sanitize, deterministic). The customer's own message is masked before the turn
 * starts, by guardrails.yaml `personal_data`.
 */
export const maskingRail = defineRail({
  code: 'MSK',
  stages: ['output', 'retrieval', 'tool', 'memory'],
  params: z
    .object({
      types: z
        .array(z.enum(PERSONAL_DATA_TYPES))
        .min(1)
        .default([...PERSONAL_DATA_TYPES]),
      /** `{type}` becomes CARD, IBAN, CPF, CNPJ, EMAIL or PHONE. */
      placeholder: z.string().min(1).default('[{type}]'),
      /** How a phone number without a country code is read. */
      phone_region: z.string().refine(isPhoneRegion, 'expected a country code (BR, US, …)').default('BR'),
    })
    .strict(),
  usesLlm: () => false,
  create: (params) => {
    const options = { types: params.types as readonly PersonalDataType[], phoneRegion: params.phone_region };
    const mask = (text: string) =>
      replacePersonalData(text, findPersonalData(text, options), (m) =>
        placeholder(params.placeholder, m.type),
      );
    return {
      code: 'MSK',
      evaluate: ({ text }) => {
        const found = findPersonalData(text, options);
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
