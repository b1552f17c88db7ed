import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { configErrorOf } from '@agent/testing/config-error';
import { GLOBAL_TOOL_POLICY } from './config-files.schema';
import { ConfigFilesService } from './config-files.service';
import { parseEnvNamespace } from './env';
import { PerAgent } from './per-agent';

const repoConfig = join(__dirname, '..', '..', '..', 'config');
const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/**
 * A copy of the shipped config whose agents.yaml entries get `fields` (agent_id → extra keys) and whose
 * `files` are written under it.
 */
function configDir(
  fields: Record<string, Record<string, unknown>>,
  files: Record<string, unknown> = {},
): string {
  const dir = mkdtempSync(join(tmpdir(), 'per-agent-'));
  dirs.push(dir);
  cpSync(repoConfig, dir, { recursive: true });
  const agents = parse(readFileSync(join(dir, 'agents.yaml'), 'utf8')) as {
    agents: Record<string, Record<string, unknown>>;
  };
  for (const [id, extra] of Object.entries(fields)) Object.assign(agents.agents[id], extra);
  writeFileSync(join(dir, 'agents.yaml'), stringify(agents));
  mkdirSync(join(dir, 'policies'), { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    writeFileSync(join(dir, name), typeof content === 'string' ? content : stringify(content));
  }
  return dir;
}

function load(dir: string, env: Record<string, string> = {}): ConfigFilesService {
  const raw = { CONFIG_DIR: dir, ...env };
  return new ConfigFilesService(
    parseEnvNamespace('app', raw),
    parseEnvNamespace('llm', raw),
    parseEnvNamespace('routing', raw),
  );
}

describe('PerAgent', () => {
  it('gives an agent_id its own value, everyone else (unknown ids too) the global one', () => {
    const own = { name: 'own' };
    const global = { name: 'global' };
    const perAgent = new PerAgent(global, new Map([['retail_orders', own]]));
    expect(perAgent.for('retail_orders')).toBe(own);
    expect(perAgent.for('telecom_contas')).toBe(global);
    expect(perAgent.for('nobody')).toBe(global);
    expect(perAgent.for(undefined)).toBe(global);
    expect(perAgent.agentIds()).toEqual(['retail_orders']);
    expect(perAgent.distinct()).toEqual([global, own]);
  });

  it('maps each distinct value once, keeping which agents share it', () => {
    const shared = { name: 'shared' };
    const perAgent = new PerAgent(
      { name: 'global' },
      new Map([
        ['a', shared],
        ['b', shared],
      ]),
    );
    const made: string[] = [];
    const mapped = perAgent.map((value) => {
      made.push(value.name);
      return { built: value.name };
    });
    expect(made).toEqual(['global', 'shared']);
    expect(mapped.for('a')).toBe(mapped.for('b'));
    expect(mapped.for('c')).toEqual({ built: 'global' });
  });

  it('names the agents of each distinct value, those without a file of their own under the global one', () => {
    const shared = { name: 'shared' };
    const global = { name: 'global' };
    const perAgent = new PerAgent(
      global,
      new Map([
        ['a', shared],
        ['c', shared],
      ]),
      ['a', 'b', 'c', 'd'],
    );
    expect(perAgent.users()).toEqual([
      { value: global, agents: ['b', 'd'] },
      { value: shared, agents: ['a', 'c'] },
    ]);
    expect(perAgent.map((value) => value.name).users()).toEqual([
      { value: 'global', agents: ['b', 'd'] },
      { value: 'shared', agents: ['a', 'c'] },
    ]);
  });
});

describe('per-agent policy files in agents.yaml', () => {
  it('loads a tool policy for the agent that names it, once per file; the others keep the global policy', () => {
    const dir = configDir(
      {
        retail_orders: { tool_policy: 'policies/tools.yaml' },
        telecom_contas: { tool_policy: 'policies/tools.yaml' },
      },
      {
        'policies/tools.yaml': {
          allowed_tools: ['consultar_pedido', 'cancelar_pedido'],
          require_confirmation: { cancelar_pedido: false },
          max_tool_steps: 2,
        },
      },
    );
    const files = load(dir);
    const retail = files.toolPolicies.for('retail_orders');
    expect(retail).toEqual({
      allowed_tools: ['consultar_pedido', 'cancelar_pedido'],
      require_confirmation: { cancelar_pedido: false },
      max_tool_steps: 2,
    });
    expect(files.toolPolicies.for('telecom_contas')).toBe(retail);
    expect(files.toolPolicies.distinct()).toHaveLength(2);
    expect(load(configDir({})).toolPolicies.for('retail_orders')).toBe(GLOBAL_TOOL_POLICY);
  });

  it('fails naming agents.yaml and the field when a named file does not exist', () => {
    const dir = configDir({ retail_orders: { guardrails: 'policies/missing.yaml', judges: 'nowhere.yaml' } });
    const error = configErrorOf(() => load(dir));
    expect(error.filePath).toBe(join(dir, 'agents.yaml'));
    expect(error.problems).toEqual([
      `agents.retail_orders.guardrails: file not found: ${join(dir, 'policies/missing.yaml')}`,
      `agents.retail_orders.judges: file not found: ${join(dir, 'nowhere.yaml')}`,
    ]);
  });

  it('rejects an unknown policy field of an agents.yaml entry', () => {
    const dir = configDir({ retail_orders: { guardrail: 'policies/g.yaml' } });
    expect(configErrorOf(() => load(dir)).problems).toEqual([
      "agents.retail_orders: Unrecognized key(s) in object: 'guardrail'",
    ]);
  });

  it('fails naming the tool policy file and each bad field', () => {
    const dir = configDir(
      { retail_orders: { tool_policy: 'policies/tools.yaml' } },
      {
        'policies/tools.yaml': {
          allowed_tools: ['consultar_pedido', 'teleport'],
          require_confirmation: { consultar_pedido: true, launch: true },
        },
      },
    );
    const error = configErrorOf(() => load(dir));
    expect(error.filePath).toBe(join(dir, 'policies/tools.yaml'));
    expect(error.problems).toEqual([
      'allowed_tools[1]: "teleport" is not declared in tools.yaml',
      'require_confirmation.consultar_pedido: not a transactional tool',
      'require_confirmation.launch: not declared in tools.yaml',
    ]);
  });

  it('gives an agent its own routing file, with ROUTING_MODE applied to it as to routing.yaml', () => {
    const routing = parse(readFileSync(join(repoConfig, 'routing.yaml'), 'utf8')) as {
      intents: { domain: string }[];
    };
    const dir = configDir(
      { retail_orders: { routing: 'policies/routing.yaml' } },
      {
        'policies/routing.yaml': {
          ...routing,
          intents: routing.intents.filter((intent) => intent.domain === 'retail'),
        },
      },
    );
    const files = load(dir, { ROUTING_MODE: 'supervisor' });
    expect(files.routings.for('retail_orders').intents.map((intent) => intent.domain)).toEqual([
      'retail',
      'retail',
      'retail',
    ]);
    expect(files.routings.for('telecom_contas')).toBe(files.routing);
    expect(files.routings.distinct().map((file) => file.router.mode)).toEqual(['supervisor', 'supervisor']);
  });

  it("fails naming an agent's routing file and the intent whose tool is not declared", () => {
    const dir = configDir(
      { retail_orders: { routing: 'policies/routing.yaml' } },
      {
        'policies/routing.yaml': {
          router: { fallback_agent: 'orders_agent' },
          intents: [
            { name: 'x', description: 'd', agent: 'orders_agent', domain: 'retail', mcp_tools: ['teleport'] },
          ],
        },
      },
    );
    const error = configErrorOf(() => load(dir));
    expect(error.filePath).toBe(join(dir, 'policies/routing.yaml'));
    expect(error.problems).toEqual(['intents[0].mcp_tools[0]: "teleport" is not declared in tools.yaml']);
  });

  it('validates the tool policy shape (unknown keys, step bounds)', () => {
    const dir = configDir(
      { retail_orders: { tool_policy: 'policies/tools.yaml' } },
      { 'policies/tools.yaml': { max_tool_steps: 50, confirm: [] } },
    );
    const error = configErrorOf(() => load(dir));
    expect(error.filePath).toBe(join(dir, 'policies/tools.yaml'));
    expect(error.problems.sort()).toEqual([
      "(root): Unrecognized key(s) in object: 'confirm'",
      'max_tool_steps: Number must be less than or equal to 20',
    ]);
  });
});
