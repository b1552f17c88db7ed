const base = require('./jest.base');

/** The operator console in real Chromium against the whole app with the scripted fake LLM. */
module.exports = {
  ...base,
  displayName: 'browser',
  testMatch: ['<rootDir>/test/browser/**/*.browser-spec.ts'],
  globalSetup: '<rootDir>/test/browser/build-console.ts',
  testTimeout: 120000,
  maxWorkers: 1,
};
