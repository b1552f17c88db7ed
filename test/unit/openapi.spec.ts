import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateOpenApiDocument } from '../../apps/agent-runtime/src/openapi';

const ROOT = join(__dirname, '..', '..');
const COMMITTED = join(ROOT, 'openapi.json');

/**
 * Stable text, formatted as `prettier --check .` (CI's lint) expects it. Prettier runs in a child process:
 * its CommonJS entry loads ESM, which jest's sandbox cannot.
 */
function serialize(document: unknown): string {
  return execFileSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'prettier', 'bin', 'prettier.cjs'), '--stdin-filepath', COMMITTED],
    { input: JSON.stringify(document, null, 2), encoding: 'utf8' },
  );
}

describe('openapi.json', () => {
  it('matches the document generated from the controllers and DTOs', async () => {
    const generated = serialize(await generateOpenApiDocument());
    if (process.env.UPDATE_OPENAPI === '1') writeFileSync(COMMITTED, generated);
    const committed = readFileSync(COMMITTED, 'utf8');
    if (committed !== generated) {
      throw new Error(
        'openapi.json is out of date with the API: run `scripts/check-openapi.sh --write` and commit it.',
      );
    }
  }, 60_000);

  it('documents every endpoint of docs/api.md with its responses and the bearer scheme', () => {
    const document = JSON.parse(readFileSync(COMMITTED, 'utf8')) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown>; security?: unknown[] }>>;
      components: { securitySchemes: Record<string, unknown>; schemas: Record<string, unknown> };
    };
    const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(operations).toEqual(
      expect.arrayContaining([
        'POST /v1/channels/{channel}/messages',
        'GET /v1/admin/sessions',
        'GET /v1/admin/sessions/{session_id}',
        'GET /v1/admin/sessions/{session_id}/events',
        'GET /v1/admin/sessions/{session_id}/checkpoints',
        'POST /v1/admin/sessions/{session_id}/end',
        'POST /v1/admin/sessions/{session_id}/handoff',
        'POST /v1/admin/sessions/{session_id}/resume',
        'DELETE /v1/admin/sessions/{session_id}',
        'GET /health/live',
        'GET /health/ready',
      ]),
    );
    expect(document.components.securitySchemes.bearer).toBeDefined();
    const turn = document.paths['/v1/channels/{channel}/messages'].post;
    expect(Object.keys(turn.responses)).toEqual(
      expect.arrayContaining(['200', '400', '401', '403', '413', '429']),
    );
    expect(turn.security).toEqual([{ bearer: [] }]);
    for (const schema of ['TurnResponseDto', 'ErrorEnvelopeDto', 'SessionDetailDto', 'TurnDecisionDto']) {
      expect(document.components.schemas[schema]).toBeDefined();
    }
  });
});
