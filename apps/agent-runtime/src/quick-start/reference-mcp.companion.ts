import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { ChildProcess, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';
import { appConfig, databaseConfig } from '@agent/config';
import { McpService } from '@agent/mcp';

/** Where the shipped mcp_servers.yaml expects the reference MCP server (`npm run start:mcp`'s default). */
export const REFERENCE_MCP_PORT = 3100;
const REFERENCE_MCP_PATH = '/mcp';
const LOOPBACK = new Set(['127.0.0.1', 'localhost']);
/** Its embedded Postgres takes seconds to start, much longer on a loaded machine. */
const READY_TIMEOUT_MS = 120_000;

/** The shipped configuration's address of the reference server: a loopback URL on its default port and path. */
export function isReferenceMcpAddress(target: string): boolean {
  try {
    const url = new URL(target);
    return (
      url.protocol === 'http:' &&
      LOOPBACK.has(url.hostname) &&
      url.port === String(REFERENCE_MCP_PORT) &&
      url.pathname === REFERENCE_MCP_PATH
    );
  } catch {
    return false;
  }
}

function listening(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });
}

/**
 * The quick start's MCP server: in development, when the MCP configuration names the reference server's default
 * address and nothing listens there, the reference server (sample telecom and retail data) starts beside the
 * service, its embedded data in DATA_DIR/reference-mcp, and stops with it (by itself too if the service dies).
 * Production and tests never start it (docs/adr/0012).
 */
@Injectable()
export class ReferenceMcpCompanion implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('ReferenceMcpServer');
  private child: ChildProcess | null = null;
  private ready: Promise<void> | null = null;

  constructor(
    private readonly mcp: McpService,
    @Inject(appConfig.KEY) private readonly app: ConfigType<typeof appConfig>,
    @Inject(databaseConfig.KEY) private readonly database: ConfigType<typeof databaseConfig>,
  ) {}

  /** Started early, so its database boots while the service's own does. */
  async onModuleInit(): Promise<void> {
    if (this.app.NODE_ENV !== 'development' || !this.mcp.enabled) return;
    const named = this.mcp
      .describe()
      .servers.some((server) => server.enabled && isReferenceMcpAddress(server.target));
    if (!named || (await listening(REFERENCE_MCP_PORT))) return;
    const entry = resolve(__dirname, '..', '..', '..', 'reference-mcp-server', 'src', 'main.js');
    if (!existsSync(entry)) {
      this.logger.warn(`not started: ${entry} is not built (npm run build)`);
      return;
    }
    const dataDir = join(this.database.DATA_DIR, 'reference-mcp');
    const child = fork(entry, [], {
      env: {
        PATH: process.env.PATH,
        MCP_HOST: '127.0.0.1',
        MCP_PORT: String(REFERENCE_MCP_PORT),
        MCP_PATH: REFERENCE_MCP_PATH,
        REFERENCE_MCP_DATA_DIR: dataDir,
      },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    this.child = child;
    child.stderr?.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() !== '') this.logger.log(line.replace(/^\[reference-mcp-server\] /, '').trim());
      }
    });
    this.ready = new Promise<void>((done) => {
      const timer = setTimeout(() => {
        this.logger.warn(`not ready within ${READY_TIMEOUT_MS} ms: tool calls fail until it is`);
        done();
      }, READY_TIMEOUT_MS);
      child.once('message', () => {
        clearTimeout(timer);
        this.logger.log(
          `started beside the service for the quick start: sample telecom and retail data in ${dataDir}, ` +
            `on http://127.0.0.1:${REFERENCE_MCP_PORT}${REFERENCE_MCP_PATH}; it stops with the service`,
        );
        done();
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        if (this.child === child) this.logger.error(`exited with ${String(code)}: tool calls will fail`);
        this.child = null;
        done();
      });
    });
  }

  /** The service listens once its tools can answer: the first message of the quick start uses one. */
  async onApplicationBootstrap(): Promise<void> {
    await this.ready;
  }

  async onApplicationShutdown(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = null;
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    child.kill('SIGTERM');
    await exited;
  }
}
