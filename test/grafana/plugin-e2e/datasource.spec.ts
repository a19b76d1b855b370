// The datasource configuration page, as an admin fills it in.
import { expect, test } from '@grafana/plugin-e2e';

const env = (name: string): string => {
  const v = process.env[name];
  if (v === undefined) {
    throw new Error(`${name} is not set: run these tests through make real-grafana-test (test/grafana, TestRealGrafana)`);
  }
  return v;
};

test('the config page saves and its health check passes', async ({ createDataSourceConfigPage, page }) => {
  const configPage = await createDataSourceConfigPage({ type: 'jobsight-slurm-datasource' });
  await page.locator('#es-url').fill(env('JOBSIGHT_ES_URL'));
  await page.locator('#es-user').fill(env('JOBSIGHT_ES_USER'));
  await page.locator('#es-password').fill(env('JOBSIGHT_ES_PASSWORD'));
  await page.locator('#prom-url').fill(env('JOBSIGHT_PROMETHEUS_URL'));
  await expect(configPage.saveAndTest()).toBeOK();
  await expect(configPage).toHaveAlert('success');
  // Saved: the page reloads with the settings, the password kept secret.
  await page.reload();
  await expect(page.locator('#es-url')).toHaveValue(env('JOBSIGHT_ES_URL'));
  await expect(page.locator('#es-password')).not.toHaveValue(env('JOBSIGHT_ES_PASSWORD'));
});

test('a wrong Elasticsearch password fails the health check by name', async ({ createDataSourceConfigPage, page }) => {
  const configPage = await createDataSourceConfigPage({ type: 'jobsight-slurm-datasource' });
  await page.locator('#es-url').fill(env('JOBSIGHT_ES_URL'));
  await page.locator('#es-user').fill(env('JOBSIGHT_ES_USER'));
  await page.locator('#es-password').fill('not-the-password');
  await page.locator('#prom-url').fill(env('JOBSIGHT_PROMETHEUS_URL'));
  await configPage.saveAndTest();
  await expect(configPage).toHaveAlert('error', { hasText: /Elasticsearch/i });
});
