import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const COMMITTED = join(ROOT, 'apps', 'console', 'src', 'api', 'openapi.d.ts');

describe('console API types', () => {
  it('are generated from the committed openapi.json', () => {
    // openapi-typescript is ESM-only: run its CLI, which prints the types for a document to stdout.
    const generated = execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js'), join(ROOT, 'openapi.json')],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    if (process.env.UPDATE_OPENAPI === '1') writeFileSync(COMMITTED, generated);
    if (readFileSync(COMMITTED, 'utf8') !== generated) {
      throw new Error(
        'apps/console/src/api/openapi.d.ts is out of date with openapi.json: run `scripts/check-openapi.sh --write` and commit it.',
      );
    }
  }, 30_000);
});
