import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { configErrorOf } from '@agent/testing/config-error';
import { ConfigFilesService } from './config-files.service';
import { parseEnvNamespace } from './env';

const repoConfig = join(__dirname, '..', '..', '..', 'config');
const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

type Yaml = Record<string, unknown>;

/** A copy of the shipped config; `edit` changes the parsed files it names, `files` are written under it as-is. */
function configDir(
  edit: { agents?: (file: Yaml) => void; routing?: (file: Yaml) => void } = {},
  files: Record<string, string> = {},
): string {
  const dir = mkdtempSync(join(tmpdir(), 'config-files-'));
  dirs.push(dir);
  cpSync(repoConfig, dir, { recursive: true });
  for (const [name, change] of [
    ['agents.yaml', edit.agents],
    ['routing.yaml', edit.routing],
  ] as const) {
    if (!change) continue;
    const file = parse(readFileSync(join(dir, name), 'utf8')) as Yaml;
    change(file);
    writeFileSync(join(dir, name), stringify(file));
  }
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
  return dir;
}

function load(dir: string): ConfigFilesService {
  const raw = { CONFIG_DIR: dir };
  return new ConfigFilesService(
    parseEnvNamespace('app', raw),
    parseEnvNamespace('llm', raw),
    parseEnvNamespace('routing', raw),
  );
}

const graphAgents = (file: Yaml) => file.graph_agents as Record<string, Yaml>;
const profiles = (file: Yaml) => file.agents as Record<string, Yaml>;
const intents = (file: Yaml) => file.intents as Yaml[];

const LOYALTY_AGENT = {
  description: 'Loyalty points and rewards.',
  prompt: 'prompts/loyalty_agent.md',
  state_domain: 'LOYALTY',
};

describe('agents from configuration', () => {
  it('takes a fifth graph agent and an intent for it with no code', () => {
    const files = load(
      configDir(
        {
          agents: (file) => (graphAgents(file).loyalty_agent = LOYALTY_AGENT),
          routing: (file) =>
            intents(file).push({
              name: 'loyalty_points',
              description: 'Loyalty points.',
              agent: 'loyalty_agent',
              domain: 'telecom',
              mcp_tools: ['consultar_plano'],
              keywords: ['pontos'],
            }),
        },
        { 'prompts/loyalty_agent.md': 'Você é o agente de fidelidade.' },
      ),
    );
    expect(Object.keys(files.agents.graph_agents)).toEqual([
      'billing_agent',
      'product_agent',
      'orders_agent',
      'support_agent',
      'loyalty_agent',
    ]);
    expect(files.isGraphAgent('loyalty_agent')).toBe(true);
    expect(files.isGraphAgent('handoff')).toBe(false);
    expect(files.isGraphAgent('constructor')).toBe(false);
  });

  it('names, in one line each, every agent a routing file sends turns to that agents.yaml lacks', () => {
    const dir = configDir({
      routing: (file) => {
        (file.router as Yaml).fallback_agent = 'nobody_agent';
        (file.state_policies as Yaml[])[0].agent = 'ghost_agent';
        intents(file)[1].agent = 'sales_agent';
      },
    });
    const agents = 'billing_agent, product_agent, orders_agent, support_agent';
    expect(configErrorOf(() => load(dir)).problems).toEqual([
      `router.fallback_agent: "nobody_agent" is not a graph agent of agents.yaml (${agents})`,
      `state_policies[0].agent: "ghost_agent" is not a graph agent of agents.yaml (${agents})`,
      `intents[1].agent: "sales_agent" is not a graph agent of agents.yaml (${agents})`,
    ]);
  });

  it('refuses a graph agent whose prompt file is missing', () => {
    const dir = configDir({ agents: (file) => (graphAgents(file).loyalty_agent = LOYALTY_AGENT) });
    const error = configErrorOf(() => load(dir));
    expect(error.filePath).toBe(join(dir, 'agents.yaml'));
    expect(error.problems).toEqual([
      `graph_agents.loyalty_agent.prompt: file not found: ${join(dir, 'prompts/loyalty_agent.md')}`,
    ]);
  });

  it('refuses a prompts_dir that does not exist, and a file in it that no graph agent would read', () => {
    const missing = configDir({
      agents: (file) => (profiles(file).telecom_contas.prompts_dir = 'prompts/telecom_contas'),
    });
    expect(configErrorOf(() => load(missing)).problems).toEqual([
      `agents.telecom_contas.prompts_dir: directory not found: ${join(missing, 'prompts/telecom_contas')}`,
    ]);
    const misspelt = configDir({}, { 'prompts/retail_orders/order_agent.md': 'Pedidos.' });
    expect(configErrorOf(() => load(misspelt)).problems).toEqual([
      `agents.retail_orders.prompts_dir: ${join(misspelt, 'prompts/retail_orders/order_agent.md')} is not ` +
        '<graph agent>.md for a graph agent of graph_agents',
    ]);
  });

  it('refuses two graph agents with one state_domain: their transaction states would be one', () => {
    const dir = configDir({
      agents: (file) => (graphAgents(file).loyalty_agent = { ...LOYALTY_AGENT, state_domain: 'BILLING' }),
    });
    expect(configErrorOf(() => load(dir)).problems).toEqual([
      'graph_agents.loyalty_agent.state_domain: "BILLING" is already the state_domain of billing_agent',
    ]);
  });

  it('refuses a graph agent name that could shadow a node, and unknown keys', () => {
    const dir = configDir({
      agents: (file) => {
        graphAgents(file).supervisor_agent = { ...LOYALTY_AGENT, state_domain: 'SUPERVISOR' };
        graphAgents(file).persist = { ...LOYALTY_AGENT, state_domain: 'PERSIST' };
        graphAgents(file).loyalty_agent = { ...LOYALTY_AGENT, tools: ['x'] };
      },
    });
    expect(
      configErrorOf(() => load(dir))
        .problems.slice()
        .sort(),
    ).toEqual(
      [
        'graph_agents.supervisor_agent: is a reserved node name',
        'graph_agents.persist: must end in _agent',
        "graph_agents.loyalty_agent: Unrecognized key(s) in object: 'tools'",
      ].sort(),
    );
  });
});
