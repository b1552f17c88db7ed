import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../support/app-process';
import { agentPolicyConfigDir, shippedConfig } from '../support/agent-policy-config';
import { FakeLlmServer, FakeReply, requestText } from '../support/fake-llm';
import { compiledEntry, REPO_ROOT } from '../support/repo-root';

/**
 * npm run llm:check against the scripted server, with the shipped profiles and the three model variables: it
 * calls every profile once, validates the JSON-answering ones against their stage's contract, and reports an
 * HTTP error with its status and the start of its body.
 */
const CLI = compiledEntry('apps/agent-runtime/src/cli/llm-check.ts');
const MODELS = { LLM_MODEL: 'big-x', LLM_SMALL_MODEL: 'small-y', LLM_EMBEDDING_MODEL: 'embed-z' };

/** Runs the CLI with the shipped config and only these model variables (none inherited from the shell). */
function runCheck(env: Record<string, string>): Promise<{ code: number; stdout: string }> {
  const childEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith('LLM_')) childEnv[key] = value;
  }
  Object.assign(childEnv, { CONFIG_DIR: join(REPO_ROOT, 'config') }, env);
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI], { cwd: REPO_ROOT, env: childEnv, timeout: 120000 }, (error, stdout) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout }),
    );
  });
}

/** A small model that does what the check asks: it repeats the JSON object the system prompt shows. */
function repeatExample(text: string): FakeReply {
  const match = /nothing else: (\{.*\})/s.exec(text);
  return match ? { content: match[1] } : { content: 'OK' };
}

/** The table row of a profile: its cells. */
function row(stdout: string, profile: string): string[] {
  const line = stdout.split('\n').find((l) => l.startsWith(`${profile} `)) ?? '';
  return line.split(/\s{2,}/);
}

