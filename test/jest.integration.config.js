const base = require('./jest.base');

/** Against a real Postgres (DATABASE_URL) or the embedded default, with real migrations. */
module.exports = {
  ...base,
  displayName: 'integration',
  testMatch: ['<rootDir>/test/integration/**/*.int-spec.ts'],
  testTimeout: 60000,
  maxWorkers: 2,
  globalSetup: '<rootDir>/test/support/jest-embedded-template.ts',
};
