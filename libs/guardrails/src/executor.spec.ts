import { setTimeout as sleep } from 'node:timers/promises';
import { turnStateOf } from '@agent/testing/states';
import { waitUntil } from '@agent/testing/wait-for';
import { ConfiguredRail, ExecutorObserver, ParallelRailExecutor, StageOutcome } from './executor';
import { RailAction, RailContext, RailEvaluation, RailResult } from './rail.types';

/** A rail that really waits (honouring its signal, or not) and then answers or throws. */
function rail(
  code: string,
  behaviour: {
    delayMs?: number;
    action?: RailAction;
    throws?: string;
    sanitize?: (text: string) => string;
    ignoresSignal?: boolean;
  },
  log: string[] = [],
): ConfiguredRail & { seen: () => AbortSignal | null } {
  let seen: AbortSignal | null = null;
  return {
    failClosed: true,
    timeoutMs: 1000,
    seen: () => seen,
    rail: {
      code,
      evaluate: async ({ signal }: RailContext): Promise<RailEvaluation> => {
        seen = signal;
        log.push(`${code}:start`);
        if (behaviour.delayMs) {
          await (behaviour.ignoresSignal
            ? sleep(behaviour.delayMs, undefined, { ref: false })
            : sleep(behaviour.delayMs, undefined, { signal }));
        }
        log.push(`${code}:end`);
        if (behaviour.throws) throw new Error(behaviour.throws);
        return {
          action: behaviour.action ?? RailAction.ALLOW,
          reason: `${code} says ${behaviour.action ?? 'allow'}`,
          ...(behaviour.sanitize ? { sanitize: behaviour.sanitize } : {}),
        };
      },
    },
  };
}

class RecordingObserver implements ExecutorObserver {
  readonly results: RailResult[] = [];
  readonly failures: { code: string; message: string; failClosed: boolean }[] = [];
  readonly outcomes: StageOutcome[] = [];
  result(_stage: string, result: RailResult): void {
    this.results.push(result);
  }
  railFailed(_stage: string, code: string, error: Error, failClosed: boolean): void {
    this.failures.push({ code, message: error.message, failClosed });
  }
  completed(outcome: StageOutcome): void {
    this.outcomes.push(outcome);
  }
}

const run = (executor: ParallelRailExecutor, rails: ConfiguredRail[], text = 'a', signal?: AbortSignal) =>
  executor.run(rails, { stage: 'input', text, state: turnStateOf({ user_text: text }), signal });

