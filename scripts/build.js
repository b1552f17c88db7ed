#!/usr/bin/env node
// Compiles the server side (the files of tsconfig.build.json) to dist/ with swc, in seconds. It only strips types: type
// checking is `npm run typecheck` (and CI).
const swc = require('@swc/core');
const ts = require('typescript');
const { mkdirSync, rmSync, writeFileSync } = require('node:fs');
const { dirname, join, relative, sep } = require('node:path');
const { ROOT, swcOptions } = require('./swc-options');

const DIST = join(ROOT, 'dist');

/** The files tsc would compile for tsconfig.build.json (its include and exclude), so both agree. */
function buildFiles() {
  const configPath = join(ROOT, 'tsconfig.build.json');
  const { config, error } = ts.readConfigFile(configPath, ts.sys.readFile);
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  return ts
    .parseJsonConfigFileContent(config, ts.sys, ROOT, undefined, configPath)
    .fileNames.filter((file) => !file.endsWith('.d.ts'));
}

async function build() {
  const started = Date.now();
  const files = buildFiles();
  // Only what this build writes: dist/console is the console's own build.
  for (const top of new Set(files.map((file) => relative(ROOT, file).split(sep)[0]))) {
    rmSync(join(DIST, top), { recursive: true, force: true });
  }
  const options = swcOptions({ resolveAliases: true });
  await Promise.all(
    files.map(async (file) => {
      const { code } = await swc.transformFile(file, { ...options, filename: file });
      const target = join(DIST, relative(ROOT, file)).replace(/\.ts$/, '.js');
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, code);
    }),
  );
  console.log(`[build] ${files.length} files compiled to dist/ in ${Date.now() - started} ms`);
}

/** Everything the server build depends on: the sources, and the configuration and script that compile them. */
function serverInputs() {
  const tooling = ['tsconfig.json', 'tsconfig.build.json', 'scripts/build.js', 'scripts/swc-options.js'];
  return [...buildFiles(), ...tooling.map((file) => join(ROOT, file))];
}

module.exports = { serverInputs };

if (require.main === module) {
  build().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
