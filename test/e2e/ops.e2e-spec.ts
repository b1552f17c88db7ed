import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { REPO_ROOT, startTestApp, TestApp, uniqueId } from '../support/test-app';

const TENANT = `ops${Date.now().toString(36)}`;
const KEYS = { admin: 'admin-key-first', admin2: 'admin-key-second', channel: 'channel-key-ops' };
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

interface ErrorBody {
  error: { code: string; message: string };
  request_id: string;
}

describe('rate limit, body limit, headers', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({
      env: {
        RATE_LIMIT_PER_MINUTE: '3',
        BODY_LIMIT_BYTES: '2048',
        CHANNEL_API_KEYS: `${TENANT}:${KEYS.channel}`,
        ADMIN_API_KEYS: `${KEYS.admin},${KEYS.admin2}`,
      },
    });
  });

  afterAll(async () => {
    await app.close();
  });

  it('limits each key separately, across routes, with 429 and Retry-After', async () => {
    const list = `/v1/admin/sessions?tenant_id=${TENANT}`;
    for (let i = 1; i <= 3; i++) {
      const ok = await app.get(list, bearer(KEYS.admin));
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-ratelimit-limit')).toBe('3');
      expect(ok.headers.get('x-ratelimit-remaining')).toBe(String(3 - i));
    }
    const limited = await app.get<ErrorBody>(list, bearer(KEYS.admin));
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    expect(limited.body.error.message).toBe('rate limit exceeded: 3 requests per minute; retry after 60 s');
    expect(limited.body.request_id).toBeTruthy();
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);

    // Same key, another route: the bucket is the key's, not the route's.
    const other = await app.get(`/v1/admin/sessions/x?tenant_id=${TENANT}`, bearer(KEYS.admin));
    expect(other.status).toBe(429);
    // Another key is unaffected.
    const second = await app.get(list, bearer(KEYS.admin2));
    expect(second.status).toBe(200);
    // Probes and scrapes are never limited.
    for (let i = 0; i < 6; i++) {
      expect((await app.get('/health/live')).status).toBe(200);
      expect((await app.get('/metrics')).status).toBe(200);
    }
  });

  it('limits failed key guesses by client address, whatever X-Forwarded-For claims (no TRUST_PROXY)', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await app.get(`/v1/admin/sessions?tenant_id=${TENANT}`, {
        ...bearer(`guess-${i}`),
        'x-forwarded-for': `203.0.113.${i}`,
      });
      statuses.push(res.status);
    }
    expect(statuses).toEqual([401, 401, 401, 429]);
  });

  it('answers 413 in the error envelope for a body over BODY_LIMIT_BYTES', async () => {
    const res = await app.post<ErrorBody>(
      '/v1/channels/web/messages',
      { tenant_id: TENANT, agent_id: 'telecom_contas', session_id: uniqueId(), text: 'x'.repeat(4096) },
      bearer(KEYS.channel),
    );
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(res.body.request_id).toBe(res.headers.get('x-request-id'));
  });

  it('answers malformed JSON with 400 and unknown routes with 404, both in the envelope', async () => {
    const bad = await app.post<ErrorBody>(
      '/v1/channels/web/messages',
      '{"tenant_id": ',
      bearer(KEYS.channel),
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBeTruthy();
    expect(bad.body.request_id).toBeTruthy();
    const missing = await app.get<ErrorBody>('/v1/nothing-here');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('NOT_FOUND');
  });

  it('sends security headers', async () => {
    for (const path of ['/health/live', `/v1/admin/sessions?tenant_id=${TENANT}`]) {
      const res = await app.get(path);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
      expect(res.headers.get('strict-transport-security')).toMatch(/max-age=\d+/);
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('cross-origin-opener-policy')).toBe('same-origin');
      expect(res.headers.get('x-powered-by')).toBeNull();
      expect(res.headers.get('x-request-id')).toBeTruthy();
    }
  });

  it('serves the OpenAPI document at /docs/json with the bearer scheme', async () => {
    const res = await app.get<{
      paths: Record<string, unknown>;
      components: { securitySchemes: Record<string, unknown> };
    }>('/docs/json');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.paths)).toEqual(
      expect.arrayContaining([
        '/v1/channels/{channel}/messages',
        '/v1/admin/sessions',
        '/v1/admin/sessions/{session_id}',
        '/v1/admin/sessions/{session_id}/events',
        '/v1/admin/sessions/{session_id}/checkpoints',
        '/v1/admin/sessions/{session_id}/end',
        '/v1/admin/sessions/{session_id}/handoff',
        '/v1/admin/sessions/{session_id}/resume',
      ]),
    );
    expect(res.body.components.securitySchemes.bearer).toBeDefined();
    // The running app serves exactly the committed document.
    expect(res.body).toEqual(JSON.parse(readFileSync(join(REPO_ROOT, 'openapi.json'), 'utf8')));
  });

  it('answers the probe paths the Kubernetes manifests use', async () => {
    const container = agentDeployment(k8sDocuments()).template.spec.containers[0];
    for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe'] as const) {
      const res = await app.get(container[probe].httpGet.path);
      expect({ probe, status: res.status }).toEqual({ probe, status: 200 });
    }
  });
});