describe('npm run llm:check', () => {
  let fake: FakeLlmServer;

  beforeAll(async () => {
    fake = await FakeLlmServer.start();
  });
  afterAll(() => fake.stop());
  beforeEach(() => fake.reset());

  it('calls every profile once with the configured models and validates each JSON contract', async () => {
    fake.script({ model: 'small-y', reply: (request) => repeatExample(requestText(request)) });
    fake.script({ model: 'big-x', reply: { content: 'OK' } });
    const { code, stdout } = await runCheck({ LLM_BASE_URL: fake.baseUrl, ...MODELS });
    expect(code).toBe(0);
    expect(stdout).toContain('every profile answered');
    expect(row(stdout, 'route_continuity')).toEqual([
      'route_continuity',
      'small-y',
      expect.stringMatching(/^\d+ ms$/),
      'ok (continuity_decision)',
      'all',
    ]);
    expect(row(stdout, 'router')[3]).toBe('ok (router_intent)');
    expect(row(stdout, 'judge')[3]).toBe('ok (judge_verdict)');
    expect(row(stdout, 'guardrail')[3]).toBe('ok (guardrail_verdict_check)');
    expect(row(stdout, 'confirmation')[3]).toBe('ok (confirmation_decision)');
    expect(row(stdout, 'memory_extraction')[3]).toBe('ok (memory_facts)');
    expect(row(stdout, 'parameter_extraction')[3]).toBe('ok (parameter_values)');
    expect(row(stdout, 'agent').slice(1, 2)).toEqual(['big-x']);
    expect(row(stdout, 'agent')[3]).toBe('ok');
    expect(row(stdout, 'embedding')).toEqual([
      'embedding',
      'embed-z',
      expect.any(String),
      'ok (64 dimensions)',
      'all',
    ]);
    // The shipped judges are deterministic, but judges.yaml names the profile: every agent may call it.
    expect(row(stdout, 'judge')[4]).toBe('all');
    expect(row(stdout, 'default')[4]).toBe('—');
    // One call per profile, and only to the three configured models.
    expect(fake.requests).toHaveLength(10);
    expect([...new Set(fake.requests.map((r) => r.model))].sort()).toEqual(['big-x', 'embed-z', 'small-y']);
  }, 150000);

  it('reports an HTTP error with its status and body, and an answer that breaks the contract', async () => {
    fake.script({
      model: 'big-x',
      reply: { status: 404, rawBody: '{"object":"error","message":"The model `big-x` does not exist."}' },
    });
    fake.script({
      model: 'small-y',
      when: (request) => requestText(request).includes('router profile'),
      reply: { content: 'I think it is about billing.' },
    });
    fake.script({
      model: 'small-y',
      when: (request) => requestText(request).includes('judge profile'),
      reply: { json: { score: '0.9', passed: true } },
    });
    fake.script({ model: 'small-y', reply: (request) => repeatExample(requestText(request)) });
    const { code, stdout } = await runCheck({ LLM_BASE_URL: fake.baseUrl, ...MODELS });
    expect(code).toBe(1);
    expect(row(stdout, 'agent')[3]).toBe(
      'HTTP 404: {"object":"error","message":"The model `big-x` does not exist."}',
    );
    expect(row(stdout, 'router')[3]).toBe('invalid output: no JSON object in the answer');
    expect(row(stdout, 'judge')[3]).toMatch(/^invalid output: score: Expected number, received string/);
    expect(row(stdout, 'route_continuity')[3]).toBe('ok (continuity_decision)');
    expect(stdout).toMatch(/4 of 10 profiles did not answer/);
  }, 150000);

  it('passes as the README shows for vLLM: one served model does every chat stage', async () => {
    const served = 'Qwen/Qwen2.5-7B-Instruct';
    fake.script({ model: served, reply: (request) => repeatExample(requestText(request)) });
    const { code, stdout } = await runCheck({ LLM_BASE_URL: fake.baseUrl, LLM_MODEL: served });
    expect(code).toBe(0);
    expect(row(stdout, 'router').slice(1, 2)).toEqual([served]);
    expect(row(stdout, 'embedding')[3]).toBe(
      'not configured: no model (set LLM_EMBEDDING_MODEL or model); RAG uses full-text search',
    );
    expect(stdout).toContain('every configured profile answered (1 optional skipped)');
    expect(fake.requests).toHaveLength(9);
    expect([...new Set(fake.requests.map((r) => r.model))]).toEqual([served]);
  }, 150000);

  it('prints the URL and the network cause of an endpoint it cannot reach: refused, DNS', async () => {
    const closed = `http://127.0.0.1:${await freePort()}/v1`;
    const unresolvable = 'http://no-such-host.invalid/v1';
    const [refused, dns] = await Promise.all([
      runCheck({ LLM_BASE_URL: closed, LLM_MODEL: 'x' }),
      runCheck({ LLM_BASE_URL: unresolvable, LLM_MODEL: 'x' }),
    ]);
    expect(refused.code).toBe(1);
    expect(row(refused.stdout, 'agent')[3]).toBe(`unreachable: ${closed}: connection refused (ECONNREFUSED)`);
    expect(row(refused.stdout, 'router')[3]).toBe(
      `unreachable: ${closed}: connection refused (ECONNREFUSED)`,
    );
    expect(dns.code).toBe(1);
    expect(row(dns.stdout, 'agent')[3]).toMatch(
      /^unreachable: http:\/\/no-such-host\.invalid\/v1: DNS lookup of no-such-host\.invalid failed \((ENOTFOUND|EAI_AGAIN)\)$/,
    );
    expect(dns.stdout).not.toContain('Connection error');
  }, 150000);

  it('checks the built-in demo model npm start runs for LLM_PROVIDER=demo: every stage gets its contract', async () => {
    const { code, stdout } = await runCheck({ LLM_PROVIDER: 'demo' });
    expect(stdout).toContain('every configured profile answered (1 optional skipped)');
    expect(code).toBe(0);
    expect(row(stdout, 'route_continuity').slice(0, 2)).toEqual(['route_continuity', 'demo']);
    expect(row(stdout, 'route_continuity')[3]).toBe('ok (continuity_decision)');
    expect(fake.requests).toHaveLength(0);
  });

  it('says what is missing without calling anything when no model is configured', async () => {
    fake.setFallback({ content: 'OK' });
    const { code, stdout } = await runCheck({ LLM_BASE_URL: fake.baseUrl });
    expect(code).toBe(1);
    expect(row(stdout, 'agent')).toEqual([
      'agent',
      '—',
      '—',
      'not configured: no model (set LLM_MODEL or model)',
      'all',
    ]);
    expect(row(stdout, 'embedding')[3]).toBe(
      'not configured: no model (set LLM_EMBEDDING_MODEL or model); RAG uses full-text search',
    );
    expect(fake.requests).toEqual([]);
  }, 150000);

  it("checks the profiles each agent's routing, guardrails and judges files name, with the agents using them", async () => {
    const routing = shippedConfig<{ router: Record<string, unknown> }>('routing.yaml');
    const guardrails = shippedConfig<Record<string, unknown>>('guardrails.yaml');
    const dir = agentPolicyConfigDir(
      {
        retail_orders: {
          routing: 'policies/routing.yaml',
          guardrails: 'policies/guardrails.yaml',
          judges: 'policies/judges.yaml',
        },
      },
      {
        'policies/routing.yaml': { ...routing, router: { ...routing.router, llm_profile: 'retail_router' } },
        'policies/guardrails.yaml': { ...guardrails, llm_profile: 'strict_guardrail' },
        'policies/judges.yaml': {
          judges: [{ name: 'groundedness', type: 'llm', profile: 'retail_judge' }],
          supervisor_review: { enabled: false, rules: [] },
        },
      },
    );
    try {
      fake.script({ model: 'small-y', reply: (request) => repeatExample(requestText(request)) });
      fake.script({ model: 'big-x', reply: (request) => repeatExample(requestText(request)) });
      const { code, stdout } = await runCheck({ LLM_BASE_URL: fake.baseUrl, ...MODELS, CONFIG_DIR: dir });
      expect(code).toBe(0);
      expect(stdout).toContain('10 profiles from');
      expect(stdout).toContain('3 more named by the configuration');
      // Names llm_profiles.yaml lacks are called as their stage calls them: with `default`'s model.
      expect(row(stdout, 'retail_router → default')).toEqual([
        'retail_router → default',
        'big-x',
        expect.stringMatching(/^\d+ ms$/),
        'ok (router_intent)',
        'retail_orders',
      ]);
      expect(row(stdout, 'strict_guardrail → default').slice(3)).toEqual([
        'ok (guardrail_verdict_check)',
        'retail_orders',
      ]);
      expect(row(stdout, 'retail_judge → default').slice(3)).toEqual(['ok (judge_verdict)', 'retail_orders']);
      // The global files' profiles: only the agents without a file of their own.
      expect(row(stdout, 'router')[4]).toBe('telecom_contas');
      expect(row(stdout, 'guardrail')[4]).toBe('telecom_contas');
      expect(row(stdout, 'judge')[4]).toBe('all');
      expect(fake.requests).toHaveLength(13);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 150000);
});
