import type { LlmEnv, LlmProfileConfig, LlmProvider, ModelTier, StructuredOutputMode } from '@agent/config';

interface ProviderPreset {
  /** Where the provider listens when neither the profile nor LLM_BASE_URL says. */
  baseUrl?: string;
  structuredOutput: StructuredOutputMode;
  /** Models used when neither the profile nor the tier's variable names one. */
  models?: Partial<Record<ModelTier, string>>;
  /** The endpoint refuses calls without a key, so a profile without one is not callable. */
  needsKey?: boolean;
}

/**
 * What a provider implies. OpenAI takes the stage's strict JSON schema; self-hosted servers get plain JSON mode,
 * which every version of them accepts (a profile can still ask for `json_schema`).
 */
export const PROVIDER_PRESETS: Readonly<Record<LlmProvider, ProviderPreset>> = {
  openai: {
    baseUrl: 'https://api.openai.com/v1',
    structuredOutput: 'json_schema',
    models: { large: 'gpt-4.1', small: 'gpt-4.1-mini', embedding: 'text-embedding-3-small' },
    needsKey: true,
  },
  ollama: { baseUrl: 'http://127.0.0.1:11434/v1', structuredOutput: 'json_object' },
  vllm: { baseUrl: 'http://127.0.0.1:8000/v1', structuredOutput: 'json_object' },
  oci_openai: { structuredOutput: 'json_object' },
  openai_compatible: { structuredOutput: 'json_object' },
  // The built-in demo model reads each stage from the JSON schema's name; it embeds nothing (RAG: full text).
  demo: { structuredOutput: 'json_schema', models: { large: 'demo', small: 'demo' } },
};

/** The variable that names a tier's model, for messages. */
export const TIER_VARIABLES: Readonly<Record<ModelTier, string>> = {
  large: 'LLM_MODEL',
  small: 'LLM_SMALL_MODEL',
  embedding: 'LLM_EMBEDDING_MODEL',
};

export interface ProfileSettings {
  provider: LlmProvider;
  baseUrl: string | undefined;
  apiKey: string | undefined;
  model: string | undefined;
  structuredOutput: StructuredOutputMode;
  /** Why the profile cannot be called (no endpoint, no model, no key), or null when it can. */
  missing: string | null;
}

/**
 * A profile's effective settings: the profile's own keys first, then the environment (LLM_BASE_URL,
 * LLM_API_KEY, the tier's model variable), then the provider's preset. A small profile without LLM_SMALL_MODEL
 * or a preset model takes LLM_MODEL: one model serves every stage of a single-model endpoint.
 */
export function profileSettings(
  config: LlmProfileConfig,
  env: LlmEnv,
  variable: (name: string) => string | undefined = (name) => process.env[name],
): ProfileSettings {
  const provider = config.provider ?? env.LLM_PROVIDER ?? 'openai_compatible';
  const preset = PROVIDER_PRESETS[provider];
  const baseUrl = config.base_url ?? env.LLM_BASE_URL ?? preset.baseUrl;
  const apiKey = (config.api_key_env ? variable(config.api_key_env) : undefined) ?? env.LLM_API_KEY;
  const model = config.model ?? tierModel(config.tier, env, preset);
  const missing =
    baseUrl === undefined
      ? 'no endpoint (set LLM_BASE_URL, LLM_PROVIDER or base_url)'
      : model === undefined
        ? `no model (set ${TIER_VARIABLES[config.tier]} or model)`
        : preset.needsKey && apiKey === undefined
          ? `no API key for provider ${provider} (set LLM_API_KEY or api_key_env)`
          : null;
  return {
    provider,
    baseUrl,
    apiKey,
    model,
    structuredOutput: config.structured_output ?? preset.structuredOutput,
    missing,
  };
}

function tierModel(tier: ModelTier, env: LlmEnv, preset: ProviderPreset): string | undefined {
  switch (tier) {
    case 'large':
      return env.LLM_MODEL ?? preset.models?.large;
    case 'small':
      return env.LLM_SMALL_MODEL ?? preset.models?.small ?? env.LLM_MODEL;
    case 'embedding':
      return env.LLM_EMBEDDING_MODEL ?? preset.models?.embedding;
  }
}
