const base = require('./jest.base');

/** The whole Nest app over HTTP with the scripted fake LLM. */
module.exports = {
  ...base,
  displayName: 'e2e',
  testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'],
  testTimeout: 60000,
  maxWorkers: 2,
  globalSetup: '<rootDir>/test/support/jest-embedded-template.ts',
};
