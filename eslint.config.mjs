// ESLint flat config. TypeScript is linted with type information (typescript-eslint's
// recommendedTypeChecked, each file checked against the nearest tsconfig.json through the
// project service: the root one, sdk/, demo/ and test/); the plain CommonJS scripts of bench/
// and sdk/scripts/ without it. Formatting is Prettier's job (.prettierrc.json), not ESLint's.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  {
    // Build output, generated files and run artefacts.
    ignores: ['**/dist/', 'node_modules/', 'sdk/src/generated/', 'docs/', 'bench/results/', 'data/', '.tap/'],
  },
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  {
    // Files and functions a reader can hold in their head (issue #30). Comments and blank lines
    // do not count, so documentation is never what gets cut to stay under. Exceptions are listed
    // below, each named with its reason in its folder's README.
    files: ['**/*.ts', '**/*.cts', '**/*.js', '**/*.cjs', '**/*.mjs'],
    rules: {
      'max-lines': ['error', { max: 400, skipComments: true, skipBlankLines: true }],
      'max-lines-per-function': ['error', { max: 100, skipComments: true, skipBlankLines: true }],
    },
  },
  {
    // A test file's top-level `t.test(...)` callbacks hold whole scenarios; only file length is
    // limited there.
    files: ['test/**'],
    rules: { 'max-lines-per-function': 'off' },
  },
  {
    files: ['**/*.ts', '**/*.cts'],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A leading underscore marks a deliberately unused name, as in tsconfig's noUnusedParameters.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Stricter than recommended where it pays: no deprecated API (zod, Node) left to break
      // on the next major, and no `'text' + undefined` from an index read that missed.
      '@typescript-eslint/no-deprecated': 'error',
      '@typescript-eslint/restrict-plus-operands': ['error', { allowNullish: false }],
    },
  },
  {
    files: ['test/**/*.ts', 'test/**/*.cts'],
    rules: {
      // tap queues a subtest that is not awaited and runs them in order: `t.test(...)` at the top
      // level is tap's own idiom, not a lost promise.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: '@tapjs/test', name: ['test', 'skip', 'todo', 'only'] }] },
      ],
      // Tests read JSON answers untyped and assert on their fields; the assertions are the check.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // Subtest callbacks are written `async (t) =>` whether or not they await yet.
      '@typescript-eslint/require-await': 'off',
      // Patterns match column-aligned CLI output as it is printed, spaces and all.
      'no-regex-spaces': 'off',
    },
  },
  {
    // Named exceptions to the length rules, each with its reason in its folder's README.
    files: ['bench/fanout.js', 'test/e2e/openapi-conformance.ts'],
    rules: { 'max-lines': 'off', 'max-lines-per-function': 'off' },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'commonjs', globals: globals.node },
  },
  {
    files: ['**/*.mjs'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'module', globals: globals.node },
  },
);
