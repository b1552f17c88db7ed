import { AppProcess, spawnAppProcess, waitUntilReady } from '../test/support/app-process';

/** How a replica process ended: killed by the drill, or on its own (a crash). */
export interface ReplicaExit {
  replica: number;
  at: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  killedByDrill: boolean;
  /** The end of what it wrote, for a crash's report. */
  outputTail: string;
}

/**
 * The replicas of the compiled service the drill runs (`main.js`, each its own OS process on its own port). The
 * drill kills one with SIGKILL and starts it again; a replica that exits any other way is a crash, recorded and
 * started again so the drill goes on.
 */
export class Replicas {
  readonly exits: ReplicaExit[] = [];
  private readonly processes: (AppProcess | null)[];
  private readonly killed = new WeakSet<AppProcess>();
  /** Processes that became ready (a crash of one is restarted by `exited`, of another by `start`). */
  private readonly serving = new WeakSet<AppProcess>();
  private readonly outputs: string[][];
  private stopping = false;

  constructor(
    readonly ports: number[],
    private readonly envOf: (replica: number) => Record<string, string>,
  ) {
    this.processes = ports.map(() => null);
    this.outputs = ports.map(() => []);
  }

  async startAll(): Promise<void> {
    // One after the other: the first applies the migrations, the others find them applied.
    for (const replica of this.ports.keys()) await this.start(replica);
  }

  /** SIGKILL, then the replica starts again; resolves once it is ready, with the milliseconds that took. */
  async kill(replica: number): Promise<number> {
    const app = this.processes[replica];
    const killedAt = Date.now();
    if (app && app.child.exitCode === null && app.child.signalCode === null) {
      this.killed.add(app);
      app.child.kill('SIGKILL');
      await app.exited;
    }
    await this.start(replica);
    return Date.now() - killedAt;
  }

  /** Everything every process of the replica wrote, in order. */
  output(replica: number): string {
    const current = this.processes[replica];
    return [...this.outputs[replica], current ? current.output() : ''].join('\n');
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.processes.map(async (app) => {
        if (!app || app.child.exitCode !== null || app.child.signalCode !== null) return;
        app.child.kill('SIGTERM');
        await app.exited;
      }),
    );
  }

  /**
   * Starts the replica and waits until it is ready. A process that exits before (a crash while starting, recorded
   * as such) is started again, up to a few times.
   */
  private async start(replica: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const app = spawnAppProcess('apps/agent-runtime/src/main.ts', [], this.envOf(replica));
      this.processes[replica] = app;
      void app.exited.then(() => this.exited(replica, app));
      try {
        // A replica started while Redis is black-holed is not ready until it answers again.
        await waitUntilReady(app, this.ports[replica], 300000);
        this.serving.add(app);
        return;
      } catch (error) {
        await app.exited;
        if (attempt >= 5 || this.stopping) throw error;
      }
    }
  }

  private exited(replica: number, app: AppProcess): void {
    const killedByDrill = this.killed.has(app);
    const output = app.output();
    this.outputs[replica].push(output);
    if (this.processes[replica] === app) this.processes[replica] = null;
    // The drill's own SIGTERM at the end.
    if (this.stopping) return;
    this.exits.push({
      replica,
      at: Date.now(),
      code: app.child.exitCode,
      signal: app.child.signalCode,
      killedByDrill,
      outputTail: output.split('\n').slice(-30).join('\n'),
    });
    // A crash of a serving replica: started again at once, so the drill measures the rest as well (one that
    // crashed while starting is started again by `start`).
    if (killedByDrill || !this.serving.has(app)) return;
    this.start(replica).catch((error: unknown) => {
      this.exits.push({
        replica,
        at: Date.now(),
        code: null,
        signal: null,
        killedByDrill: false,
        outputTail: `could not start again: ${String(error)}`,
      });
    });
  }
}
