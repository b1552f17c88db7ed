// Type-aware lint: floating and misused promises, exhaustive switches, no import cycles; zero warnings in CI.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import reactHooks from 'eslint-plugin-react-hooks';
import jsxA11y from 'eslint-plugin-jsx-a11y';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Module boundaries (docs/architecture.md#modules): apps → workflow → feature libs → foundation libs. Feature libs
 * never import each other, with one exception written here: the agents use the MCP and RAG libs as their
 * infrastructure. Every lib is classified; a new one fails the lint until it is.
 */
const FOUNDATION_LIBS = ['contracts', 'config', 'database', 'llm', 'observability'];
const FEATURE_LIBS = [
  'agents',
  'checkpoint',
  'continuity',
  'events',
  'guardrails',
  'judges',
  'mcp',
  'memory',
  'rag',
  'routing',
  'session-control',
];
const FEATURE_DEPENDENCIES = { agents: ['mcp', 'rag'] };
const COMPOSITION_LIBS = ['workflow'];

const classified = new Set([...FOUNDATION_LIBS, ...FEATURE_LIBS, ...COMPOSITION_LIBS]);
const unclassified = readdirSync(join(import.meta.dirname, 'libs')).filter((name) => !classified.has(name));
if (unclassified.length > 0) {
  throw new Error(
    `eslint.config.mjs: classify libs/${unclassified.join(', libs/')} in the module boundaries`,
  );
}

const lib = (name) => `./libs/${name}`;
const boundaryZones = [
  { target: './libs', from: './apps', message: 'A lib never imports an app.' },
  {
    target: lib('contracts'),
    from: [...classified].filter((name) => name !== 'contracts').map(lib),
    message: 'contracts is the bottom of the graph: it imports no other lib.',
  },
  ...FOUNDATION_LIBS.map((name) => ({
    target: lib(name),
    from: [...FEATURE_LIBS, ...COMPOSITION_LIBS].map(lib),
    message: 'A foundation lib never imports a feature lib or the workflow.',
  })),
  ...FEATURE_LIBS.map((name) => ({
    target: lib(name),
    from: [
      ...FEATURE_LIBS.filter(
        (other) => other !== name && !(FEATURE_DEPENDENCIES[name] ?? []).includes(other),
      ),
      ...COMPOSITION_LIBS,
    ].map(lib),
    message: 'Feature libs never import each other (only the workflow composes them) nor the workflow.',
  })),
];

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'coverage/**',
      '.data/**',
      'bench/reports/**',
      'artifacts/**',
      'apps/console/src/api/openapi.d.ts',
      '**/*.cjs',
      '**/*.js',
      '!eslint.config.mjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      '@typescript-eslint/require-await': 'error',
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { zones: boundaryZones }],
      eqeqeq: ['error', 'always'],
      curly: ['error', 'multi-line'],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@agent/*/src/*', '**/libs/*/src/*'],
              message: "Import a lib through its '@agent/<lib>' index only.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.spec.ts', '**/*.e2e-spec.ts', '**/*.int-spec.ts', 'test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/unbound-method': 'off',
      'no-restricted-imports': 'off',
    },
  },
  {
    // The operator console (browser, React): hooks rules and accessibility checks.
    files: ['apps/console/**/*.{ts,tsx}'],
    ...reactHooks.configs.flat.recommended,
  },
  { files: ['apps/console/**/*.tsx'], ...jsxA11y.flatConfigs.strict },
  { files: ['eslint.config.mjs'], ...tseslint.configs.disableTypeChecked },
);
