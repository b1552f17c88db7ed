import { z } from 'zod';
import type { Rail, RailStage } from '../rail.types';

/** What a rail may need of the deployment besides its params. */
export interface RailEnvironment {
  /** The deployment's secret values (API keys, webhook secrets, the model key): never shown to a customer. */
  secrets: readonly string[];
}

export const NO_ENVIRONMENT: RailEnvironment = { secrets: [] };

/** A rail code of the catalogue: where it may run, its params schema and how to build it. */
export interface RailDefinition {
  code: string;
  stages: readonly RailStage[];
  /** Strict schema of `params` in guardrails.yaml (unknown keys are a start-up error). */
  params: z.ZodTypeAny;
  /** Whether this configuration calls the guardrail model (reported at start-up). */
  usesLlm(params: unknown): boolean;
  create(params: unknown, environment?: RailEnvironment): Rail;
}

/** Keeps each rail's params typed inside its own file while the catalogue stays heterogeneous. */
export function defineRail<S extends z.ZodTypeAny>(definition: {
  code: string;
  stages: readonly RailStage[];
  params: S;
  usesLlm: (params: z.output<S>) => boolean;
  create: (params: z.output<S>, environment: RailEnvironment) => Rail;
}): RailDefinition {
  return {
    code: definition.code,
    stages: definition.stages,
    params: definition.params,
    usesLlm: (params) => definition.usesLlm(definition.params.parse(params) as z.output<S>),
    create: (params, environment = NO_ENVIRONMENT) =>
      definition.create(definition.params.parse(params) as z.output<S>, environment),
  };
}
