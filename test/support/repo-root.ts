import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * The repository root above `start`: the first directory with package.json and config/routing.yaml. Works from
 * the TypeScript sources and from dist/ alike (bench, demo and eval run compiled).
 */
export function findRepoRoot(start: string = __dirname): string {
  let dir = resolve(start);
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'config', 'routing.yaml'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) {
      throw new Error(`no repository root (package.json + config/routing.yaml) above ${start}`);
    }
    dir = parent;
  }
}

export const REPO_ROOT = findRepoRoot(__dirname);

/**
 * The compiled JavaScript of an entry point given by its source path (`apps/agent-runtime/src/main.ts` →
 * `dist/apps/agent-runtime/src/main.js`). The jest set-up compiles dist/ when a source is newer than it; a test
 * process starts from it in about a second, where ts-node needed three or four more to transpile the app.
 */
export function compiledEntry(source: string): string {
  return join(REPO_ROOT, 'dist', source.replace(/\.ts$/, '.js'));
}
