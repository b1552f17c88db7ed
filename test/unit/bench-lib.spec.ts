import { join } from 'node:path';
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
