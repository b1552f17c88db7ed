import { z } from 'zod';
import { ENV_SCHEMAS } from '@agent/config';

function variablesOf(schema: z.ZodTypeAny): string[] {
  if (schema instanceof z.ZodObject) return Object.keys(schema.shape as Record<string, unknown>);
  if (schema instanceof z.ZodEffects) return variablesOf(schema.innerType());
  throw new Error('unexpected env schema shape');
}

/** Every environment variable the service reads, from its env schemas. */
export function knownEnvVariables(): string[] {
  return Object.values(ENV_SCHEMAS).flatMap((schema) => variablesOf(schema));
}
