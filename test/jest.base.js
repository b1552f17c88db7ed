const { resolve } = require('node:path');
const { swcOptions, tsconfigPaths } = require('../scripts/swc-options');

const root = resolve(__dirname, '..');

/** tsconfig.json's `@agent/x` → `libs/x/src` and `@agent/testing/*` → `test/support/*`, as jest patterns. */
const moduleNameMapper = Object.fromEntries(
  Object.entries(tsconfigPaths()).map(([alias, [target]]) => [
    `^${alias.replace('*', '(.*)')}$`,
    `<rootDir>/${target.replace('*', '$1')}`,
  ]),
);

module.exports = {
  rootDir: root,
  testEnvironment: 'node',
  transform: {
    '^.+\\.(t|j)s$': ['@swc/jest', swcOptions()],
  },
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleNameMapper,
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  globalSetup: '<rootDir>/test/support/jest-run-dir.ts',
  globalTeardown: '<rootDir>/test/support/jest-teardown.ts',
  reporters: ['default', '<rootDir>/test/support/skipped-reporter.js'],
};
