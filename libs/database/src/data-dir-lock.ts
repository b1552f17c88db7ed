import { closeSync, openSync, readFileSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { DataDirectoryLockedError } from './database.errors';

/** The lock file every process using an embedded data directory holds; its content says who. */
export const LOCK_FILE = 'agent-runtime.lock';

interface LockOwner {
  pid: number;
  /** The database server child of that process: it may outlive its parent by a moment. */
  server_pid?: number;
  host: string;
  since: string;
}

function errnoCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else; only ESRCH means no such process.
    return errnoCode(error) === 'EPERM';
  }
}

function readOwner(path: string): LockOwner | null {
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (typeof parsed === 'object' && parsed !== null && 'pid' in parsed && typeof parsed.pid === 'number') {
      return {
        pid: parsed.pid,
        server_pid:
          'server_pid' in parsed && typeof parsed.server_pid === 'number' ? parsed.server_pid : undefined,
        host: 'host' in parsed && typeof parsed.host === 'string' ? parsed.host : '',
        since: 'since' in parsed && typeof parsed.since === 'string' ? parsed.since : '',
      };
    }
  } catch {
    // unreadable or half-written: treated as no owner
  }
  return null;
}

/**
 * An exclusive lock on an embedded data directory, held for the life of this process: a second `npm start` or
 * `rag:ingest` on the same directory fails before it touches anything, naming the directory and the holder's pid.
 * A lock left by a process that is gone (killed with -9, crashed) is taken over. Liveness is checked by pid on
 * this machine: the embedded database is a single-machine default, never shared between hosts.
 */
export class DataDirectoryLock {
  private released = false;
  private readonly onExit = () => this.release();

  private constructor(
    readonly path: string,
    private readonly owner: LockOwner,
  ) {
    // A process that exits without stopping the database still frees the directory.
    process.once('exit', this.onExit);
  }

  static acquire(dataDir: string): DataDirectoryLock {
    const path = join(dataDir, LOCK_FILE);
    const owner: LockOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const fd = openSync(path, 'wx');
        try {
          writeSync(fd, JSON.stringify(owner));
        } finally {
          closeSync(fd);
        }
        return new DataDirectoryLock(path, owner);
      } catch (error) {
        if (errnoCode(error) !== 'EEXIST') throw error;
      }
      const holder = readOwner(path);
      const living = [holder?.pid, holder?.server_pid].find((pid) => pid !== undefined && isAlive(pid));
      if (holder && holder.pid !== process.pid && living !== undefined) {
        throw new DataDirectoryLockedError(dataDir, holder.pid);
      }
      // Stale (its process is gone) or unreadable: take it over. Losing a race here means another process
      // created a fresh lock in between; the next attempt sees that one and reports it.
      try {
        unlinkSync(path);
      } catch (error) {
        if (errnoCode(error) !== 'ENOENT') throw error;
      }
    }
    const holder = readOwner(path);
    throw new DataDirectoryLockedError(dataDir, holder?.pid ?? -1);
  }

  /** Records the database server process, so the lock is held until it is gone too. */
  recordServer(pid: number): void {
    writeFileSync(this.path, JSON.stringify({ ...this.owner, server_pid: pid }));
  }

  /** Frees the directory (only if this process still holds it). */
  release(): void {
    if (this.released) return;
    this.released = true;
    process.removeListener('exit', this.onExit);
    if (readOwner(this.path)?.pid !== process.pid) return;
    try {
      unlinkSync(this.path);
    } catch {
      // already gone
    }
  }
}
