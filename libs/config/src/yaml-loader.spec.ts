import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  agentsFileSchema,
  llmProfilesFileSchema,
  routingFileSchema,
  toolsFileSchema,
} from './config-files.schema';
import { configErrorOf } from '@agent/testing/config-error';
import { loadYamlFile } from './yaml-loader';

const dir = mkdtempSync(join(tmpdir(), 'yaml-loader-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const write = (name: string, content: string) => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};
const repoConfig = join(__dirname, '..', '..', '..', 'config');

describe('loadYamlFile', () => {
  it('loads the shipped reference catalogue', () => {
    const routing = loadYamlFile(join(repoConfig, 'routing.yaml'), routingFileSchema);
    expect(routing.intents.map((i) => i.name)).toEqual([
      'billing_invoice_explanation',
      'product_services_information',
      'retail_order_cancel',
      'retail_order_tracking',
      'retail_support_exchange_return',
    ]);
    expect(routing.state_policies).toHaveLength(8);
    for (const intent of routing.intents) {
      expect(intent.description).not.toBe('');
      expect(intent.keywords.length).toBeGreaterThan(0);
      expect(intent.examples.length).toBeGreaterThanOrEqual(3);
      expect(intent.mcp_tools.length).toBeGreaterThan(0);
    }
    const agents = loadYamlFile(join(repoConfig, 'agents.yaml'), agentsFileSchema);
    expect(Object.keys(agents.agents)).toEqual(['telecom_contas', 'retail_orders']);
    const tools = loadYamlFile(join(repoConfig, 'tools.yaml'), toolsFileSchema);
    expect(tools.tools.cancelar_pedido.operation_type).toBe('transactional');
    const profiles = loadYamlFile(join(repoConfig, 'llm_profiles.yaml'), llmProfilesFileSchema);
    expect(profiles.profiles.route_continuity).toMatchObject({
      max_tokens: 80,
      timeout_seconds: 5,
      temperature: 0,
    });
  });

  it('names the path of a missing file', () => {
    const missing = join(dir, 'nope.yaml');
    const error = configErrorOf(() => loadYamlFile(missing, routingFileSchema));
    expect(error.message).toContain(missing);
    expect(error.message).toContain('file not found');
  });

  it('names the file and the key path of an invalid value', () => {
    const path = write(
      'routing.yaml',
      `router: {fallback_agent: billing_agent, confidence_threshold: 2}
intents:
  - {name: a, description: d, agent: billing_agent, domain: x}
  - {name: a, description: d, agent: billing_agent, domain: x}
`,
    );
    const error = configErrorOf(() => loadYamlFile(path, routingFileSchema));
    expect(error.filePath).toBe(path);
    const text = error.problems.join('\n');
    expect(text).toContain('router.confidence_threshold');
    expect(text).toContain('intents[1].name: duplicate intent "a"');
  });

  it('reports YAML syntax errors with the file path', () => {
    const path = write('broken.yaml', 'profiles: [unclosed');
    const error = configErrorOf(() => loadYamlFile(path, llmProfilesFileSchema));
    expect(error.message).toContain(path);
    expect(error.message).toContain('not valid YAML');
  });

  it('rejects unknown keys so typos do not pass silently', () => {
    const path = write(
      'profiles.yaml',
      'profiles:\n  router: {provider: openai_compatible, model: m, max_tokenz: 5}\n',
    );
    const error = configErrorOf(() => loadYamlFile(path, llmProfilesFileSchema));
    expect(error.problems.join('\n')).toContain('profiles.router');
  });
});