describe('ParallelRailExecutor', () => {
  it('starts every rail together: total time is the slowest rail, not the sum', async () => {
    const log: string[] = [];
    const executor = new ParallelRailExecutor({ parallel: true, failFast: true }, new RecordingObserver());
    const started = performance.now();
    const outcome = await run(executor, [
      rail('A', { delayMs: 150 }, log),
      rail('B', { delayMs: 150 }, log),
      rail('C', { delayMs: 150 }, log),
    ]);
    const took = performance.now() - started;
    expect(took).toBeLessThan(400);
    expect(log.slice(0, 3)).toEqual(['A:start', 'B:start', 'C:start']);
    expect(outcome.results.map((r) => r.code)).toEqual(['A', 'B', 'C']);
  });

  it('fail_fast: the first terminal result cancels the slower rails and returns without waiting for them', async () => {
    const observer = new RecordingObserver();
    const executor = new ParallelRailExecutor({ parallel: true, failFast: true }, observer);
    const slow = rail('SLOW', { delayMs: 2000 });
    const started = performance.now();
    const outcome = await run(executor, [
      slow,
      rail('BLOCKER', { delayMs: 30, action: RailAction.BLOCK }),
      rail('FAST', {}),
    ]);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(outcome.terminal?.code).toBe('BLOCKER');
    expect(outcome.failFastTriggered).toBe(true);
    expect(outcome.cancelledCodes).toEqual(['SLOW']);
    expect(outcome.results.map((r) => r.code)).toEqual(['BLOCKER', 'FAST']);
    expect(slow.seen()?.aborted).toBe(true);
    expect(observer.failures).toEqual([]);
  });

  it('without fail_fast every rail finishes even after a block', async () => {
    const executor = new ParallelRailExecutor({ parallel: true, failFast: false }, new RecordingObserver());
    const outcome = await run(executor, [
      rail('SLOW', { delayMs: 120, action: RailAction.RETRY }),
      rail('BLOCKER', { delayMs: 10, action: RailAction.BLOCK }),
    ]);
    expect(outcome.cancelledCodes).toEqual([]);
    expect(outcome.terminal).toBeNull();
    expect(outcome.results.map((r) => [r.code, r.action])).toEqual([
      ['SLOW', 'retry'],
      ['BLOCKER', 'block'],
    ]);
  });

  it('fail_closed: a rail that throws becomes BLOCK; fail-open it becomes OBSERVE, both logged', async () => {
    const observer = new RecordingObserver();
    const executor = new ParallelRailExecutor({ parallel: true, failFast: false }, observer);
    const closed = rail('CLOSED', { delayMs: 20, throws: 'model down' });
    const open = { ...rail('OPEN', { throws: 'verdict invalid' }), failClosed: false };
    const outcome = await run(executor, [closed, open]);
    const [closedResult, openResult] = outcome.results;
    expect(closedResult).toMatchObject({ code: 'CLOSED', action: 'block', error: 'model down' });
    expect(closedResult.metadata).toMatchObject({ fail_closed: true, error_kind: 'error' });
    expect(openResult).toMatchObject({ code: 'OPEN', action: 'observe', error: 'verdict invalid' });
    expect(observer.failures.map((f) => [f.code, f.failClosed])).toEqual(
      expect.arrayContaining([
        ['CLOSED', true],
        ['OPEN', false],
      ]),
    );
  });

  it('a synchronous throw is handled like a rejection', async () => {
    const executor = new ParallelRailExecutor({ parallel: true, failFast: true }, new RecordingObserver());
    const throwing: ConfiguredRail = {
      failClosed: true,
      timeoutMs: 100,
      rail: {
        code: 'SYNC',
        evaluate: () => {
          throw new Error('sync bug');
        },
      },
    };
    const outcome = await run(executor, [throwing, rail('OK', {})]);
    expect(outcome.results.find((r) => r.code === 'SYNC')).toMatchObject({
      action: 'block',
      error: 'sync bug',
    });
  });

  it('timeout: a rail over its budget is aborted and treated by fail_closed (BLOCK) or fail-open (OBSERVE)', async () => {
    const observer = new RecordingObserver();
    const executor = new ParallelRailExecutor({ parallel: true, failFast: false }, observer);
    const closed = { ...rail('SLOW_CLOSED', { delayMs: 5000 }), timeoutMs: 80 };
    const open = {
      ...rail('SLOW_OPEN', { delayMs: 5000, ignoresSignal: true }),
      timeoutMs: 80,
      failClosed: false,
    };
    const started = performance.now();
    const outcome = await run(executor, [closed, open]);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(outcome.results[0]).toMatchObject({ code: 'SLOW_CLOSED', action: 'block' });
    expect(outcome.results[0].metadata).toMatchObject({ error_kind: 'timeout' });
    expect(outcome.results[0].error).toMatch(/timed out after 80 ms/);
    expect(outcome.results[1]).toMatchObject({ code: 'SLOW_OPEN', action: 'observe' });
    expect(closed.seen()?.aborted).toBe(true);
  });

  it('applies sanitizations in configured order, not completion order', async () => {
    const executor = new ParallelRailExecutor({ parallel: true, failFast: true }, new RecordingObserver());
    const first = rail('FIRST', {
      delayMs: 80,
      action: RailAction.SANITIZE,
      sanitize: (t) => t.replace('a', 'b'),
    });
    const second = rail('SECOND', {
      delayMs: 0,
      action: RailAction.SANITIZE,
      sanitize: (t) => t.replace('b', 'c'),
    });
    const outcome = await run(executor, [first, second], 'a');
    expect(outcome.completionOrder).toEqual(['SECOND', 'FIRST']);
    // FIRST then SECOND: a → b → c. Completion order would have given b.
    expect(outcome.text).toBe('c');
    const reversed = await run(executor, [second, first], 'a');
    expect(reversed.text).toBe('b');
  });

  it('sequential mode chains sanitizations and stops at the first terminal action', async () => {
    const log: string[] = [];
    const executor = new ParallelRailExecutor({ parallel: false, failFast: true }, new RecordingObserver());
    const outcome = await run(
      executor,
      [
        rail('MASK', { action: RailAction.SANITIZE, sanitize: (t) => t.toUpperCase() }, log),
        rail('STOP', { action: RailAction.BLOCK }, log),
        rail('NEVER', {}, log),
      ],
      'abc',
    );
    expect(log).toEqual(['MASK:start', 'MASK:end', 'STOP:start', 'STOP:end']);
    expect(outcome.text).toBe('ABC');
    expect(outcome.cancelledCodes).toEqual(['NEVER']);
  });

  it('reports every result as it arrives and a final outcome', async () => {
    const observer = new RecordingObserver();
    const executor = new ParallelRailExecutor({ parallel: true, failFast: true }, observer);
    await run(executor, [rail('LATE', { delayMs: 60 }), rail('EARLY', { delayMs: 5 })]);
    expect(observer.results.map((r) => r.code)).toEqual(['EARLY', 'LATE']);
    expect(observer.outcomes).toHaveLength(1);
    expect(observer.outcomes[0].durationMs).toBeGreaterThan(0);
  });

  it("the caller's signal abandons the stage: every rail is aborted and run rejects", async () => {
    const executor = new ParallelRailExecutor({ parallel: true, failFast: true }, new RecordingObserver());
    const slow = rail('SLOW', { delayMs: 5000 });
    const slower = rail('SLOW2', { delayMs: 5000 });
    const controller = new AbortController();
    const rejected = expect(run(executor, [slow, slower], 'a', controller.signal)).rejects.toThrow(
      'not needed any more',
    );
    // Abandoned while both rails run.
    await waitUntil('both rails to start', () => slow.seen() !== null && slower.seen() !== null);
    controller.abort(new Error('not needed any more'));
    await rejected;
    expect(slow.seen()?.aborted).toBe(true);
    expect(slower.seen()?.aborted).toBe(true);
  });
});
