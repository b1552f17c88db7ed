// One swc configuration for the build (scripts/build.js) and the tests (test/jest.base.js): decorators with
// their type metadata (Nest DI, class-validator and swagger read it), class names kept (Nest and the logs use
// them), CommonJS, and the `@agent/*` path aliases of tsconfig.json.
const { readFileSync } = require('node:fs');
const { join, resolve } = require('node:path');

const ROOT = resolve(__dirname, '..');

/** `compilerOptions.paths` of tsconfig.json: the single list of path aliases. */
function tsconfigPaths() {
  return JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')).compilerOptions.paths;
}

/** swc options; `resolveAliases` rewrites `@agent/*` imports to relative paths (the build needs it, jest maps them itself). */
function swcOptions({ resolveAliases = false } = {}) {
  return {
    swcrc: false,
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
      ...(resolveAliases ? { baseUrl: ROOT, paths: tsconfigPaths() } : {}),
    },
    module: { type: 'commonjs' },
  };
}

module.exports = { ROOT, swcOptions, tsconfigPaths };
