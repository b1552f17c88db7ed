import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ENV_SCHEMAS, loadYamlFile, parseEnvNamespace, validateEnv } from '@agent/config';
import { knownEnvVariables } from '../support/env-variables';
import { deploymentSpec, K8S_DIR, k8sDocuments, manifest } from '../support/k8s-manifests';

const ROOT = join(__dirname, '..', '..');

/** MCP_SERVER_<NAME>_URL: one per server of mcp_servers.yaml, read as a family. */
const MCP_URL_FAMILY = /^MCP_SERVER_[A-Z0-9_]+_URL$/;

function isServiceVariable(name: string): boolean {
  return name === 'NODE_ENV' || knownEnvVariables().includes(name) || MCP_URL_FAMILY.test(name);
}

/**
 * One replica's resident memory on Node 24 (the image's Node), in MB, measured as docs/operations.md#sizing says:
 * after start-up, the peak of one turn at a time, and the peak at 64 turns in flight.
 */
const RSS_MB = { idle: 207, oneInFlight: 319, busy: 434 };

/** A Kubernetes memory quantity (Mi, Gi, M) in MB. */
function megabytes(quantity: string): number {
  const match = /^(\d+)(Mi|Gi|M|G)$/.exec(quantity);
  if (!match) throw new Error(`unexpected memory quantity ${quantity}`);
  const factor = { Mi: 1.048576, Gi: 1073.741824, M: 1, G: 1000 }[match[2] as 'Mi' | 'Gi' | 'M' | 'G'];
  return Number(match[1]) * factor;
}

interface Kustomization {
  resources: string[];
  patches?: { target: { kind: string; name: string }; patch: string }[];
}

