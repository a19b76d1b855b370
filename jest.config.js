// Jest runs the editor and datasource tests (src/**/*.test.ts(x)) in jsdom,
// with the same setup as @grafana/create-plugin projects: TypeScript through
// SWC, and the ES-module-only packages that Grafana's UI pulls in transformed
// too.
'use strict';

// Packages under node_modules that ship only ES modules and so must be transformed.
const ES_MODULES = [
  '@grafana/schema',
  'd3',
  'd3-color',
  'd3-force',
  'd3-interpolate',
  'd3-scale-chromatic',
  'ol',
  'react-colorful',
  'rxjs',
  'uuid',
];

module.exports = {
  // Grafana's UI components render slowly on a small shared machine.
  testTimeout: 30000,
  testEnvironment: 'jest-environment-jsdom',
  testMatch: ['<rootDir>/src/**/*.{spec,test}.{js,jsx,ts,tsx}'],
  setupFilesAfterEnv: ['<rootDir>/src/test/setup.ts'],
  transform: {
    '^.+\\.m?(t|j)sx?$': [
      '@swc/jest',
      {
        sourceMaps: 'inline',
        jsc: {
          parser: { syntax: 'typescript', tsx: true, decorators: false, dynamicImport: true },
          transform: { react: { runtime: 'classic' } },
        },
      },
    ],
  },
  transformIgnorePatterns: [`node_modules/(?!.*(${ES_MODULES.join('|')})/.*)`],
};
