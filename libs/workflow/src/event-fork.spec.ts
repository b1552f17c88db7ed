import { TurnContextStore } from '@agent/observability';
import { turnContextOf } from '@agent/testing/states';
import { isolated } from './event-fork';

const emit = (name: string, payload: Record<string, unknown> = {}) =>
  TurnContextStore.current()?.events.push({ name, payload, at: new Date().toISOString() });

describe('isolated', () => {
  it('keeps the work out of the turn until it is adopted, then records into the turn', async () => {
    const context = turnContextOf();
    await TurnContextStore.run(context, async () => {
      let later: () => void = () => undefined;
      const run = await isolated(() => {
        emit('router.decision');
        later = () => emit('llm.call', { profile: 'router' });
        return Promise.resolve('decided');
      }, 'speculative');
      expect(run.result).toBe('decided');
      expect(context.events).toEqual([]);
      run.adopt();
      later();
      expect(context.events.map((e) => e.name)).toEqual(['router.decision', 'llm.call']);
    });
  });

  it('keeps only the cost of a discarded run, marked with its purpose', async () => {
    const context = turnContextOf();
    await TurnContextStore.run(context, async () => {
      const run = await isolated(() => {
        emit('router.decision');
        emit('llm.call', { profile: 'router', prompt_tokens: 120 });
        return Promise.resolve();
      }, 'speculative');
      run.keepCostOnly();
      expect(context.events).toEqual([
        expect.objectContaining({
          name: 'llm.call',
          payload: { profile: 'router', prompt_tokens: 120, speculative: 'discarded' },
        }),
      ]);
    });
  });

  it('runs the work as is outside a turn', async () => {
    const run = await isolated(() => Promise.resolve(7), 'shadow');
    expect(run.result).toBe(7);
    expect(() => {
      run.adopt();
      run.keepCostOnly();
    }).not.toThrow();
  });
});
