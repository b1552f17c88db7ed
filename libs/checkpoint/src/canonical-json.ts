import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every level, so equal states hash equally. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(record).sort()) {
      if (record[key] !== undefined) sorted[key] = sortKeys(record[key]);
    }
    return sorted;
  }
  return value;
}

/** SHA-256 over the canonical state plus its parent version (DESIGN §8). */
export function checkpointChecksum(state: unknown, parentVersion: number | null): string {
  return createHash('sha256')
    .update(canonicalJson({ parent_version: parentVersion, state }))
    .digest('hex');
}
