import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The directory of the server's programs: CHAOS_PG_BIN, else the newest /usr/lib/postgresql/<version>/bin (the
 * Debian and Ubuntu layout), else whatever `pg_ctl` the PATH finds.
 */
function binDirectory(): string | null {
  if (process.env.CHAOS_PG_BIN) return process.env.CHAOS_PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((name) => existsSync(join(root, name, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length > 0 ? join(root, versions[0], 'bin') : null;
}

/**
 * A Postgres cluster of the drill's own, in a temporary directory on its own port, so restarting it touches no
 * other database. initdb and pg_ctl refuse to run as root: as root they run as the `postgres` user (runuser),
 * which then owns the directory; any other user runs them as itself.
 */
export class PrivatePostgres {
  private constructor(
    private readonly dir: string,
    readonly port: number,
    private readonly bin: string | null,
  ) {}

  static async start(port: number): Promise<PrivatePostgres> {
    const dir = mkdtempSync(join(tmpdir(), 'chaos-postgres-'));
    const cluster = new PrivatePostgres(dir, port, binDirectory());
    if (process.getuid?.() === 0) {
      const { stdout } = await run('id', ['-u', 'postgres']);
      const { stdout: group } = await run('id', ['-g', 'postgres']);
      chownSync(dir, Number(stdout.trim()), Number(group.trim()));
    }
    await cluster.pg('initdb', ['-D', cluster.data, '-U', 'postgres', '-A', 'trust', '--no-sync']);
    const options = [
      `-p ${port}`,
      '-c listen_addresses=127.0.0.1',
      `-c unix_socket_directories=${dir}`,
      '-c max_connections=200',
      '-c shared_buffers=64MB',
    ].join(' ');
    await cluster.pg('pg_ctl', [
      '-D',
      cluster.data,
      '-l',
      cluster.logFile,
      '-o',
      options,
      '-w',
      '-t',
      '60',
      'start',
    ]);
    return cluster;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  get logFile(): string {
    return join(this.dir, 'postgres.log');
  }

  /**
   * `pg_ctl restart -m <mode>`: `fast` ends every session (57P01) and checkpoints; `immediate` kills the server
   * without one, so the start that follows is a crash recovery. Resolves once the server accepts connections.
   */
  async restart(mode: 'fast' | 'immediate'): Promise<void> {
    await this.pg('pg_ctl', ['-D', this.data, '-l', this.logFile, '-m', mode, '-w', '-t', '120', 'restart']);
  }

  async stop(): Promise<void> {
    await this.pg('pg_ctl', ['-D', this.data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }

  private get data(): string {
    return join(this.dir, 'data');
  }

  private async pg(program: string, args: string[]): Promise<void> {
    const path = this.bin ? join(this.bin, program) : program;
    const [command, commandArgs] =
      process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, args];
    await run(command, commandArgs, { cwd: this.dir });
  }
}
