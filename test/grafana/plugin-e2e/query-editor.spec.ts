// Each query type built in the query editor of a new panel, as a user
// builds it, returns data through the provisioned datasource.
import { expect, test } from '@grafana/plugin-e2e';
import type { Page, Response } from '@playwright/test';

const job = process.env.JOBSIGHT_TEST_JOB ?? '';

async function choose(page: Page, inputId: string, option: string) {
  await page.locator(`#${inputId}`).click();
  await page.getByLabel('Select options menu').getByText(option, { exact: true }).click();
}

/** The next /api/ds/query answer the panel gets. */
function nextAnswer(page: Page): Promise<Response> {
  return page.waitForResponse((r) => r.url().includes('/api/ds/query'), { timeout: 60_000 });
}

type Case = { type: string; fill?: (page: Page) => Promise<void> };
const cases: Case[] = [
  { type: 'Jobs' },
  {
    type: 'Job timeline',
    fill: async (page) => {
      const input = page.getByPlaceholder('mycluster:1234');
      await input.fill(job);
      await input.blur();
    },
  },
  { type: 'Reservation vs usage' },
  { type: 'Allocation' },
  {
    // The running hogging job of the Go test has held its idle GPUs for
    // minutes, not the default 30.
    type: 'Hogging',
    fill: async (page) => {
      const input = page.locator('#jobsight-windowSeconds');
      await input.fill('60');
      await input.blur();
    },
  },
  { type: 'Usage history' },
];

for (const c of cases) {
  test(`query editor: ${c.type}`, async ({ panelEditPage, page }) => {
    await panelEditPage.datasource.set('Jobsight');
    await panelEditPage.timeRange.set({ from: 'now-1h', to: 'now' });
    // Choosing a query type runs the query; so does leaving a text field.
    let answer = nextAnswer(page);
    await choose(page, 'jobsight-queryType', c.type);
    if (c.fill) {
      await answer;
      answer = nextAnswer(page);
      await c.fill(page);
    }
    const response = await answer;
    expect(response.ok(), `${c.type}: HTTP ${response.status()}`).toBeTruthy();
    const body = await response.json();
    const result = body.results?.A;
    expect(result?.error ?? '').toBe('');
    const frames: Array<{ data?: { values?: unknown[][] } }> = result?.frames ?? [];
    const rows = frames.reduce((n, f) => n + (f.data?.values?.[0]?.length ?? 0), 0);
    expect(rows, `${c.type}: rows in the answer`).toBeGreaterThan(0);
    await expect(panelEditPage.panel.getErrorIcon()).toHaveCount(0);
  });
}
