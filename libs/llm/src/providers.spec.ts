import { llmProfileSchema, parseEnvNamespace } from '@agent/config';
import { profileSettings } from './providers';

const profile = (yaml: Record<string, unknown>) => llmProfileSchema.parse(yaml);
const env = (raw: Record<string, string>) => parseEnvNamespace('llm', raw);
const noVariables = () => undefined;

describe('profileSettings', () => {
  const models = { LLM_MODEL: 'big', LLM_SMALL_MODEL: 'small', LLM_EMBEDDING_MODEL: 'embed' };

  it('gives each tier its variable, and lets the profile override the model', () => {
    const endpoint = { LLM_BASE_URL: 'http://models:8000/v1', ...models };
    const of = (yaml: Record<string, unknown>) => profileSettings(profile(yaml), env(endpoint), noVariables);
    expect(of({ tier: 'large' })).toMatchObject({
      model: 'big',
      baseUrl: 'http://models:8000/v1',
      missing: null,
    });
    expect(of({ tier: 'small' }).model).toBe('small');
    expect(of({ tier: 'embedding' }).model).toBe('embed');
    expect(of({}).model).toBe('big');
    expect(of({ tier: 'small', model: 'pinned' }).model).toBe('pinned');
  });

  it('falls back from the small tier to LLM_MODEL, but never from the embedding tier', () => {
    const only = env({ LLM_BASE_URL: 'http://models:8000/v1', LLM_MODEL: 'one' });
    expect(profileSettings(profile({ tier: 'small' }), only, noVariables).model).toBe('one');
    expect(profileSettings(profile({ tier: 'embedding' }), only, noVariables)).toMatchObject({
      model: undefined,
      missing: 'no model (set LLM_EMBEDDING_MODEL or model)',
    });
  });

  it('says what is missing: an endpoint, a model, or the key a provider needs', () => {
    expect(profileSettings(profile({}), env({}), noVariables).missing).toMatch(/^no endpoint/);
    expect(profileSettings(profile({}), env({ LLM_BASE_URL: 'http://m/v1' }), noVariables).missing).toBe(
      'no model (set LLM_MODEL or model)',
    );
    expect(profileSettings(profile({}), env({ LLM_PROVIDER: 'openai' }), noVariables).missing).toMatch(
      /^no API key for provider openai/,
    );
  });

  it('applies a provider preset under the variables and the profile', () => {
    const openai = profileSettings(
      profile({ tier: 'small' }),
      env({ LLM_PROVIDER: 'openai', LLM_API_KEY: 'sk' }),
      noVariables,
    );
    expect(openai).toMatchObject({
      provider: 'openai',
      baseUrl: 'https://api.openai.com/v1',
      model: 'gpt-4.1-mini',
      structuredOutput: 'json_schema',
      missing: null,
    });
    const ollama = profileSettings(
      profile({}),
      env({ LLM_PROVIDER: 'ollama', LLM_MODEL: 'qwen2.5' }),
      noVariables,
    );
    expect(ollama).toMatchObject({
      baseUrl: 'http://127.0.0.1:11434/v1',
      structuredOutput: 'json_object',
      missing: null,
    });
    const overridden = profileSettings(
      profile({
        provider: 'vllm',
        base_url: 'http://gpu:9000/v1',
        structured_output: 'json_schema',
        api_key_env: 'GPU_KEY',
      }),
      env({ LLM_PROVIDER: 'openai', LLM_MODEL: 'm', LLM_API_KEY: 'global' }),
      (name) => (name === 'GPU_KEY' ? 'gpu-key' : undefined),
    );
    expect(overridden).toMatchObject({
      provider: 'vllm',
      baseUrl: 'http://gpu:9000/v1',
      apiKey: 'gpu-key',
      structuredOutput: 'json_schema',
    });
  });

  it('rejects an unknown provider at start-up', () => {
    expect(() => env({ LLM_PROVIDER: 'bedrock' })).toThrow(
      /LLM_PROVIDER: expected one of openai\|ollama\|vllm/,
    );
  });
});
