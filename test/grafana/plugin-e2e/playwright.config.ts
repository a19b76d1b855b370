// Browser tests of the Jobsight plugin and dashboards in a real Grafana that
// a site or developer installed (this project never builds or runs
// Grafana's server, which is AGPL), the way Grafana plugin authors test:
// Playwright with @grafana/plugin-e2e. The Go test test/grafana
// (TestRealGrafana, run when JOBSIGHT_TEST_GRAFANA_URL is set) starts the
// stack, provisions the Grafana and runs this with GRAFANA_URL, the admin
// login and the stores' URLs in the environment; Debian's Chromium is the
// browser (no browser download).
import path from 'path';
import { defineConfig, devices } from '@playwright/test';
import type { PluginOptions } from '@grafana/plugin-e2e';

const chromium = process.env.JOBSIGHT_CHROMIUM || '/usr/bin/chromium';
const admin = process.env.GRAFANA_ADMIN_USER || 'admin';
// plugin-e2e's login step writes the session under the working directory.
const storageState = path.join(process.cwd(), `playwright/.auth/${admin}.json`);

export default defineConfig<PluginOptions>({
  // Absolute paths: the top-level playwright.config.ts (create-plugin's place
  // for it, `npm run e2e`) re-exports this file.
  testDir: __dirname,
  outputDir: path.join(__dirname, '../../../playwright/test-results'),
  fullyParallel: false,
  workers: 1,
  retries: 0,
  timeout: 120_000,
  expect: { timeout: 30_000 },
  reporter: [['list']],
  use: {
    baseURL: process.env.GRAFANA_URL,
    grafanaAPICredentials: {
      user: admin,
      password: process.env.GRAFANA_ADMIN_PASSWORD || 'admin',
    },
    viewport: { width: 1600, height: 1000 },
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
    launchOptions: {
      executablePath: chromium,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
    },
  },
  projects: [
    {
      name: 'auth',
      testDir: path.join(__dirname, '../../../node_modules/@grafana/plugin-e2e/dist/auth'),
      testMatch: [/.*\.js/],
      use: { ...devices['Desktop Chrome'], channel: undefined },
    },
    {
      name: 'grafana',
      use: { ...devices['Desktop Chrome'], channel: undefined, viewport: { width: 1600, height: 1000 }, storageState },
      dependencies: ['auth'],
    },
  ],
});
