import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

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
});
