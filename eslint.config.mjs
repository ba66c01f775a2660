// ESLint (flat config), `npm run -s lint`: typescript-eslint's recommended rules (the ones that need
// no type information, so a run takes seconds) for the application code, src/ and handlers/. The
// tests, benches, codegen and migrations are typechecked by tsc but not linted.
//
// Unused exports are knip's step (knip.jsonc, `npm run -s lint:exports`): import-x's
// no-unused-modules needs ESLint's FileEnumerator, which flat config lacks (ESLint 9 asks for an
// .eslintrc beside the flat config; ESLint 10 makes the rule a no-op).
//
// No recommended rule is turned off: on this code none reports anything but the two set below.
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig({
  files: ['src/**/*.ts', 'handlers/**/*.ts'],
  extends: [tseslint.configs.recommended],
  // A disable comment that no longer disables anything fails the run.
  linterOptions: { reportUnusedDisableDirectives: 'error' },
  rules: {
    // An `any` stays only with `// eslint-disable-next-line @typescript-eslint/no-explicit-any -- <why>`.
    '@typescript-eslint/no-explicit-any': 'error',
    '@typescript-eslint/no-unused-vars': [
      'error',
      {
        args: 'after-used',
        argsIgnorePattern: '^_',
        varsIgnorePattern: '^_',
        caughtErrorsIgnorePattern: '^_',
        destructuredArrayIgnorePattern: '^_',
      },
    ],
    'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }],
  },
});
