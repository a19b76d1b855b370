// The datasource configuration page, used as a person would: typing into
// the fields, picking from selects, adding rows with the "Add ..." buttons,
// clearing fields and resetting stored secrets. Each test checks the
// settings the editor handed to Grafana (onOptionsChange): jsonData,
// secureJsonData and secureJsonFields.
import { CA } from './certs';
import { EditorsPage, expect, test } from './fixtures';
import type { Settings } from './page/protocol';

const ES_PASSWORD = 'es-"pass"-\'word\'<1>';
const PROM_TOKEN = 'glsa_T0k3n/with+chars==';

/** The latest settings the editor emitted. */
const settings = (editors: EditorsPage) => editors.json<Settings>('config');

test.describe('ConfigEditor', () => {
  test('a new datasource filled in from top to bottom', async ({ editors, page }) => {
    const es = editors.group('Elasticsearch (job documents)');
    const prom = editors.group('Prometheus (job series)');
    const access = editors.group('Access control');
    const allocations = editors.group('Allocations');
    const capacity = editors.group('Partition capacity (hogging contention without cluster-state series)');

    await editors.type(editors.field(es, 'URL'), 'https://es.hpc.internal:9200');
    await editors.type(editors.field(es, 'User'), 'jobsight');
    const password = editors.field(es, 'Password');
    await expect(password).toHaveAttribute('type', 'password');
    await editors.type(password, ES_PASSWORD);
    await editors.type(editors.field(es, 'Job index'), 'slurm-jobs');
    await editors.type(editors.field(es, 'Node index'), 'slurm-nodes');

    await editors.type(editors.field(prom, 'URL'), 'http://mimir.hpc.internal:8080/prometheus');
    await editors.type(editors.field(prom, 'Bearer token'), PROM_TOKEN);

    // TLS trust (docs/datasource.md): the site's CA for the three stores, one
    // more per backend, and one for Grafana's signing keys; real certificates,
    // since the backend refuses a bundle it cannot parse.
    const tls = editors.group('TLS');
    await editors.paste(editors.field(tls, 'CA certificate'), CA.site);
    await editors.paste(editors.field(tls, 'Elasticsearch CA'), CA.elasticsearch);
    await editors.paste(editors.field(tls, 'Prometheus CA'), CA.prometheus);
    await editors.paste(editors.field(tls, 'Allocations URL CA'), CA.allocations);
    await editors.paste(editors.field(tls, 'Grafana keys CA'), CA.grafana);

    const scope = editors.group('Scope and limits');
    await editors.type(editors.field(scope, 'Cluster filter'), 'alpha');
    await editors.type(editors.field(scope, 'Timeout (s)'), '60');
    await editors.type(editors.field(scope, 'Max jobs'), '5000');
    await editors.type(editors.field(scope, 'Max series'), '50000');
    await editors.type(editors.field(scope, 'Silent after (min)'), '45');

    await editors.choose(editors.field(access, 'User mapping'), 'Email local part');
    await access.getByRole('button', { name: 'Add user', exact: true }).click();
    await editors.type(access.getByLabel('userMap key 1'), 'jdoe');
    await editors.type(access.getByLabel('userMap value 1'), 'john.doe');
    // A built-in account, mapped by the Grafana user id it cannot change.
    await access.getByRole('button', { name: 'Add user id' }).click();
    await editors.type(access.getByLabel('userIdMap key 1'), 'user:42');
    await editors.type(access.getByLabel('userIdMap value 1'), 'jdoe');
    await editors.type(editors.field(access, 'Grafana URL'), 'https://grafana.hpc.internal');
    await access.getByRole('button', { name: 'Add account' }).click();
    await editors.type(access.getByLabel('accountPIs key 1'), 'physics');
    await editors.type(access.getByLabel('accountPIs value 1'), 'alice, bob');
    // Full access: the default (Admin, Editor) is shown; Editors are taken off it.
    const roles = editors.field(access, 'Full-access roles');
    await editors.removeValue(access, 'Editor');

    await allocations.getByRole('button', { name: 'Add allocation' }).click();
    await editors.type(allocations.getByLabel('Allocation 1 cluster'), 'alpha');
    await editors.type(allocations.getByLabel('Allocation 1 account'), 'physics');
    await editors.choose(allocations.getByLabel('Allocation 1 resource'), 'CPU');
    await editors.type(allocations.getByLabel('Allocation 1 hours'), '8766');
    await editors.type(allocations.getByLabel('Allocation 1 period days'), '30');
    await editors.type(allocations.getByLabel('Allocation 1 start'), '2026-01-01');
    await editors.type(editors.field(allocations, 'Allocations URL'), 'http://collector.hpc.internal:9310/constants');

    await capacity.getByRole('button', { name: 'Add partition' }).click();
    await editors.type(capacity.getByLabel('Partition 1', { exact: true }), 'alpha/gpu');
    await editors.type(capacity.getByLabel('Partition 1 CPUs'), '256');
    await editors.type(capacity.getByLabel('Partition 1 GPUs'), '32');

    await editors.type(
      editors.field(editors.group('Links'), 'Job page URL'),
      '/d/jobsight-job-detail/job?var-job=${doc_id}'
    );

    const s = await settings(editors);
    expect(s.jsonData).toEqual({
      elasticsearchUrl: 'https://es.hpc.internal:9200',
      elasticsearchUser: 'jobsight',
      elasticsearchJobIndex: 'slurm-jobs',
      elasticsearchNodeIndex: 'slurm-nodes',
      prometheusUrl: 'http://mimir.hpc.internal:8080/prometheus',
      tlsCaCert: CA.site,
      elasticsearchTlsCaCert: CA.elasticsearch,
      prometheusTlsCaCert: CA.prometheus,
      allocationsTlsCaCert: CA.allocations,
      grafanaTlsCaCert: CA.grafana,
      clusterFilter: 'alpha',
      timeoutSeconds: 60,
      maxJobs: 5000,
      maxSeries: 50000,
      silentAfterMinutes: 45,
      userMapping: 'emailLocalPart',
      userMap: { jdoe: 'john.doe' },
      userIdMap: { 'user:42': 'jdoe' },
      grafanaUrl: 'https://grafana.hpc.internal',
      accountPIs: { physics: ['alice', 'bob'] },
      fullAccessRoles: ['Admin'],
      allocations: [{ cluster: 'alpha', account: 'physics', resource: 'cpu', hours: 8766, periodDays: 30, start: '2026-01-01' }],
      allocationsUrl: 'http://collector.hpc.internal:9310/constants',
      partitionCapacity: { 'alpha/gpu': { cpus: 256, gpus: 32 } },
      jobPageUrl: '/d/jobsight-job-detail/job?var-job=${doc_id}',
    });
    // Secrets go to secureJsonData only, and nowhere else in what is stored.
    expect(s.secureJsonData).toEqual({ elasticsearchPassword: ES_PASSWORD, prometheusBearerToken: PROM_TOKEN });
    const visible = JSON.stringify({ ...s, secureJsonData: undefined });
    expect(visible).not.toContain(ES_PASSWORD);
    expect(visible).not.toContain(PROM_TOKEN);
    for (const e of await editors.emitted()) {
      const jsonData = JSON.stringify((e.value as Settings).jsonData);
      expect(jsonData).not.toContain('pass');
      expect(jsonData).not.toContain('T0k3n');
    }
    await editors.checkpoint('config', 'every setting filled in');

    // Viewers too: picked from the roles menu.
    await editors.choose(roles, 'Viewer');
    expect((await settings(editors)).jsonData.fullAccessRoles).toEqual(['Admin', 'Viewer']);
    await editors.checkpoint('config', 'Admin and Viewer have full access');
    await expect(page.getByTestId('config-json')).toContainText('"Viewer"');
  });

  test('clearing a field removes its key; removing rows removes the map', async ({ editors }) => {
    const es = editors.group('Elasticsearch (job documents)');
    const prom = editors.group('Prometheus (job series)');
    const scope = editors.group('Scope and limits');
    const access = editors.group('Access control');
    const allocations = editors.group('Allocations');
    const capacity = editors.group('Partition capacity (hogging contention without cluster-state series)');

    await editors.type(editors.field(es, 'URL'), 'http://127.0.0.1:9200');
    await editors.type(editors.field(prom, 'URL'), 'http://127.0.0.1:9090');
    await editors.type(editors.field(es, 'User'), 'jobsight');
    await editors.type(editors.field(scope, 'Cluster filter'), 'alpha');
    await editors.type(editors.field(scope, 'Timeout (s)'), '45');
    await editors.paste(editors.field(editors.group('TLS'), 'Grafana keys CA'), CA.grafana);
    await access.getByRole('button', { name: 'Add user', exact: true }).click();
    await editors.type(access.getByLabel('userMap key 1'), 'jdoe');
    await editors.type(access.getByLabel('userMap value 1'), 'john');
    await allocations.getByRole('button', { name: 'Add allocation' }).click();
    await editors.type(allocations.getByLabel('Allocation 1 cluster'), 'alpha');
    await editors.type(allocations.getByLabel('Allocation 1 hours'), '100');
    await capacity.getByRole('button', { name: 'Add partition' }).click();
    await editors.type(capacity.getByLabel('Partition 1', { exact: true }), 'debug');
    await editors.type(capacity.getByLabel('Partition 1 CPUs'), '64');
    let s = await settings(editors);
    expect(s.jsonData).toEqual({
      elasticsearchUrl: 'http://127.0.0.1:9200',
      prometheusUrl: 'http://127.0.0.1:9090',
      elasticsearchUser: 'jobsight',
      clusterFilter: 'alpha',
      timeoutSeconds: 45,
      grafanaTlsCaCert: CA.grafana,
      userMap: { jdoe: 'john' },
      allocations: [{ cluster: 'alpha', resource: 'gpu', hours: 100 }],
      partitionCapacity: { debug: { cpus: 64 } },
    });
    await editors.checkpoint('config', 'before clearing');

    await editors.clear(editors.field(es, 'User'));
    await editors.clear(editors.field(scope, 'Cluster filter'));
    await editors.clear(editors.field(scope, 'Timeout (s)'));
    await editors.clear(editors.field(editors.group('TLS'), 'Grafana keys CA'));
    await access.getByRole('button', { name: 'Remove userMap row 1' }).click();
    await allocations.getByRole('button', { name: 'Remove allocation 1' }).click();
    await capacity.getByRole('button', { name: 'Remove partition 1' }).click();
    s = await settings(editors);
    expect(s.jsonData).toEqual({ elasticsearchUrl: 'http://127.0.0.1:9200', prometheusUrl: 'http://127.0.0.1:9090' });
    await editors.checkpoint('config', 'cleared back to the two URLs');

    // A typed secret that is cleared again is sent empty (Grafana then stores none).
    await editors.type(editors.field(prom, 'Password'), 'pw');
    await editors.checkpoint('config', 'a Prometheus password without its user', 'prometheusUser');
    await editors.clear(editors.field(prom, 'Password'));
    s = await settings(editors);
    expect(s.secureJsonData).toEqual({ prometheusPassword: '' });
    await editors.checkpoint('config', 'password cleared');

    // An empty full-access list is kept: nobody sees every job (absent would mean the default).
    await editors.removeValue(access, 'Admin');
    await editors.removeValue(access, 'Editor');
    s = await settings(editors);
    expect(s.jsonData.fullAccessRoles).toEqual([]);
    await editors.checkpoint('config', 'no role has full access');
  });

  test.describe('with stored secrets', () => {
    test.use({
      init: {
        options: {
          jsonData: {
            elasticsearchUrl: 'http://127.0.0.1:9200',
            elasticsearchUser: 'jobsight',
            prometheusUrl: 'http://127.0.0.1:9090',
            prometheusUser: 'reader',
          },
          secureJsonFields: { elasticsearchPassword: true, prometheusPassword: true },
        },
      },
    });

    test('a stored secret shows as configured; Reset clears it', async ({ editors }) => {
      const es = editors.group('Elasticsearch (job documents)');
      const prom = editors.group('Prometheus (job series)');
      for (const [group, name] of [
        [es, 'Password'],
        [prom, 'Password'],
      ] as const) {
        const input = editors.field(group, name);
        await expect(input).toHaveValue('configured');
        await expect(input).toBeDisabled();
      }
      await expect(editors.field(prom, 'Bearer token')).toHaveValue('');
      await expect(editors.field(prom, 'Bearer token')).toBeEnabled();

      // A new Elasticsearch password: Reset, then type it.
      await es.getByRole('button', { name: 'Reset' }).click();
      let s = await settings(editors);
      expect(s.secureJsonFields).toEqual({ elasticsearchPassword: false, prometheusPassword: true });
      expect(s.secureJsonData).toEqual({ elasticsearchPassword: '' });
      await expect(editors.field(es, 'Password')).toBeEnabled();
      await expect(editors.field(es, 'Password')).toHaveValue('');
      await editors.type(editors.field(es, 'Password'), 'new-pw');
      s = await settings(editors);
      expect(s.secureJsonData).toEqual({ elasticsearchPassword: 'new-pw' });
      expect(JSON.stringify(s.jsonData)).not.toContain('new-pw');
      await editors.checkpoint('config', 'Elasticsearch password replaced');

      // A bearer token while basic auth is still set: the backend refuses that mix.
      await editors.type(editors.field(prom, 'Bearer token'), PROM_TOKEN);
      await editors.checkpoint('config', 'bearer token beside basic auth', 'cannot be combined');

      // Switching Prometheus to the token: reset the password, clear the user.
      await prom.getByRole('button', { name: 'Reset' }).click();
      await editors.clear(editors.field(prom, 'User'));
      s = await settings(editors);
      expect(s.jsonData).toEqual({
        elasticsearchUrl: 'http://127.0.0.1:9200',
        elasticsearchUser: 'jobsight',
        prometheusUrl: 'http://127.0.0.1:9090',
      });
      expect(s.secureJsonFields).toEqual({ elasticsearchPassword: false, prometheusPassword: false });
      expect(s.secureJsonData).toEqual({ elasticsearchPassword: 'new-pw', prometheusBearerToken: PROM_TOKEN, prometheusPassword: '' });
      await editors.checkpoint('config', 'Prometheus by bearer token');
    });
  });

  test('values the backend refuses are emitted as typed and named by its validation', async ({ editors }) => {
    const es = editors.group('Elasticsearch (job documents)');
    const prom = editors.group('Prometheus (job series)');
    await editors.type(editors.field(es, 'URL'), 'http://user:pw@127.0.0.1:9200');
    await editors.type(editors.field(prom, 'URL'), 'http://127.0.0.1:9090');
    await editors.checkpoint('config', 'credentials in the URL', 'elasticsearchUrl');
    await editors.clear(editors.field(es, 'URL'));
    await editors.type(editors.field(es, 'URL'), 'http://127.0.0.1:9200');
    await editors.type(editors.field(es, 'Job index'), 'Jobs"*<script>');
    const s = await settings(editors);
    expect(s.jsonData.elasticsearchJobIndex).toBe('Jobs"*<script>');
    await editors.checkpoint('config', 'a hostile index name', 'elasticsearchJobIndex');
  });

  test.describe('in the light theme', () => {
    test.use({ init: { theme: 'light' } });

    test('renders in the light theme and emits the same', async ({ editors, page }) => {
      await expect(page.locator('body')).toHaveAttribute('data-theme', 'light');
      const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      const [r, g, b] = (bg.match(/\d+/g) ?? []).map(Number);
      expect(r + g + b, `body background ${bg} is light`).toBeGreaterThan(600);
      await editors.type(editors.field(editors.group('Elasticsearch (job documents)'), 'URL'), 'http://127.0.0.1:9200');
      await editors.type(editors.field(editors.group('Prometheus (job series)'), 'URL'), 'http://127.0.0.1:9090');
      await editors.choose(editors.field(editors.group('Access control'), 'User mapping'), 'Email');
      expect((await settings(editors)).jsonData).toEqual({
        elasticsearchUrl: 'http://127.0.0.1:9200',
        prometheusUrl: 'http://127.0.0.1:9090',
        userMapping: 'email',
      });
      await editors.checkpoint('config', 'light theme');
    });
  });
});
