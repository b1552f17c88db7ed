import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { z } from 'zod';
import type { LlmService } from '@agent/llm';
import type { Price, PriceOf } from './stage';

/**
 * The price table: US dollars per million tokens per model tier of llm_profiles.yaml (input, cached input,
 * output), with the model each price is for. The benchmarks' table (bench/config/prices.yaml) is the default.
 */
const priceSchema = z
  .object({
    model: z.string().optional(),
    input: z.number().min(0),
    cached_input: z.number().min(0),
    output: z.number().min(0),
  })
  .strict();
export const priceFileSchema = z.object({ tiers: z.record(priceSchema) }).strict();
export type PriceFile = z.output<typeof priceFileSchema>;

export class PriceFileError extends Error {}

export function loadPrices(path: string): PriceFile {
  let raw: unknown;
  try {
    raw = parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new PriceFileError(
      `price table ${path}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const parsed = priceFileSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new PriceFileError(`price table ${path}: ${problems.join('; ')}`);
  }
  return parsed.data;
}

/** A call's price: the tier of the profile it was made with (a profile missing from the file is `default`'s). */
export function profilePrices(prices: PriceFile, llm: LlmService): PriceOf {
  return (profile: string): Price | undefined => {
    const tier = llm.resolveProfile(profile)?.config.tier;
    return tier === undefined ? undefined : prices.tiers[tier];
  };
}
