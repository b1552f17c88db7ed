import { TurnContext, TurnContextStore } from '@agent/observability';

/** Work run in its own event buffer (see `isolated`). */
export interface Isolated<T> {
  result: T;
  /** Moves the work's events into the turn; whatever it left running records into the turn from then on. */
  adopt(): void;
  /** Keeps only the work's llm.call records (its cost), each marked `[purpose]: mark`. */
  keepCostOnly(mark?: string): void;
}

/**
 * Runs `work` with its own event buffer, so a speculative, shadow or discarded run never reads as the turn's
 * until the turn takes it. Outside a turn the work runs as is and both outcomes do nothing.
 */
export async function isolated<T>(work: () => Promise<T>, purpose: string): Promise<Isolated<T>> {
  const parent = TurnContextStore.current();
  const child: TurnContext | undefined = parent ? { ...parent, events: [], nodes: [] } : undefined;
  const result = child ? await TurnContextStore.run(child, work) : await work();
  return {
    result,
    adopt: () => {
      if (!parent || !child) return;
      parent.events.push(...child.events);
      child.events = parent.events;
    },
    keepCostOnly: (mark = 'discarded') =>
      parent?.events.push(
        ...(child?.events ?? [])
          .filter((e) => e.name === 'llm.call')
          .map((e) => ({ ...e, payload: { ...e.payload, [purpose]: mark } })),
      ),
  };
}