interface Probe {
  httpGet: { path: string; port: string | number };
}
interface Container {
  image: string;
  ports: { name: string; containerPort: number }[];
  startupProbe: Probe;
  livenessProbe: Probe;
  readinessProbe: Probe;
  lifecycle: { preStop?: unknown };
  resources: { requests: Record<string, string>; limits: Record<string, string> };
  envFrom: unknown[];
  volumeMounts: { name: string; mountPath: string; subPath?: string }[];
}
interface DeploymentSpec {
  selector: { matchLabels: Record<string, string> };
  template: {
    metadata: { labels: Record<string, string> };
    spec: {
      containers: Container[];
      initContainers: Container[];
      securityContext: { runAsNonRoot?: boolean };
      terminationGracePeriodSeconds: number;
      volumes: { name: string; configMap?: { name: string }; emptyDir?: object }[];
    };
  };
}
interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  spec?: unknown;
}

/** Every document of deploy/k8s/*.yaml; a YAML syntax error fails the test that reads them. */
function k8sDocuments(): Manifest[] {
  const dir = join(REPO_ROOT, 'deploy', 'k8s');
  return readdirSync(dir)
    .filter((name) => name.endsWith('.yaml'))
    .flatMap((name) =>
      parseAllDocuments(readFileSync(join(dir, name), 'utf8')).map((doc) => {
        expect({ name, errors: doc.errors.map(String) }).toEqual({ name, errors: [] });
        return doc.toJS() as Manifest | null;
      }),
    )
    .filter((doc): doc is Manifest => doc !== null && doc.kind !== undefined && doc.apiVersion !== undefined);
}

function agentDeployment(docs: Manifest[]): DeploymentSpec {
  const deployment = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'agent-runtime');
  if (!deployment) throw new Error('deploy/k8s has no Deployment agent-runtime');
  return deployment.spec as DeploymentSpec;
}

describe('deployment manifests', () => {
  const docs = k8sDocuments();
  const byKind = (kind: string, name: string): Manifest => {
    const found = docs.find((d) => d.kind === kind && d.metadata.name === name);
    if (!found) throw new Error(`deploy/k8s has no ${kind} ${name}`);
    return found;
  };

  it('wire the Deployment to its probes, port, config, secrets, Service and HPA', () => {
    const deployment = agentDeployment(docs);
    const pod = deployment.template.spec;
    const container = pod.containers[0];
    expect(container.livenessProbe.httpGet.path).toBe('/health/live');
    expect(container.readinessProbe.httpGet.path).toBe('/health/ready');
    expect(container.lifecycle.preStop).toBeDefined();
    expect(container.resources.requests).toMatchObject({
      cpu: expect.any(String),
      memory: expect.any(String),
    });
    expect(container.resources.limits.memory).toBeDefined();
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(deployment.selector.matchLabels).toEqual(deployment.template.metadata.labels);

    const env = byKind('ConfigMap', 'agent-runtime-env').data ?? {};
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

    const secret = byKind('Secret', 'agent-runtime-secrets');
    expect(Object.keys(secret.stringData ?? {})).toEqual(
      expect.arrayContaining(['DATABASE_URL', 'CHANNEL_API_KEYS', 'ADMIN_API_KEYS']),
    );

    const service = byKind('Service', 'agent-runtime').spec as {
      selector: Record<string, string>;
      ports: { targetPort: string }[];
    };
    expect(service.selector).toEqual(deployment.selector.matchLabels);
    expect(service.ports[0].targetPort).toBe(container.ports[0].name);

    const hpa = byKind('HorizontalPodAutoscaler', 'agent-runtime').spec as {
      scaleTargetRef: { kind: string; name: string };
      minReplicas: number;
    };
    expect(hpa.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: 'agent-runtime' });
    expect(hpa.minReplicas).toBeGreaterThanOrEqual(2);
  });

  it('render the config ConfigMap from files of config/ (render-configmap.js --check tells whether it is current)', () => {
    const files = byKind('ConfigMap', 'agent-runtime-config').data ?? {};
    const configFiles = readdirSync(join(REPO_ROOT, 'config'));
    expect(Object.keys(files).length).toBeGreaterThan(0);
    for (const name of Object.keys(files)) expect(configFiles).toContain(name);
  });

  it('list every manifest in the kustomization', () => {
    const kustomization = parseYaml(
      readFileSync(join(REPO_ROOT, 'deploy', 'k8s', 'kustomization.yaml'), 'utf8'),
    ) as { resources: string[] };
    const manifests = readdirSync(join(REPO_ROOT, 'deploy', 'k8s')).filter(
      (n) => n.endsWith('.yaml') && n !== 'kustomization.yaml' && !n.includes('example'),
    );
    expect([...kustomization.resources].sort()).toEqual(manifests.sort());
  });

  it('compose Postgres, the app and the reference MCP server', () => {
    // merge: the services share the image definition through a YAML merge key.
    const compose = parseYaml(readFileSync(join(REPO_ROOT, 'docker-compose.yml'), 'utf8'), {
      merge: true,
    }) as {
      services: Record<
        string,
        {
          build?: { dockerfile: string };
          depends_on?: Record<string, { condition: string }>;
          environment?: Record<string, string>;
        }
      >;
    };
    expect(Object.keys(compose.services).sort()).toEqual(['app', 'mcp', 'postgres']);
    const app = compose.services.app;
    expect(app.depends_on?.postgres.condition).toBe('service_healthy');
    expect(app.environment?.DATABASE_URL).toMatch(/^postgres:\/\/.*@postgres:5432\//);
    expect(app.environment?.MCP_SERVER_TELECOM_URL).toMatch(/^http:\/\/mcp:3100\//);
    expect(app.build?.dockerfile).toBe('deploy/Dockerfile');
  });
});
