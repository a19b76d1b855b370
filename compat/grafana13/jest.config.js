// The plugin's jest tests (the same src/**/*.test.ts(x), the same settings as
// .config/jest.config.js) run against this install: React 19 and Grafana 13's
// @grafana/data, ui, runtime and schema. jest-resolver.js sends the bare
// imports of src/ here; jest-setup.js fails the run unless React is 19 and
// every library came from here; globalSetup prints what ran.
// Run: npm ci --prefix compat/grafana13 && npm run test:react19
'use strict';

const path = require('path');

const base = require('../../.config/jest.config');
const { grafanaESModules, nodeModulesToTransform } = require('../../.config/jest/utils');

// ES-module-only packages Grafana 13's UI adds to create-plugin's list.
const GRAFANA13_ES_MODULES = ['@react-hookz', '@ver0'];

const ROOT = path.resolve(__dirname, '../..');
// Jest's own packages come from the main install.
const fromRoot = (name) => require.resolve(name, { paths: [ROOT] });

process.env.TZ = 'UTC';

module.exports = {
  ...base,
  rootDir: ROOT,
  resolver: path.join(__dirname, 'jest-resolver.js'),
  testEnvironment: fromRoot('jest-environment-jsdom'),
  transform: Object.fromEntries(
    Object.entries(base.transform).map(([pattern, [name, options]]) => [pattern, [fromRoot(name), options]])
  ),
  transformIgnorePatterns: [nodeModulesToTransform([...grafanaESModules, ...GRAFANA13_ES_MODULES])],
  setupFilesAfterEnv: [...base.setupFilesAfterEnv, path.join(__dirname, 'jest-setup.js')],
  globalSetup: path.join(__dirname, 'jest-global-setup.js'),
  cacheDirectory: path.join(ROOT, 'node_modules', '.cache', 'jest-grafana13'),
  testTimeout: 30000,
};
