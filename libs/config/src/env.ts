import { registerAs } from '@nestjs/config';
import { EnvValidationError } from './config.errors';
import { ENV_SCHEMAS, EnvNamespace, EnvOf } from './env.schema';

type RawEnv = Record<string, string | undefined>;

/** Validates every namespace at once so a bad start-up reports all bad variables in one error. */
export function validateEnv(raw: RawEnv): RawEnv {
  const problems: string[] = [];
  for (const schema of Object.values(ENV_SCHEMAS)) {
    const result = schema.safeParse(raw);
    if (!result.success) {
      for (const issue of result.error.issues) problems.push(`${issue.path.join('.')}: ${issue.message}`);
    }
  }
  if (problems.length > 0) throw new EnvValidationError([...new Set(problems)].sort());
  return raw;
}

export function parseEnvNamespace<N extends EnvNamespace>(namespace: N, raw: RawEnv = process.env): EnvOf<N> {
  const result = ENV_SCHEMAS[namespace].safeParse(raw);
  if (!result.success) {
    throw new EnvValidationError(result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  return result.data;
}

const namespace = <N extends EnvNamespace>(name: N) => registerAs(name, () => parseEnvNamespace(name));

/** One `registerAs` namespace per concern; inject with `@Inject(continuityConfig.KEY)`. */
export const appConfig = namespace('app');
export const databaseConfig = namespace('database');
export const llmConfig = namespace('llm');
export const continuityConfig = namespace('continuity');
export const sessionControlConfig = namespace('sessionControl');
export const routingConfig = namespace('routing');
export const authConfig = namespace('auth');
export const checkpointConfig = namespace('checkpoint');
export const memoryConfig = namespace('memory');
export const guardrailsConfig = namespace('guardrails');
export const eventsConfig = namespace('events');

export const ALL_ENV_NAMESPACES = [
  appConfig,
  databaseConfig,
  llmConfig,
  continuityConfig,
  sessionControlConfig,
  routingConfig,
  authConfig,
  checkpointConfig,
  memoryConfig,
  guardrailsConfig,
  eventsConfig,
];
