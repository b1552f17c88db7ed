import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { REPO_ROOT } from './repo-root';

/**
 * A copy of the shipped config plus `files` (written as YAML under it, `policies/` made), with agents.yaml entries
 * extended by `agents` (agent_id → keys); an agent_id the shipped file lacks starts as a copy of the shipped
 * retail_orders. The caller removes the directory.
 */
export function agentPolicyConfigDir(
  agents: Record<string, Record<string, string>>,
  files: Record<string, unknown>,
): string {
  const dir = mkdtempSync(join(tmpdir(), 'agent-policy-'));
  cpSync(join(REPO_ROOT, 'config'), dir, { recursive: true });
  mkdirSync(join(dir, 'policies'));
  const file = parse(readFileSync(join(dir, 'agents.yaml'), 'utf8')) as {
    agents: Record<string, Record<string, unknown>>;
  };
  const shipped = structuredClone(file.agents);
  for (const [id, extra] of Object.entries(agents)) {
    file.agents[id] = { ...(shipped[id] ?? shipped.retail_orders), ...extra };
  }
  writeFileSync(join(dir, 'agents.yaml'), stringify(file));
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), stringify(content));
  return dir;
}

/** A shipped config file of `config/`, parsed. */
export function shippedConfig<T>(name: string): T {
  return parse(readFileSync(join(REPO_ROOT, 'config', name), 'utf8')) as T;
}
