import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import prepareEmbeddedTemplate from '../support/jest-embedded-template';

/** The tests drive the console the app serves from dist/console, so they build it first (about a second). */
export default async function buildConsole(): Promise<void> {
  await prepareEmbeddedTemplate();
  const root = join(__dirname, '..', '..');
  execFileSync(
    process.execPath,
    [
      join(root, 'node_modules', 'vite', 'bin', 'vite.js'),
      'build',
      '-c',
      'apps/console/vite.config.mts',
      '--logLevel',
      'warn',
    ],
    { cwd: root, stdio: 'inherit' },
  );
}
