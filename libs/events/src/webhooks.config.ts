import { z } from 'zod';

/** Standard Webhooks secrets: optionally `whsec_`, then base64 of at least 24 random bytes. */
const MIN_SECRET_BYTES = 24;

/** `*`, an exact event name, or a prefix ending in `*` (`session.*`, `GRL.*`). */
const eventFilter = z
  .string()
  .regex(/^[A-Za-z0-9_.-]*\*?$/, 'expected an event name, or a prefix ending in *');

const endpointSchema = z
  .object({
    id: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'expected letters, digits, _ . - (up to 64)'),
    tenant_id: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'expected a tenant id'),
    url: z
      .string()
      .url()
      .refine((value) => /^https?:\/\//.test(value), 'expected an http(s) URL'),
    /** Name of the environment variable holding the signing secret (never the secret itself). */
    secret_env: z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'expected an environment variable name'),
    events: z.array(eventFilter).min(1).default(['*']),
    enabled: z.boolean().default(true),
    timeout_ms: z.number().int().min(100).optional(),
    max_attempts: z.number().int().min(1).max(50).optional(),
  })
  .strict();

export const webhooksFileSchema = z
  .object({ endpoints: z.array(endpointSchema).default([]) })
  .strict()
  .superRefine((file, ctx) => {
    const seen = new Set<string>();
    file.endpoints.forEach((endpoint, index) => {
      if (seen.has(endpoint.id)) {
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          path: ['endpoints', index, 'id'],
          message: 'duplicate id',
        });
      }
      seen.add(endpoint.id);
    });
  });

export type WebhooksFile = z.output<typeof webhooksFileSchema>;
export type WebhookEndpointConfig = WebhooksFile['endpoints'][number];

/** The problem with a secret (missing, or not base64 of enough bytes), or null when it is usable. */
export function secretProblem(secret: string | undefined): string | null {
  if (secret === undefined || secret.trim() === '') return 'is not set';
  const encoded = secret.trim().replace(/^whsec_/, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return 'is not base64 (optionally prefixed whsec_)';
  if (Buffer.from(encoded, 'base64').length < MIN_SECRET_BYTES) {
    return `holds fewer than ${MIN_SECRET_BYTES} bytes`;
  }
  return null;
}

/** Whether an endpoint's filter lets an event through. */
export function acceptsEvent(filters: readonly string[], name: string): boolean {
  return filters.some((filter) =>
    filter.endsWith('*') ? name.startsWith(filter.slice(0, -1)) : filter === name,
  );
}
