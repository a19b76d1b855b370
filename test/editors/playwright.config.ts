// Playwright runs the editors' specs (test/editors/*.spec.ts) against the
// host page built by `npm run build:editors`, served from test/editors/dist
// by serve.js on 127.0.0.1 (with JOBSIGHT_EDITOR_DIST=dist-grafana13: the
// React 19 page `npm run build:editors:react19` built). No Grafana server is involved. The browser is
// Debian's Chromium (JOBSIGHT_CHROMIUM overrides it): nothing is downloaded.
// `npm run test:editors` builds and runs; the Go test test/editors does the
// same with JOBSIGHT_EDITOR_OUT set and then decodes what was written there.
import { execFileSync } from 'child_process';
import path from 'path';
import { defineConfig, devices } from '@playwright/test';

/** A free TCP port on 127.0.0.1, found once and handed to the workers through the environment. */
function freePort(): string {
  const script =
    "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{process.stdout.write(String(s.address().port));s.close()})";
  return execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim();
}

const port = (process.env.JOBSIGHT_EDITOR_PORT ||= freePort());
const chromium = process.env.JOBSIGHT_CHROMIUM || '/usr/bin/chromium';
const dist = process.env.JOBSIGHT_EDITOR_DIST || 'dist';

export default defineConfig({
  testDir: '.',
  testMatch: '*.spec.ts',
  outputDir: path.join(__dirname, dist === 'dist' ? 'test-results' : `test-results-${dist.slice('dist-'.length)}`),
  fullyParallel: false,
  // Two cores are shared with other work: one browser at a time.
  workers: 1,
  retries: 0,
  timeout: 120_000,
  expect: { timeout: 15_000 },
  forbidOnly: process.env.CI === 'true',
  reporter: [['list']],
  use: {
    ...devices['Desktop Chrome'],
    channel: undefined,
    baseURL: `http://127.0.0.1:${port}/`,
    viewport: { width: 1600, height: 1000 },
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
    launchOptions: {
      executablePath: chromium,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
    },
  },
  webServer: {
    command: `node ${JSON.stringify(path.join(__dirname, 'serve.js'))} ${port}`,
    url: `http://127.0.0.1:${port}/index.html`,
    reuseExistingServer: false,
    timeout: 30_000,
    stdout: 'ignore',
    stderr: 'pipe',
  },
});
