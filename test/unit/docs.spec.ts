import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { knownEnvVariables } from '../support/env-variables';

const ROOT = join(__dirname, '..', '..');

function read(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

/** Files tracked by git (the repository as a clone sees it). */
function trackedFiles(): string[] {
  return execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((path) => path !== '' && existsSync(join(ROOT, path)));
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function anchorsIn(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = !fenced && /^#{1,6} (.+)$/.exec(line);
    if (heading) anchors.add(anchorOf(heading[1]));
  }
  return anchors;
}

const markdownFiles = trackedFiles().filter(
  (path) => path.endsWith('.md') && !path.startsWith('bench/reports/'),
);

describe('documentation', () => {
  it('documents every environment variable the service reads in docs/configuration.md', () => {
    const configuration = read('docs/configuration.md');
    const variables = knownEnvVariables();
    const missing = variables.filter((name) => !configuration.includes(`| \`${name}\``));
    expect(missing).toEqual([]);
  });

  it('keeps the README a short front door with the set-up, start and test commands', () => {
    const readme = read('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(200);
    for (const command of ['npm ci', 'npm start', 'npm test', 'curl']) expect(readme).toContain(command);
  });

  it('links only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const file of markdownFiles) {
      const text = read(file);
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        const [path, anchor] = target.split('#');
        const linked = path === '' ? join(ROOT, file) : resolve(ROOT, dirname(file), path);
        if (!existsSync(linked)) {
          broken.push(`${file} → ${target}`);
          continue;
        }
        if (anchor && linked.endsWith('.md') && !anchorsIn(readFileSync(linked, 'utf8')).has(anchor)) {
          broken.push(`${file} → ${target}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('stands alone: nothing refers to material outside the repository', () => {
    // Built from parts so this file does not match itself.
    const outside = new RegExp(
      // \u00a7 is the section sign: section numbers of documents this repository does not have.
      [
        '\\.\\./' + 'shared',
        '/work/' + 'shared',
        'DESIGN' + '\\.md',
        '\\u00a7',
        'python-' + 'implementation',
      ].join('|'),
    );
    const offending = trackedFiles()
      .filter((path) => !path.endsWith('package-lock.json') && !/\.(png|jpe?g|ico|woff2?)$/.test(path))
      .filter((path) => outside.test(read(path)));
    expect(offending).toEqual([]);
  });
});
