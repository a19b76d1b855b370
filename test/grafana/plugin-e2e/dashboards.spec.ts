// Every shipped dashboard loads in the browser with no panel errors; with
// JOBSIGHT_SCREENSHOTS=DIR a screenshot of each goes to DIR/<uid>.png.
import * as fs from 'fs';
import * as path from 'path';
import { expect, test } from '@grafana/plugin-e2e';

const dashboardsDir = path.join(__dirname, '..', '..', '..', 'dashboards');
const dashboards = fs
  .readdirSync(dashboardsDir)
  .filter((f) => f.endsWith('.json'))
  .map(
    (f) =>
      JSON.parse(fs.readFileSync(path.join(dashboardsDir, f), 'utf8')) as {
        uid: string;
        title: string;
        panels: Array<{ gridPos: { y: number; h: number } }>;
      }
  );
const shots = process.env.JOBSIGHT_SCREENSHOTS;
const job = process.env.JOBSIGHT_TEST_JOB ?? '';
// The job detail dashboard is opened on its job's own run, as a person
// looking at one job would zoom to it.
const jobRange = new URLSearchParams(process.env.JOBSIGHT_TEST_JOB_RANGE ?? '');

for (const d of dashboards) {
  test(`dashboard ${d.title}`, async ({ gotoDashboardPage, page }) => {
    const queryParams = new URLSearchParams({ from: 'now-1h', to: 'now' });
    if (d.uid === 'jobsight-job-detail' && job) {
      queryParams.set('var-job', job);
      jobRange.forEach((v, k) => queryParams.set(k, v));
    }
    const failed: string[] = [];
    page.on('response', (r) => {
      if (r.url().includes('/api/ds/query') && !r.ok()) {
        failed.push(`${r.status()} ${r.url()}`);
      }
    });
    // A window as tall as the dashboard (a grid unit is 30 px plus an
    // 8 px margin): every panel is drawn and queried at once, and the
    // screenshot shows them all.
    const units = Math.max(...d.panels.map((p) => p.gridPos.y + p.gridPos.h));
    await page.setViewportSize({ width: 1600, height: Math.min(units * 38 + 220, 8000) });
    const dashboardPage = await gotoDashboardPage({ uid: d.uid, queryParams });
    await expect(page.getByText('Dashboard not found')).toHaveCount(0);
    await page.waitForLoadState('networkidle');
    await expect(dashboardPage).toHavePanelErrors(0);
    // No error notification (a variable whose query failed shows one),
    // and every variable shows a value.
    await expect(page.getByTestId('data-testid Alert error')).toHaveCount(0);
    const pickers = page.getByRole('form', { name: 'Template variables' }).getByRole('button');
    for (const picker of await pickers.all()) {
      expect((await picker.innerText()).trim(), `variable ${await picker.getAttribute('aria-label')}`).not.toBe('');
    }
    expect(failed, 'failed panel queries').toEqual([]);
    if (shots) {
      await page.waitForTimeout(1500);
      fs.mkdirSync(shots, { recursive: true });
      await page.screenshot({ path: path.join(shots, `${d.uid}.png`) });
    }
    if (d.uid === 'jobsight-my-jobs' && job) {
      // A person follows the job's link to its detail dashboard, which
      // opens on that job and its own run.
      const [, id] = job.split(':');
      // A cell with two links (detail dashboard, report page) is a button
      // that opens a menu of them.
      await page.getByRole('button', { name: id, exact: true }).first().click();
      await page.getByText('Job detail dashboard', { exact: true }).click();
      await expect(page).toHaveURL(/\/d\/jobsight-job-detail\/.*var-job=[^&]+.*&from=\d+&to=\d+/);
    }
  });
}
