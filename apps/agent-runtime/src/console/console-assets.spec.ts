import { join } from 'node:path';
import { consoleAssetsDir } from './console-assets';

describe('consoleAssetsDir', () => {
  const root = join(__dirname, '..', '..', '..', '..');

  it('finds dist/console of the repository from the sources and from the compiled output alike', () => {
    expect(consoleAssetsDir(__dirname)).toBe(join(root, 'dist', 'console'));
    expect(consoleAssetsDir(join(root, 'dist', 'apps', 'agent-runtime', 'src', 'console'))).toBe(
      join(root, 'dist', 'console'),
    );
  });
});
