const base = require('./jest.base');

/** Pure logic, next to the code: no database, no network except loopback test servers. */
module.exports = {
  ...base,
  displayName: 'unit',
  testMatch: ['<rootDir>/{libs,apps}/**/*.spec.ts', '<rootDir>/test/unit/**/*.spec.ts'],
};
