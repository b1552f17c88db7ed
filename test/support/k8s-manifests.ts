import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from './repo-root';

export const K8S_DIR = join(REPO_ROOT, 'deploy', 'k8s');

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  spec?: unknown;
}

export interface Probe {
  httpGet: { path: string; port: string | number };
}

export interface Container {
  image: string;
  command?: string[];
  ports: { name: string; containerPort: number }[];
  startupProbe: Probe;
  livenessProbe: Probe;
  readinessProbe: Probe;
  lifecycle: { preStop?: unknown };
  resources: { requests: Record<string, string>; limits: Record<string, string> };
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  envFrom: unknown[];
  volumeMounts: { name: string; mountPath: string; subPath?: string }[];
}

export interface DeploymentSpec {
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

/** Every object of the YAML files in deploy/k8s/<dir>; a YAML syntax error throws, naming the file. */
export function k8sDocuments(dir: string): Manifest[] {
  const folder = join(K8S_DIR, dir);
  return readdirSync(folder)
    .filter((name) => name.endsWith('.yaml') && name !== 'kustomization.yaml')
    .flatMap((name) =>
      parseAllDocuments(readFileSync(join(folder, name), 'utf8')).map((doc) => {
        if (doc.errors.length > 0) throw new Error(`${dir}/${name}: ${doc.errors.map(String).join('; ')}`);
        return doc.toJS() as Manifest | null;
      }),
    )
    .filter((doc): doc is Manifest => doc !== null && doc.kind !== undefined && doc.apiVersion !== undefined);
}

/** The one object of `kind` named `name` among `docs`. */
export function manifest(docs: Manifest[], kind: string, name: string): Manifest {
  const found = docs.find((d) => d.kind === kind && d.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found;
}

export function deploymentSpec(docs: Manifest[], name: string): DeploymentSpec {
  return manifest(docs, 'Deployment', name).spec as DeploymentSpec;
}
