// The panel query editor, used as a person would: picking a query type,
// opening the filters and choosing from the lists the backend offers (here
// the fake datasource), typing values the lists do not have, flipping
// switches and typing numbers. Each test checks the query the editor handed
// to Grafana (onChange) and what it asked the backend to list.
import { EditorsPage, expect, test } from './fixtures';
import type { JobsightQuery } from '../../src/types';

const DATASOURCE = { type: 'jobsight-slurm-datasource', uid: 'jobsight' };

/** The latest query the editor emitted, without Grafana's own keys. */
async function model(editors: EditorsPage): Promise<Partial<JobsightQuery>> {
  const { refId, datasource, ...rest } = await editors.json<JobsightQuery>('query');
  expect(refId).toBe('A');
  expect(datasource).toEqual(DATASOURCE);
  return rest;
}

test.describe('QueryEditor', () => {
  test('jobs: filters picked from the lists, sorting and paging', async ({ editors }) => {
    const q = editors.section('query');
    await expect(q.getByText('Jobs', { exact: true })).toBeVisible();
    expect(await editors.json('query')).toEqual({ refId: 'A', datasource: DATASOURCE, queryType: 'jobs' });

    await editors.choose(editors.field(q, 'Cluster'), 'alpha');
    // With one cluster chosen, the other lists are that cluster's: no dave.
    await editors.field(q, 'User').click();
    await expect(editors.option('alice')).toBeVisible();
    await expect(editors.option('$user')).toBeVisible();
    await expect(editors.option('dave')).toHaveCount(0);
    await editors.choose(editors.field(q, 'User'), 'alice', '$user');
    await editors.choose(editors.field(q, 'Account'), 'physics');
    await editors.choose(editors.field(q, 'Partition'), 'gpu');
    await editors.choose(editors.field(q, 'State'), 'RUNNING', 'FAILED');
    await editors.choose(editors.field(q, 'Efficiency'), 'wasted');
    await editors.type(editors.field(q, 'Job id'), 'alpha:1234_7');
    await editors.type(editors.field(q, 'Name'), 'train');
    await editors.choose(editors.field(q, 'Sort by'), 'elapsed');
    await editors.toggle(q, 'jobsight-sortDesc');
    await editors.type(editors.field(q, 'Limit'), '50');
    await editors.type(editors.field(q, 'Offset'), '100');

    const expected = {
      queryType: 'jobs',
      cluster: ['alpha'],
      user: ['alice', '$user'],
      account: ['physics'],
      partition: ['gpu'],
      state: ['RUNNING', 'FAILED'],
      class: ['wasted'],
      jobId: 'alpha:1234_7',
      name: 'train',
      sortBy: 'elapsed',
      sortDesc: true,
      limit: 50,
      offset: 100,
    };
    expect(await model(editors)).toEqual(expected);
    await editors.checkpoint('query', 'jobs with every field');

    // The lists asked for: clusters unnarrowed, the rest narrowed to alpha, each once.
    expect(await editors.resourceCalls()).toEqual([
      { path: 'options', params: { kind: 'clusters' } },
      { path: 'options', params: { kind: 'users', cluster: 'alpha' } },
      { path: 'options', params: { kind: 'accounts', cluster: 'alpha' } },
      { path: 'options', params: { kind: 'partitions', cluster: 'alpha' } },
      { path: 'options', params: { kind: 'states', cluster: 'alpha' } },
      { path: 'options', params: { kind: 'classes', cluster: 'alpha' } },
    ]);
    // Every pick ran the query; what ran last is what the editor shows.
    expect(await editors.runs()).toBeGreaterThanOrEqual(12);
    const last = (await editors.emitted()).filter((e) => e.event === 'onRunQuery').pop();
    expect(last?.value).toEqual({ refId: 'A', datasource: DATASOURCE, ...expected });

    // Sorting cleared with the select's clear button: the key goes.
    await editors.clearSelect(editors.field(q, 'Sort by'));
    await editors.toggle(q, 'jobsight-sortDesc');
    const { sortBy, sortDesc, ...rest } = expected;
    expect([sortBy, sortDesc]).toEqual(['elapsed', true]);
    expect(await model(editors)).toEqual(rest);
    await editors.checkpoint('query', 'jobs without sorting');
  });

  test('each query type with its own fields; switching type drops the fields it does not use', async ({ editors }) => {
    const q = editors.section('query');
    const type = editors.field(q, 'Query type');
    await editors.choose(editors.field(q, 'Cluster'), 'alpha');
    await editors.choose(editors.field(q, 'User'), 'bob');
    await editors.type(editors.field(q, 'Name'), 'sweep');

    // Job timeline: one cluster and a Slurm id; the job id is required.
    await editors.choose(type, 'Job timeline');
    expect(await model(editors)).toEqual({ queryType: 'jobTimeline', cluster: ['alpha'] });
    await editors.checkpoint('query', 'job timeline without a job', 'jobId is required');
    await editors.type(editors.field(q, 'Job id'), '1234+1');
    await editors.toggle(q, 'jobsight-perNode');
    expect(await model(editors)).toEqual({ queryType: 'jobTimeline', cluster: ['alpha'], jobId: '1234+1', perNode: true });
    await editors.checkpoint('query', 'job timeline per node');

    // Reservation vs usage, grouped by account.
    await editors.choose(type, 'Reservation vs usage');
    await editors.choose(editors.field(q, 'User'), 'bob');
    await editors.type(editors.field(q, 'Name'), 'sweep');
    await editors.choose(editors.field(q, 'Group by'), 'Account');
    expect(await model(editors)).toEqual({
      queryType: 'reservation',
      cluster: ['alpha'],
      user: ['bob'],
      name: 'sweep',
      groupBy: 'account',
    });
    await editors.checkpoint('query', 'reservation by account');

    // Usage history of memory by hour of week.
    await editors.choose(type, 'Usage history');
    await editors.choose(editors.field(q, 'Group by'), 'Hour of week');
    await editors.choose(editors.field(q, 'Resource'), 'Memory');
    await editors.choose(editors.field(q, 'State'), 'COMPLETED');
    await editors.choose(editors.field(q, 'Efficiency'), 'inefficient');
    expect(await model(editors)).toEqual({
      queryType: 'usageHistory',
      cluster: ['alpha'],
      user: ['bob'],
      name: 'sweep',
      state: ['COMPLETED'],
      class: ['inefficient'],
      groupBy: 'hourOfWeek',
      resources: ['memory'],
    });
    await editors.checkpoint('query', 'usage history by hour of week');

    // Allocation of GPU-hours for one account: memory is not an allocation resource.
    await editors.choose(type, 'Allocation');
    expect(await model(editors)).toEqual({ queryType: 'allocation', cluster: ['alpha'] });
    await editors.choose(editors.field(q, 'Account'), 'physics');
    await editors.choose(editors.field(q, 'Resource'), 'GPU');
    expect(await model(editors)).toEqual({
      queryType: 'allocation',
      cluster: ['alpha'],
      account: ['physics'],
      resources: ['gpu'],
    });
    await editors.checkpoint('query', 'GPU allocation of one account');

    // Hogging: which resources, for how long, how idle, how contended.
    await editors.choose(type, 'Hogging');
    await editors.choose(editors.field(q, 'Resources'), 'Memory');
    await editors.choose(editors.field(q, 'Partition'), 'gpu');
    await editors.type(editors.field(q, 'Window (s)'), '30');
    await editors.checkpoint('query', 'a window below a minute', 'windowSeconds must be between 60 and 604800');
    await editors.clear(editors.field(q, 'Window (s)'));
    await editors.type(editors.field(q, 'Window (s)'), '3600');
    await editors.type(editors.field(q, 'Idle below'), '0.1');
    await editors.type(editors.field(q, 'Min contention'), '0.5');
    expect(await model(editors)).toEqual({
      queryType: 'hogging',
      cluster: ['alpha'],
      account: ['physics'],
      partition: ['gpu'],
      resources: ['gpu', 'memory'],
      windowSeconds: 3600,
      idleThreshold: 0.1,
      minContention: 0.5,
    });
    await editors.checkpoint('query', 'hogging of GPU and memory for an hour');

    // Hour of week belongs to usage history: a reservation query drops it.
    await editors.choose(type, 'Usage history');
    expect(await model(editors)).toEqual({
      queryType: 'usageHistory',
      cluster: ['alpha'],
      account: ['physics'],
      partition: ['gpu'],
      resources: ['gpu', 'memory'],
    });
    await editors.choose(editors.field(q, 'Group by'), 'Hour of week');
    await editors.checkpoint('query', 'usage history of GPU by hour of week');
    await editors.choose(type, 'Reservation vs usage');
    expect(await model(editors)).toEqual({
      queryType: 'reservation',
      cluster: ['alpha'],
      account: ['physics'],
      partition: ['gpu'],
    });
    await editors.checkpoint('query', 'reservation after usage history');

    // The panel editor also offers the variable type (values in a table).
    await editors.choose(type, 'Variable values');
    await editors.choose(editors.field(q, 'Values'), 'Accounts');
    expect(await model(editors)).toEqual({ queryType: 'variable', cluster: ['alpha'], variable: 'accounts' });
    await editors.checkpoint('query', 'account values as a panel query');

    // Cluster series: one named series, here a partition's contention.
    await editors.choose(type, 'Cluster series');
    expect(await model(editors)).toEqual({ queryType: 'clusterSeries', cluster: ['alpha'] });
    await editors.checkpoint('query', 'cluster series without a series', 'series is required');
    await editors.choose(editors.field(q, 'Series'), 'partition_pending_gpus');
    expect(await model(editors)).toEqual({ queryType: 'clusterSeries', cluster: ['alpha'], series: 'partition_pending_gpus' });
    await editors.checkpoint('query', 'pending GPUs per partition');

    // Typical request vs use: the filters it shares are kept, the series dropped.
    await editors.choose(type, 'Typical request vs use');
    expect(await model(editors)).toEqual({ queryType: 'typicalRequest', cluster: ['alpha'] });
    await editors.checkpoint('query', 'typical request by kind of job');
  });

  test('typed and hostile values reach the query exactly as typed', async ({ editors, page }) => {
    const q = editors.section('query');
    const hostile = {
      cluster: '"*',
      user: `o'brien"; DROP TABLE jobs;--`,
      account: '<img src=x onerror="window.__pwned=1">',
      partition: '$partition',
      name: '<script>window.__pwned=2</script>"*\\',
    };
    await editors.typeValue(editors.field(q, 'Cluster'), hostile.cluster);
    // The unknown cluster narrows the users' list to nothing but the dashboard's variables.
    await editors.field(q, 'User').click();
    await expect(editors.option('$user')).toBeVisible();
    await expect(editors.option('alice')).toHaveCount(0);
    await editors.closeMenu(editors.field(q, 'User'));
    await editors.typeValue(editors.field(q, 'User'), hostile.user);
    await editors.typeValue(editors.field(q, 'Account'), hostile.account);
    await editors.typeValue(editors.field(q, 'Partition'), hostile.partition);
    await editors.type(editors.field(q, 'Name'), hostile.name);
    expect(await model(editors)).toEqual({
      queryType: 'jobs',
      cluster: [hostile.cluster],
      user: [hostile.user],
      account: [hostile.account],
      partition: [hostile.partition],
      name: hostile.name,
    });
    // Shown as text, never run as markup.
    await expect(page.getByTestId('query-json')).toContainText('<script>window.__pwned=2</script>');
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    // The hostile cluster went to the backend as it was typed.
    expect(await editors.resourceCalls()).toContainEqual({
      path: 'options',
      params: { kind: 'users', cluster: hostile.cluster },
    });
    await editors.checkpoint('query', 'hostile values within the limits');

    // A pasted name over the backend's 256-byte limit is kept whole; the backend names it.
    const long = '"*<script>'.repeat(30);
    await editors.clear(editors.field(q, 'Name'));
    await editors.paste(editors.field(q, 'Name'), long);
    expect((await model(editors)).name).toBe(long);
    await editors.checkpoint('query', 'a 300-byte name', 'is 300 bytes long; at most 256');

    await editors.clear(editors.field(q, 'Name'));
    await editors.type(editors.field(q, 'Job id'), 'alpha:1234"; rm -rf /');
    expect(await model(editors)).not.toHaveProperty('name');
    await editors.checkpoint('query', 'a hostile job id', 'is not a Slurm job id');
  });
});