function kustomization(dir: string): Kustomization {
  return parseYaml(readFileSync(join(K8S_DIR, dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
}

describe('Kubernetes manifests', () => {
  const base = k8sDocuments('base');
  const agent = deploymentSpec(base, 'agent-runtime');
  const container = agent.template.spec.containers[0];
  const env = manifest(base, 'ConfigMap', 'agent-runtime-env').data ?? {};

  it('ship the ConfigMap rendered from the current config/*.yaml (a stale one would override the image)', () => {
    const run = () =>
      execFileSync(process.execPath, [join(K8S_DIR, 'render-configmap.js'), '--check'], {
        cwd: ROOT,
        encoding: 'utf8',
        stdio: 'pipe',
      });
    expect(run).not.toThrow();
    const files = manifest(base, 'ConfigMap', 'agent-runtime-config').data ?? {};
    expect(Object.keys(files).length).toBeGreaterThan(0);
    for (const name of Object.keys(files)) expect(readdirSync(join(ROOT, 'config'))).toContain(name);
  });

  it('set in the env ConfigMap only variables the service reads, each with a valid value', () => {
    const { data } = loadYamlFile(
      join(K8S_DIR, 'base', 'configmap-env.yaml'),
      z.object({ data: z.record(z.string(), z.string()) }),
    );
    expect(Object.keys(data).filter((name) => !isServiceVariable(name))).toEqual([]);
    expect(() => validateEnv(data)).not.toThrow();
  });

  it('wire the Deployment to its probes, port, config, secrets, Service and HPA', () => {
    const pod = agent.template.spec;
    expect(container.livenessProbe.httpGet.path).toBe('/health/live');
    expect(container.readinessProbe.httpGet.path).toBe('/health/ready');
    expect(container.lifecycle.preStop).toBeDefined();
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(agent.selector.matchLabels).toEqual(agent.template.metadata.labels);
    expect(container.ports[0].containerPort).toBe(Number(env.PORT));
    expect(env.NODE_ENV).toBe('production');
    expect(container.envFrom).toEqual(
      expect.arrayContaining([
        { configMapRef: { name: 'agent-runtime-env' } },
        { secretRef: { name: 'agent-runtime-secrets' } },
      ]),
    );
    // Grace period covers preStop plus the app's own drain.
    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(Number(env.SHUTDOWN_GRACE_MS) + 5000);

    // config/ is an emptyDir the init container fills from the image and the ConfigMap.
    const configMount = container.volumeMounts.find((m) => m.mountPath === env.CONFIG_DIR);
    const configVolume = pod.volumes.find((v) => v.name === configMount?.name);
    expect(configVolume?.emptyDir).toBeDefined();
    const init = pod.initContainers[0];
    expect(init.volumeMounts.map((m) => m.name).sort()).toEqual([configMount?.name, 'config-files'].sort());
    expect(pod.volumes.find((v) => v.name === 'config-files')?.configMap?.name).toBe('agent-runtime-config');
    expect(init.image).toBe(container.image);

    const secret = manifest(base, 'Secret', 'agent-runtime-secrets');
    expect(Object.keys(secret.stringData ?? {})).toEqual(
      expect.arrayContaining(['DATABASE_URL', 'CHANNEL_API_KEYS', 'ADMIN_API_KEYS', 'LLM_API_KEY']),
    );
    const service = manifest(base, 'Service', 'agent-runtime').spec as {
      selector: Record<string, string>;
      ports: { name: string; targetPort: string }[];
    };
    expect(service.selector).toEqual(agent.selector.matchLabels);
    expect(service.ports[0].targetPort).toBe(container.ports[0].name);
    const hpa = manifest(base, 'HorizontalPodAutoscaler', 'agent-runtime').spec as {
      scaleTargetRef: { kind: string; name: string };
      minReplicas: number;
    };
    expect(hpa.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: 'agent-runtime' });
    expect(hpa.minReplicas).toBeGreaterThanOrEqual(2);
  });

  it('size memory from measured RSS: idle well under the request, the HPA target above a one-turn peak', () => {
    const request = megabytes(container.resources.requests.memory);
    const limit = megabytes(container.resources.limits.memory);
    const hpa = manifest(base, 'HorizontalPodAutoscaler', 'agent-runtime').spec as {
      metrics: { resource: { name: string; target: { averageUtilization: number } } }[];
    };
    const memory = hpa.metrics.find((m) => m.resource.name === 'memory');
    const target = (request * (memory?.resource.target.averageUtilization ?? 0)) / 100;
    // An idle replica must not count as busy, nor a replica that served one turn at a time.
    expect(RSS_MB.idle).toBeLessThan(request * 0.6);
    expect(target).toBeGreaterThan(RSS_MB.oneInFlight * 1.2);
    // The HPA adds replicas before a busy one nears the limit, which leaves room for a burst.
    expect(target).toBeLessThan(limit * 0.6);
    expect(limit).toBeGreaterThan(RSS_MB.busy * 1.5);
  });

  it('list every manifest of base/ in its kustomization, and no example', () => {
    const manifests = readdirSync(join(K8S_DIR, 'base')).filter(
      (name) => name.endsWith('.yaml') && name !== 'kustomization.yaml' && !name.includes('example'),
    );
    expect([...kustomization('base').resources].sort()).toEqual(manifests.sort());
  });

  it('deploy the reference MCP server only from its overlay, on a database of its own', () => {
    expect(base.filter((doc) => doc.metadata.name.includes('reference-mcp'))).toEqual([]);
    const overlay = kustomization('reference-mcp');
    expect(overlay.resources).toEqual(['../base', 'reference-mcp.yaml']);
    const sample = k8sDocuments('reference-mcp');
    const mcp = deploymentSpec(sample, 'reference-mcp').template.spec.containers[0];
    const database = mcp.env?.find((e) => e.name === 'DATABASE_URL')?.valueFrom?.secretKeyRef;
    expect(database).toEqual({ name: 'reference-mcp-secrets', key: 'DATABASE_URL' });
    expect(manifest(sample, 'Secret', 'reference-mcp-secrets').stringData).toHaveProperty('DATABASE_URL');
    expect(JSON.stringify(sample)).not.toContain('agent-runtime-secrets');
    // The agents' MCP servers point at its Service, on its port.
    const service = manifest(sample, 'Service', 'reference-mcp').spec as { ports: { port: number }[] };
    const url = `http://reference-mcp:${service.ports[0].port}/mcp`;
    const patch = parseYaml(overlay.patches?.[0].patch ?? '[]') as { path: string; value: string }[];
    expect(overlay.patches?.[0].target).toEqual({ kind: 'ConfigMap', name: 'agent-runtime-env' });
    expect(patch).toEqual([
      { op: 'replace', path: '/data/MCP_SERVER_TELECOM_URL', value: url },
      { op: 'replace', path: '/data/MCP_SERVER_RETAIL_URL', value: url },
    ]);
    for (const { path } of patch) expect(env).toHaveProperty(path.replace('/data/', ''));
    // Only the agent runtime's pods may call it.
    const policy = manifest(sample, 'NetworkPolicy', 'reference-mcp').spec as {
      ingress: { from: { podSelector: { matchLabels: Record<string, string> } }[] }[];
    };
    expect(policy.ingress.flatMap((rule) => rule.from.map((f) => f.podSelector.matchLabels))).toEqual([
      agent.selector.matchLabels,
    ]);
  });

  it('give an Ingress and a NetworkPolicy example that select the runtime and keep /metrics and /health inside', () => {
    const examples = k8sDocuments('examples');
    const service = manifest(base, 'Service', 'agent-runtime').spec as { ports: { name: string }[] };
    const ingress = manifest(examples, 'Ingress', 'agent-runtime').spec as {
      rules: {
        http: { paths: { path: string; backend: { service: { name: string; port: { name: string } } } }[] };
      }[];
    };
    const paths = ingress.rules.flatMap((rule) => rule.http.paths);
    expect(paths.map((p) => p.path).sort()).toEqual(['/console', '/v1/admin', '/v1/channels']);
    for (const { backend } of paths) {
      expect(backend.service).toEqual({ name: 'agent-runtime', port: { name: service.ports[0].name } });
    }
    const policy = manifest(examples, 'NetworkPolicy', 'agent-runtime').spec as {
      podSelector: { matchLabels: Record<string, string> };
      policyTypes: string[];
      ingress: { ports: { port: string | number }[] }[];
      egress: { ports: { port: number }[] }[];
    };
    expect(policy.podSelector.matchLabels).toEqual(agent.selector.matchLabels);
    expect(policy.policyTypes).toEqual(['Ingress', 'Egress']);
    for (const rule of policy.ingress) {
      expect(rule.ports).toEqual([{ port: container.ports[0].name, protocol: 'TCP' }]);
    }
    const egressPorts = policy.egress.flatMap((rule) => rule.ports.map((p) => p.port));
    expect(egressPorts).toEqual(expect.arrayContaining([53, 5432, 3100, 443]));
  });
});

interface ComposeService {
  build?: { dockerfile: string };
  depends_on?: Record<string, { condition: string }>;
  environment?: Record<string, string>;
}

/** Compose's `${NAME:-default}` and `${NAME}` with the shell's `shell` values. */
function interpolate(value: string, shell: Record<string, string>): string {
  return value.replace(/\$\{([A-Z0-9_]+)(?::-([^}]*))?\}/g, (_, name: string, fallback?: string) =>
    shell[name] !== undefined && shell[name] !== '' ? shell[name] : (fallback ?? ''),
  );
}

describe('docker-compose.yml', () => {
  // merge: the services share the image definition through a YAML merge key.
  const compose = parseYaml(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, ComposeService>;
  };
  const app = compose.services.app;
  const environment = app.environment ?? {};
  /** The variables the app takes from the shell or .env. */
  const fromShell = Object.entries(environment)
    .filter(([name, value]) => value.includes(`\${${name}`))
    .map(([name]) => name);

  it('composes Postgres, the app and the reference MCP server', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['app', 'mcp', 'postgres']);
    expect(app.depends_on?.postgres.condition).toBe('service_healthy');
    expect(environment.DATABASE_URL).toMatch(/^postgres:\/\/.*@postgres:5432\//);
    expect(environment.MCP_SERVER_TELECOM_URL).toMatch(/^http:\/\/mcp:3100\//);
    expect(app.build?.dockerfile).toBe('deploy/Dockerfile');
  });

  it('passes the app only variables the service reads, and every model variable from the shell', () => {
    expect(Object.keys(environment).filter((name) => !isServiceVariable(name))).toEqual([]);
    // The profiles file is a path inside the image: the model variables are the rest of the llm namespace.
    const modelVariables = Object.keys(ENV_SCHEMAS.llm.shape).filter((name) => name !== 'LLM_PROFILES_PATH');
    expect(modelVariables.filter((name) => !fromShell.includes(name))).toEqual([]);
  });

  it('documents in operations.md every variable the app takes from the shell', () => {
    const operations = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
    const section = operations.slice(
      operations.indexOf('### Docker Compose'),
      operations.indexOf('### The image'),
    );
    expect(fromShell.filter((name) => !section.includes(`\`${name}\``))).toEqual([]);
  });

  it("starts with the service's defaults when the shell sets nothing: stickiness on, as the README says", () => {
    const resolved = Object.fromEntries(
      Object.entries(environment).map(([name, value]) => [name, interpolate(value, {})]),
    );
    expect(() => validateEnv(resolved)).not.toThrow();
    expect(parseEnvNamespace('continuity', resolved).ENABLE_ROUTE_STICKINESS).toBe(true);
    const openai = Object.fromEntries(
      Object.entries(environment).map(([name, value]) => [
        name,
        interpolate(value, { LLM_PROVIDER: 'openai', LLM_API_KEY: 'sk-test', LLM_MODEL: 'gpt-4.1' }),
      ]),
    );
    expect(parseEnvNamespace('llm', openai)).toMatchObject({
      LLM_PROVIDER: 'openai',
      LLM_API_KEY: 'sk-test',
      LLM_MODEL: 'gpt-4.1',
    });
  });
});

describe('deploy/Dockerfile', () => {
  const dockerfile = readFileSync(join(ROOT, 'deploy', 'Dockerfile'), 'utf8');
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('FROM '));

  it("makes the embedded database's directory the node user's, who runs the service", () => {
    const dataDir = /DATA_DIR=(\S+)/.exec(runtime)?.[1];
    expect(dataDir).toBeDefined();
    const created = runtime.indexOf(`RUN install -d -o node -g node ${dataDir}`);
    expect(created).toBeGreaterThan(-1);
    expect(created).toBeLessThan(runtime.indexOf('USER node'));
  });
});
