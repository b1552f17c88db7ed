import { z } from 'zod';
import {
  findPersonalData,
  isPhoneRegion,
  partialMask,
  PERSONAL_DATA_TYPES,
  PersonalDataType,
  placeholder,
  replacePersonalData,
} from './personal-data';

/** What happens to one class of personal data: partly hidden, replaced by its placeholder, or kept. */
export const PERSONAL_DATA_ACTIONS = ['mask', 'redact', 'allow'] as const;
export type PersonalDataAction = (typeof PERSONAL_DATA_ACTIONS)[number];

const action = z.enum(PERSONAL_DATA_ACTIONS);
/** Card numbers are never kept (PCI DSS): masked to first six and last four digits, or redacted whole. */
const cardAction = z.enum(['mask', 'redact']);
const phoneRegion = z
  .string()
  .refine(isPhoneRegion, { message: 'expected a country code libphonenumber knows (BR, US, DE, …)' });

const classActions = {
  card: cardAction,
  iban: action,
  cnpj: action,
  cpf: action,
  email: action,
  phone: action,
  phone_region: phoneRegion,
};

/** guardrails.yaml `personal_data`: the policy for the customer's message, with per-tenant overrides. */
export const personalDataSchema = z
  .object({
    card: classActions.card.default('mask'),
    iban: classActions.iban.default('mask'),
    cnpj: classActions.cnpj.default('allow'),
    cpf: classActions.cpf.default('allow'),
    email: classActions.email.default('allow'),
    phone: classActions.phone.default('allow'),
    phone_region: classActions.phone_region.default('BR'),
    tenants: z
      .record(
        z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'expected a tenant_id (1–64 of A-Z a-z 0-9 _ . -)'),
        z.object(classActions).partial().strict(),
      )
      .default({}),
  })
  .strict()
  .default({});
export type PersonalDataConfig = z.output<typeof personalDataSchema>;

/** One tenant's resolved policy. */
export interface PersonalDataPolicy {
  actions: Record<PersonalDataType, PersonalDataAction>;
  phoneRegion: string;
}

export function policyFor(config: PersonalDataConfig, tenantId: string | undefined): PersonalDataPolicy {
  const tenant =
    (tenantId !== undefined && Object.hasOwn(config.tenants, tenantId)
      ? config.tenants[tenantId]
      : undefined) ?? {};
  const merged = { ...config, ...tenant };
  return {
    actions: Object.fromEntries(PERSONAL_DATA_TYPES.map((type) => [type, merged[type]])) as Record<
      PersonalDataType,
      PersonalDataAction
    >,
    phoneRegion: merged.phone_region,
  };
}

/** What a policy changed in a text: per class, the action and how many items. */
export interface PersonalDataFinding {
  type: PersonalDataType;
  action: Exclude<PersonalDataAction, 'allow'>;
  count: number;
}

export interface ProtectedText {
  text: string;
  findings: PersonalDataFinding[];
}

const REDACTED = '[{type}]';

/** Applies a policy: each class it does not allow is masked or redacted; the rest of the text is unchanged. */
export function applyPolicy(text: string, policy: PersonalDataPolicy): ProtectedText {
  const types = PERSONAL_DATA_TYPES.filter((type) => policy.actions[type] !== 'allow');
  const matches = findPersonalData(text, { types, phoneRegion: policy.phoneRegion });
  if (matches.length === 0) return { text, findings: [] };
  const counts = new Map<PersonalDataType, number>();
  for (const match of matches) counts.set(match.type, (counts.get(match.type) ?? 0) + 1);
  return {
    text: replacePersonalData(text, matches, (match) =>
      policy.actions[match.type] === 'mask' ? partialMask(match) : placeholder(REDACTED, match.type),
    ),
    findings: [...counts].map(([type, count]) => ({
      type,
      action: policy.actions[type] === 'mask' ? 'mask' : 'redact',
      count,
    })),
  };
}
