// ESLint (flat config) as @grafana/create-plugin sets it up: Grafana's rules
// (@grafana/eslint-config), React's and its hooks', and the TypeScript rules
// that need types for the plugin's sources. The top-level eslint.config.mjs
// extends it.
import grafanaConfig from '@grafana/eslint-config';

export default [
  ...grafanaConfig,
  {
    rules: {
      'react/prop-types': 'off',
    },
  },
  {
    files: ['src/**/*.{ts,tsx}'],
    languageOptions: {
      parserOptions: {
        project: './tsconfig.json',
      },
    },
    rules: {
      // A deprecated Grafana API is a warning, and lint allows no warnings.
      '@typescript-eslint/no-deprecated': 'warn',
    },
  },
  {
    files: ['test/**/*.spec.ts'],
    rules: {
      // Playwright's fixtures are called use(), which is not React's.
      'react-hooks/rules-of-hooks': 'off',
    },
  },
];
