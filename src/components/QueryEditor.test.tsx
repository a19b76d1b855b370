import React, { useState } from 'react';
import { render, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { setTemplateSrv } from '@grafana/runtime';

import { DataSource } from '../datasource';
import { mockDataSource } from '../test/datasource';
import { fakeTemplateSrv } from '../test/templateSrv';
import { JobsightQuery, OptionKind, QueryType } from '../types';
import { changeType, QueryEditor } from './QueryEditor';

let user: ReturnType<typeof userEvent.setup>;

beforeEach(() => {
  setTemplateSrv(fakeTemplateSrv({ user: ['alice', 'bob'], cluster: 'alpha' }));
  user = userEvent.setup({ delay: null });
});

/** A field's label; a required field's has " *" after it. */
const label = (text: string) => new RegExp(`^${text.replace(/[()*]/g, '\\$&')}( \\*)?$`);

/** Renders the editor as Grafana does: the query lives outside and comes back changed. */
function setup(query: Partial<JobsightQuery>, options: Partial<Record<OptionKind, string[]>> = {}) {
  const { ds, getResource } = mockDataSource(options);
  const onChange = jest.fn();
  const onRunQuery = jest.fn();
  function Harness({ datasource }: { datasource: DataSource }) {
    const [q, setQ] = useState<JobsightQuery>({ refId: 'A', ...query });
    return (
      <QueryEditor
        datasource={datasource}
        query={q}
        onChange={(next) => {
          onChange(next);
          setQ(next);
        }}
        onRunQuery={onRunQuery}
      />
    );
  }
  render(<Harness datasource={ds} />);
  return { onChange, onRunQuery, getResource, lastQuery: (): JobsightQuery => onChange.mock.lastCall[0] };
}

/**
 * What marks an option of an open select menu: Grafana 11.1 and later give it
 * this test id (before, an aria-label "Select option").
 */
const OPTION = '[data-testid="data-testid Select option"] *';

/** Opens a select by its label and clicks one of its options. */
async function choose(field: string, option: string) {
  await user.click(screen.getByLabelText(label(field)));
  await user.click(await screen.findByText(option, { selector: OPTION }));
}

const FIELD_LABELS = [
  'Values',
  'Cluster',
  'User',
  'Account',
  'Partition',
  'State',
  'Efficiency',
  'Job id',
  'Name',
  'Sort by',
  'Descending',
  'Limit',
  'Offset',
  'Per node',
  'Group by',
  'Resource',
  'Resources',
  'Window (s)',
  'Idle below',
  'Min contention',
  'Series',
];

const SHOWN: Record<QueryType, string[]> = {
  jobs: [
    'Cluster',
    'User',
    'Account',
    'Partition',
    'State',
    'Efficiency',
    'Job id',
    'Name',
    'Sort by',
    'Descending',
    'Limit',
    'Offset',
  ],
  jobTimeline: ['Cluster', 'Job id', 'Per node'],
  reservation: ['Cluster', 'User', 'Account', 'Partition', 'State', 'Efficiency', 'Name', 'Group by'],
  allocation: ['Cluster', 'Account', 'Resource'],
  hogging: ['Cluster', 'User', 'Account', 'Partition', 'Resources', 'Window (s)', 'Idle below', 'Min contention'],
  usageHistory: ['Cluster', 'User', 'Account', 'Partition', 'State', 'Efficiency', 'Name', 'Group by', 'Resource'],
  variable: ['Values', 'Cluster'],
  clusterSeries: ['Series', 'Cluster', 'Partition'],
  typicalRequest: ['Cluster', 'User', 'Account', 'Partition', 'Name'],
};

describe('QueryEditor', () => {
  it.each(Object.entries(SHOWN))('shows the fields of %s and no others', (type, shown) => {
    setup({ queryType: type as QueryType });
    for (const field of FIELD_LABELS) {
      if (shown.includes(field)) {
        expect(screen.getByLabelText(label(field))).toBeInTheDocument();
      } else {
        expect(screen.queryByLabelText(label(field))).not.toBeInTheDocument();
      }
    }
  });

  it('changes the query type, keeping the filters the new type uses', async () => {
    const { lastQuery, onRunQuery } = setup({
      queryType: 'jobs',
      user: ['alice'],
      state: ['RUNNING'],
      sortBy: 'user',
      limit: 20,
    });
    await choose('Query type', 'Hogging');
    expect(lastQuery()).toEqual({ refId: 'A', queryType: 'hogging', user: ['alice'] });
    expect(onRunQuery).toHaveBeenCalled();
    expect(screen.getByLabelText('Window (s)')).toBeInTheDocument();
  });

  it("loads a filter's options from the backend and adds the one chosen", async () => {
    const { lastQuery, getResource, onRunQuery } = setup(
      { queryType: 'jobs', user: ['alice'] },
      { users: ['alice', 'bob'] }
    );
    await choose('User', 'bob');
    expect(getResource).toHaveBeenCalledWith('options', { kind: 'users' });
    expect(lastQuery().user).toEqual(['alice', 'bob']);
    expect(onRunQuery).toHaveBeenCalled();
  });

  it('offers the template variables among the options', async () => {
    const { lastQuery } = setup({ queryType: 'jobs' }, { users: ['bob'] });
    await choose('User', '$user');
    expect(lastQuery().user).toEqual(['$user']);
  });

  it('takes typed values, hostile ones unchanged', async () => {
    const { lastQuery } = setup({ queryType: 'reservation' }, { accounts: ['physics'] });
    await user.click(screen.getByLabelText(label('Account')));
    await screen.findByText('physics');
    await user.type(screen.getByLabelText(label('Account')), 'a"b|c{enter}');
    expect(lastQuery().account).toEqual(['a"b|c']);
    await user.type(screen.getByLabelText(label('Account')), '$acct{enter}');
    expect(lastQuery().account).toEqual(['a"b|c', '$acct']);
  });

  it('narrows the options to the one cluster chosen', async () => {
    const { getResource } = setup({ queryType: 'jobs', cluster: ['alpha'] }, { partitions: ['gpu'] });
    await choose('Partition', 'gpu');
    expect(getResource).toHaveBeenCalledWith('options', { kind: 'partitions', cluster: 'alpha' });
  });

  it('removes a filter when its last value goes', async () => {
    const { lastQuery } = setup({ queryType: 'jobs', user: ['alice'] });
    await user.type(screen.getByLabelText('User'), '{backspace}');
    expect(lastQuery()).not.toHaveProperty('user');
  });

  it('edits the job id and name, running the query on blur', async () => {
    const { lastQuery, onRunQuery } = setup({ queryType: 'jobs' });
    await user.type(screen.getByLabelText(label('Job id')), 'alpha:1234_7');
    await user.type(screen.getByLabelText(label('Name')), 'train $user');
    expect(lastQuery()).toMatchObject({ jobId: 'alpha:1234_7', name: 'train $user' });
    expect(onRunQuery).toHaveBeenCalledTimes(1); // the job id's blur
  });

  it('sorts and pages the jobs', async () => {
    const { lastQuery } = setup({ queryType: 'jobs' });
    await choose('Sort by', 'efficiency');
    await user.click(screen.getByLabelText(label('Descending')));
    await user.type(screen.getByLabelText(label('Limit')), '50');
    await user.type(screen.getByLabelText(label('Offset')), '100');
    await user.tab();
    expect(lastQuery()).toEqual({
      refId: 'A',
      queryType: 'jobs',
      sortBy: 'efficiency',
      sortDesc: true,
      limit: 50,
      offset: 100,
    });
  });

  it('switches a job timeline to per-node series', async () => {
    const { lastQuery } = setup({ queryType: 'jobTimeline', jobId: 'alpha:1' });
    await user.click(screen.getByLabelText(label('Per node')));
    expect(lastQuery()).toEqual({ refId: 'A', queryType: 'jobTimeline', jobId: 'alpha:1', perNode: true });
  });

  it('groups usage history by hour of week, which reservation does not offer', async () => {
    const { lastQuery } = setup({ queryType: 'usageHistory' });
    await choose('Group by', 'Hour of week');
    expect(lastQuery().groupBy).toBe('hourOfWeek');
    await choose('Resource', 'GPU');
    expect(lastQuery().resources).toEqual(['gpu']);
  });

  it('does not offer hour of week to reservation', async () => {
    setup({ queryType: 'reservation' });
    await user.click(screen.getByLabelText(label('Group by')));
    expect(await screen.findByText('Account', { selector: OPTION })).toBeInTheDocument();
    expect(screen.queryByText('Hour of week')).not.toBeInTheDocument();
  });

  it('offers only CPU and GPU allocations', async () => {
    setup({ queryType: 'allocation' });
    await user.click(screen.getByLabelText(label('Resource')));
    expect(await screen.findByText('GPU', { selector: OPTION })).toBeInTheDocument();
    expect(screen.queryByText('Memory')).not.toBeInTheDocument();
  });

  it('sets the hogging resources, window and thresholds', async () => {
    const { lastQuery } = setup({ queryType: 'hogging' });
    await choose('Resources', 'GPU');
    await choose('Resources', 'Memory');
    await user.type(screen.getByLabelText(label('Window (s)')), '3600');
    await user.type(screen.getByLabelText(label('Idle below')), '0.1');
    await user.type(screen.getByLabelText(label('Min contention')), '0.5');
    await user.tab();
    await waitFor(() =>
      expect(lastQuery()).toEqual({
        refId: 'A',
        queryType: 'hogging',
        resources: ['gpu', 'memory'],
        windowSeconds: 3600,
        idleThreshold: 0.1,
        minContention: 0.5,
      })
    );
  });

  it('chooses the values of a variable-type query', async () => {
    const { lastQuery } = setup({ queryType: 'variable' });
    await choose('Values', 'Accounts');
    expect(lastQuery()).toEqual({ refId: 'A', queryType: 'variable', variable: 'accounts' });
  });
});

describe('changeType', () => {
  it('drops a grouping the new type does not have', () => {
    expect(
      changeType({ refId: 'A', queryType: 'usageHistory', groupBy: 'hourOfWeek', account: ['x'] }, 'reservation')
    ).toEqual({ refId: 'A', queryType: 'reservation', account: ['x'] });
  });

  it('keeps the resources the new type offers', () => {
    expect(changeType({ refId: 'A', queryType: 'hogging', resources: ['memory', 'gpu'] }, 'allocation')).toEqual({
      refId: 'A',
      queryType: 'allocation',
      resources: ['gpu'],
    });
  });
});
