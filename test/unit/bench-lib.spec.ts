import { join } from 'node:path';
import { bytes, capacityRow, capacityTable, CapacityInputs } from '../../bench/capacity';
import { consoleTable, reportDirectory } from '../../bench/lib';

describe('benchmark reports', () => {
  it('go to the untracked results folder unless the committed reports are to be updated', () => {
    expect(reportDirectory('bench', false, '/repo')).toBe(join('/repo', 'bench', 'results'));
    expect(reportDirectory('eval', true, '/repo')).toBe(join('/repo', 'eval', 'reports'));
  });

  it('print the table under a heading with aligned columns, result rows included', () => {
    const report = [
      '# Bench',
      '',
      '| profile | ms |',
      '|---|---|',
      '| router | 380 |',
      '',
      '## Summary per mode',
      '',
      '| mode | p50 ms |',
      '|---|---|',
      '| off | 1538 |',
      '| sequential | 1304 |',
      '',
      'after',
    ];
    expect(consoleTable(report, '## Summary per mode')).toBe(
      ['mode       | p50 ms', '-----------|-------', 'off        | 1538', 'sequential | 1304'].join('\n'),
    );
    expect(consoleTable(report)).toBe(['profile | ms', '--------|----', 'router  | 380'].join('\n'));
    expect(() => consoleTable(report, '## Missing')).toThrow('no heading');
  });
});

describe('capacity model', () => {
  const inputs: CapacityInputs = {
    nodeCpuMs: 3,
    postgresCpuMs: 2,
    walBytes: 12_000,
    walFlushes: 1,
    agedBytesPerTurn: 4_000,
    keptBytesPerConversation: 20_000,
    turnsPerConversation: 10,
    eventsPerTurn: 20,
    eventBytes: 500,
  };

  it('sizes replicas, Postgres, WAL, storage and event throughput from the per-turn costs', () => {
    expect(capacityRow(inputs, 1000)).toEqual({
      turnsPerSecond: 1000,
      // 3 cores busy at 60% of one core each.
      replicas: 5,
      serviceCores: 5,
      // 2 cores busy at 60%.
      postgresCores: 4,
      postgresNodes: 1,
      walPerDayBytes: 12_000 * 1000 * 86_400,
      agedPerDayBytes: 4_000 * 1000 * 86_400,
      agedSteadyBytes: 4_000 * 1000 * 86_400 * 30,
      keptPerDayBytes: 2_000 * 1000 * 86_400,
      eventsPerSecond: 20_000,
      eventBytesPerSecond: 10_000_000,
    });
    expect(capacityRow(inputs, 10000).postgresNodes).toBe(3);
  });

  it('writes one row per rate, in decimal units', () => {
    expect(bytes(1_036_800_000_000)).toBe('1 TB');
    expect(bytes(950)).toBe('950 B');
    const table = capacityTable(inputs, [100, 1000]);
    expect(table).toHaveLength(4);
    expect(table[3]).toMatch(
      /^\| 1,000 \| 5 \(5\) \| 4 \(1\) \| 1 TB \| 346 GB \(10\.4 TB at steady state\) \|/,
    );
  });
});
