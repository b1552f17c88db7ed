const { resolve } = require('node:path');

const root = resolve(__dirname, '..');
const libs = [
  'contracts',
  'config',
  'database',
  'llm',
  'observability',
  'checkpoint',
  'routing',
  'continuity',
  'session-control',
  'guardrails',
  'judges',
  'memory',
  'mcp',
  'agents',
  'rag',
  'workflow',
];

module.exports = {
  rootDir: root,
  testEnvironment: 'node',
  transform: {
    '^.+\\.(t|j)s$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript', decorators: true },
          transform: { legacyDecorator: true, decoratorMetadata: true },
          target: 'es2022',
          keepClassNames: true,
        },
        module: { type: 'commonjs' },
      },
    ],
  },
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleNameMapper: {
    ...Object.fromEntries(libs.map((lib) => [`^@agent/${lib}$`, `<rootDir>/libs/${lib}/src`])),
    '^@agent/migrations$': '<rootDir>/migrations',
    '^@agent/testing/(.*)$': '<rootDir>/test/support/$1',
  },
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  // @fastify/static (Swagger UI assets) ships an ESM-only dependency; let swc turn it into CommonJS.
  transformIgnorePatterns: ['^(?!.*/@fastify/static/node_modules/content-disposition/).*/node_modules/'],
};
