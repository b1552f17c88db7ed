import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ENV_SCHEMAS } from '@agent/config';

const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8');

function variablesOf(schema: z.ZodTypeAny): string[] {
  if (schema instanceof z.ZodObject) return Object.keys(schema.shape as Record<string, unknown>);
  if (schema instanceof z.ZodEffects) return variablesOf(schema.innerType());
  throw new Error('unexpected env schema shape');
}

describe('README', () => {
  it('documents every environment variable the service reads', () => {
    const variables = Object.values(ENV_SCHEMAS).flatMap((schema) => variablesOf(schema));
    const missing = variables.filter((name) => !readme.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });

  it('shows the set-up, start and test commands', () => {
    expect(readme).toContain('npm ci');
    expect(readme).toContain('npm start');
    expect(readme).toContain('npm test');
  });
});
