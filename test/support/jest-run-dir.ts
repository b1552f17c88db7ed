import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * One temporary folder per jest run. TMPDIR points into it, so every folder a test or a process it starts makes
 * under the system's temporary directory lands there, and the teardown removes it whatever a test left behind.
 */
export function createRunDir(): string {
  const existing = process.env.TEST_RUN_DIR;
  if (existing) return existing;
  const dir = mkdtempSync(join(tmpdir(), 'agent-runtime-jest-'));
  process.env.TEST_RUN_DIR = dir;
  process.env.TMPDIR = dir;
  return dir;
}

export function removeRunDir(): void {
  const dir = process.env.TEST_RUN_DIR;
  if (dir) rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
}

export default createRunDir;
