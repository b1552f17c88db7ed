import { AppEnv, ConfigFilesService, LlmEnv, parseEnvNamespace, validateEnv } from '@agent/config';
import { profileSettings } from '@agent/llm';
import { DemoModelInProductionError } from '../app.errors';
import { DemoModel } from './demo-model';
import { DemoModelServer } from './demo-model.server';

/** The variables that say a model is wanted: with one of them set, a missing model is a set-up to finish. */
export const MODEL_VARIABLES = [
  'LLM_PROVIDER',
  'LLM_BASE_URL',
  'LLM_API_KEY',
  'LLM_MODEL',
  'LLM_SMALL_MODEL',
  'LLM_EMBEDDING_MODEL',
] as const;

/** The demo model is for trying the service: production refuses it. */
export function assertDemoModelAllowed(
  app: Pick<AppEnv, 'NODE_ENV'>,
  llm: Pick<LlmEnv, 'LLM_PROVIDER'>,
): void {
  if (app.NODE_ENV === 'production' && llm.LLM_PROVIDER === 'demo') throw new DemoModelInProductionError();
}

/**
 * Starts the built-in demo model when it is asked for (`LLM_PROVIDER=demo` without an endpoint of its own), or
 * when `npm start` runs in development with no model configured at all: none of the model variables set and no
 * profile that can be called by itself. It then points the service at it (LLM_PROVIDER, LLM_BASE_URL in
 * `env`); null when nothing was started. Never in production, never by itself under test.
 */
export async function startDemoModel(env: NodeJS.ProcessEnv = process.env): Promise<DemoModelServer | null> {
  validateEnv(env);
  const app = parseEnvNamespace('app', env);
  const llm = parseEnvNamespace('llm', env);
  assertDemoModelAllowed(app, llm);
  const files = new ConfigFilesService(app, llm, parseEnvNamespace('routing', env));
  const wanted =
    llm.LLM_PROVIDER === 'demo'
      ? llm.LLM_BASE_URL === undefined
      : app.NODE_ENV === 'development' &&
        MODEL_VARIABLES.every((name) => !env[name]) &&
        Object.values(files.llmProfiles.profiles).every(
          (profile) => profileSettings(profile, llm).missing !== null,
        );
  if (!wanted) return null;
  const intents = files.routings.distinct().flatMap((routing) => routing.intents);
  const server = await DemoModelServer.start(new DemoModel(intents, app.DEFAULT_LANGUAGE));
  env.LLM_PROVIDER = 'demo';
  env.LLM_BASE_URL = server.baseUrl;
  return server;
}
