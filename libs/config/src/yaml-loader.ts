import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse, YAMLParseError } from 'yaml';
import { z } from 'zod';
import { ConfigFileError } from './config.errors';

export function formatIssuePath(path: (string | number)[]): string {
  if (path.length === 0) return '(root)';
  return path.reduce<string>(
    (acc, part) => (typeof part === 'number' ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part),
    '',
  );
}

export function loadYamlFile<S extends z.ZodTypeAny>(filePath: string, schema: S): z.output<S> {
  const absolute = resolve(filePath);
  if (!existsSync(absolute)) {
    throw new ConfigFileError(absolute, [`file not found: ${absolute}`]);
  }
  let document: unknown;
  try {
    document = parse(readFileSync(absolute, 'utf8'));
  } catch (error) {
    const detail = error instanceof YAMLParseError ? error.message : String(error);
    throw new ConfigFileError(absolute, [`not valid YAML: ${detail}`]);
  }
  const result = schema.safeParse(document ?? {});
  if (!result.success) {
    throw new ConfigFileError(
      absolute,
      result.error.issues.map((issue) => `${formatIssuePath(issue.path)}: ${issue.message}`),
    );
  }
  return result.data as z.output<S>;
}
