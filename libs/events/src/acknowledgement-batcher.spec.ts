import { AcknowledgementBatcher } from './acknowledgement-batcher';
import type { Acknowledgement } from './event-relay.store';

const delivered = (conversation_key: string, release: boolean, version = 1): Acknowledgement => ({
  conversation_key,
  next_position: version * 65536 + 1,
  release,
});

/**
 * A writer that records each group and answers from `held` (or fails the groups listed in `failing`). Its
 * statement is running until its promise settles, so acknowledgements sent in the same tick arrive meanwhile.
 */
function recordingWriter(held: Set<string>, failing = new Set<number>()) {
  const groups: string[][] = [];
  const write = (group: Acknowledgement[]): Promise<ReadonlySet<string>> => {
    groups.push(group.map((a) => `${a.conversation_key}${a.release ? '!' : ''}`));
    if (failing.has(groups.length)) return Promise.reject(new Error(`write ${groups.length} failed`));
    return Promise.resolve(new Set(group.map((a) => a.conversation_key).filter((key) => held.has(key))));
  };
  return { groups, write };
}

describe('AcknowledgementBatcher', () => {
  it('writes the first at once and those arriving meanwhile together, and tells each whether it held', async () => {
    const writer = recordingWriter(new Set(['a', 'b', 'c']));
    const batcher = new AcknowledgementBatcher(writer.write);
    const results = await Promise.all([
      batcher.acknowledge(delivered('a', true)),
      batcher.acknowledge(delivered('b', false)),
      batcher.acknowledge(delivered('c', true)),
      batcher.acknowledge(delivered('d', true)),
    ]);
    expect(writer.groups).toEqual([['a!'], ['b', 'c!', 'd!']]);
    expect(results).toEqual([true, true, true, false]);
    expect(await batcher.acknowledge(delivered('b', true, 2))).toBe(true);
    expect(writer.groups).toHaveLength(3);
  });

  it('fails the group whose write failed and still writes the next', async () => {
    const writer = recordingWriter(new Set(['a', 'b', 'c']), new Set([1]));
    const batcher = new AcknowledgementBatcher(writer.write);
    const first = batcher.acknowledge(delivered('a', true));
    const second = batcher.acknowledge(delivered('b', true));
    await expect(first).rejects.toThrow('write 1 failed');
    await expect(second).resolves.toBe(true);
    expect(writer.groups).toEqual([['a!'], ['b!']]);
  });
});
