import { join } from 'node:path';
import { ConfigFilesService, parseEnvNamespace } from '@agent/config';
import { LlmService } from '@agent/llm';
import { EventBusService, MetricsService, TracingService } from '@agent/observability';
import { listeningBus } from './listening-bus';
import type { FakeLlmServer } from './fake-llm';
import { REPO_ROOT } from './repo-root';

export interface TestLlm {
  llm: LlmService;
  files: ConfigFilesService;
  events: EventBusService;
  metrics: MetricsService;
}

/**
 * A real LlmService outside Nest, for tests of one stage: the repository's config, the test profiles (model =
 * profile name) and the scripted server as endpoint. `fake: null` leaves the endpoint unconfigured; `env`
 * overrides any variable (CONFIG_DIR for another catalogue, say).
 */
export function createTestLlm(
  fake: FakeLlmServer | null,
  env: Record<string, string | undefined> = {},
): TestLlm {
  const raw = {
    CONFIG_DIR: join(REPO_ROOT, 'config'),
    LLM_PROFILES_PATH: join(REPO_ROOT, 'test', 'support', 'config', 'llm_profiles.yaml'),
    LLM_BASE_URL: fake?.baseUrl,
    LLM_API_KEY: 'test-key',
    ...env,
  };
  const llmEnv = parseEnvNamespace('llm', raw);
  const files = new ConfigFilesService(
    parseEnvNamespace('app', raw),
    llmEnv,
    parseEnvNamespace('routing', raw),
  );
  const { events, metrics } = listeningBus();
  const llm = new LlmService(llmEnv, files, events, metrics, new TracingService());
  return { llm, files, events, metrics };
}
