import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { z } from 'zod';
import { loadYamlFile, validateEnv } from '@agent/config';
import { knownEnvVariables } from '../support/env-variables';

const ROOT = join(__dirname, '..', '..');

describe('Kubernetes manifests', () => {
  it('ship the ConfigMap rendered from the current config/*.yaml (a stale one would override the image)', () => {
    const run = () =>
      execFileSync(process.execPath, [join(ROOT, 'deploy', 'k8s', 'render-configmap.js'), '--check'], {
        cwd: ROOT,
        encoding: 'utf8',
        stdio: 'pipe',
      });
    expect(run).not.toThrow();
  });

  it('set in the env ConfigMap only variables the service reads, each with a valid value', () => {
    const { data } = loadYamlFile(
      join(ROOT, 'deploy', 'k8s', 'configmap-env.yaml'),
      z.object({ data: z.record(z.string(), z.string()) }),
    );
    const known = new Set([...knownEnvVariables(), 'NODE_ENV']);
    // MCP_SERVER_<NAME>_URL: one per server of mcp_servers.yaml, read as a family.
    const unknown = Object.keys(data).filter(
      (name) => !known.has(name) && !/^MCP_SERVER_[A-Z0-9_]+_URL$/.test(name),
    );
    expect(unknown).toEqual([]);
    expect(() => validateEnv(data)).not.toThrow();
  });
});
