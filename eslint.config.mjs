// ESLint: create-plugin's settings (.config/eslint.config.mjs), over the
// frontend's files only (`npm run lint` lints the whole tree).
import baseConfig from './.config/eslint.config.mjs';

export default [
  {
    ignores: [
      '**/node_modules/',
      '**/dist/',
      '**/coverage/',
      'test/editors/dist*/',
      '**/test-results/',
      'playwright-report/',
      'playwright/',
      // Go, C and the rest: nothing for ESLint there.
      'agent/',
      'cmd/',
      'internal/',
      'pkg/',
      'examples/',
      'dashboards/',
      'provisioning/',
    ],
  },
  ...baseConfig,
  {
    files: ['src/**/*.{ts,tsx}'],
    rules: {
      // Grafana deprecated Select and MultiSelect for Combobox, which Grafana
      // 11.0 lacks (plugin.json claims 11.0 and later); they are still there
      // in 13. Every other deprecated API fails lint.
      '@typescript-eslint/no-deprecated': [
        'warn',
        { allow: [{ from: 'package', package: '@grafana/ui', name: ['Select', 'MultiSelect'] }] },
      ],
    },
  },
];
