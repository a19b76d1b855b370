// Jest for the plugin's tests (src/**/*.test.ts(x)) in jsdom, as
// @grafana/create-plugin sets it up: TypeScript through SWC, the ES-module-only
// packages Grafana's UI pulls in transformed too, and the browser APIs jsdom
// lacks stubbed (jest-setup.js). The top-level jest.config.js extends it;
// compat/grafana13/jest.config.js runs the same tests on React 19.
'use strict';

const path = require('path');
const { grafanaESModules, nodeModulesToTransform } = require('./jest/utils');

module.exports = {
  rootDir: path.resolve(__dirname, '..'),
  moduleNameMapper: {
    '\\.(css|scss|sass)$': path.join(__dirname, 'jest', 'mocks', 'style.js'),
    '^react-inlinesvg$': path.join(__dirname, 'jest', 'mocks', 'react-inlinesvg.js'),
  },
  testEnvironment: 'jest-environment-jsdom',
  testMatch: ['<rootDir>/src/**/*.{spec,test,jest}.{js,jsx,ts,tsx}'],
  setupFilesAfterEnv: [path.join(__dirname, 'jest-setup.js')],
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
  transformIgnorePatterns: [nodeModulesToTransform(grafanaESModules)],
  watchPathIgnorePatterns: ['<rootDir>/node_modules', '<rootDir>/dist', '<rootDir>/compat'],
};
