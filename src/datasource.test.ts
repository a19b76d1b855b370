import { DataQueryRequest, DataQueryResponse, FieldType, toDataFrame } from '@grafana/data';
import { setTemplateSrv } from '@grafana/runtime';
import { of } from 'rxjs';

import { mockDataSource } from './test/datasource';
import { fakeTemplateSrv } from './test/templateSrv';
import { JobsightQuery } from './types';

beforeEach(() => {
  setTemplateSrv(
    fakeTemplateSrv({
      cluster: 'alpha',
      clusters: ['alpha', 'beta'],
      user: ['alice', 'a"b|c', 'x,y'],
      account: 'physics',
    })
  );
});

describe('applyTemplateVariables', () => {
  it('expands multi-value variables in the filters and keeps hostile values whole', () => {
    const { ds } = mockDataSource();
    const query: JobsightQuery = {
      refId: 'A',
      queryType: 'reservation',
      cluster: ['$clusters'],
      user: ['$user', 'b"c|d'],
      account: ['${account}'],
      name: '$account-run',
      jobId: '$cluster:42',
      groupBy: 'user',
    };
    expect(ds.applyTemplateVariables(query, {})).toEqual({
      refId: 'A',
      queryType: 'reservation',
      cluster: ['alpha', 'beta'],
      user: ['alice', 'a"b|c', 'x,y', 'b"c|d'],
      account: ['physics'],
      name: 'physics-run',
      jobId: 'alpha:42',
      groupBy: 'user',
    });
  });

  it('uses the panel scoped variables of a repeated panel', () => {
    const { ds } = mockDataSource();
    const out = ds.applyTemplateVariables({ refId: 'A', user: ['$user'] }, { user: { text: 'bob', value: 'bob' } });
    expect(out.user).toEqual(['bob']);
  });
});

describe('filterQuery', () => {
  it('sends only queries with a type', () => {
    const { ds } = mockDataSource();
    expect(ds.filterQuery({ refId: 'A' })).toBe(false);
    expect(ds.filterQuery({ refId: 'A', queryType: 'hogging' })).toBe(true);
  });
});

describe('getOptions', () => {
  it('asks the options route for a kind', async () => {
    const { ds, getResource } = mockDataSource({ users: ['alice', 'bob'] });
    await expect(ds.getOptions('users')).resolves.toEqual(['alice', 'bob']);
    expect(getResource).toHaveBeenCalledWith('options', { kind: 'users' });
  });

  it('narrows to one cluster, a variable interpolated', async () => {
    const { ds, getResource } = mockDataSource({ partitions: ['gpu'] });
    await ds.getOptions('partitions', '$cluster');
    expect(getResource).toHaveBeenLastCalledWith('options', { kind: 'partitions', cluster: 'alpha' });
    // Several clusters, or an unknown variable: values of all clusters.
    await ds.getOptions('partitions', '$clusters');
    expect(getResource).toHaveBeenLastCalledWith('options', { kind: 'partitions' });
    await ds.getOptions('partitions', '$unknown');
    expect(getResource).toHaveBeenLastCalledWith('options', { kind: 'partitions' });
  });

  it('ignores an answer without a values list', async () => {
    const { ds, getResource } = mockDataSource();
    getResource.mockResolvedValueOnce({ error: 'nope' });
    await expect(ds.getOptions('users')).resolves.toEqual([]);
  });
});

describe('metricFindQuery', () => {
  it('runs a variable query and maps the text and value fields', async () => {
    const { ds } = mockDataSource();
    const frame = toDataFrame({
      refId: 'jobsight-variable',
      fields: [
        { name: 'text', type: FieldType.string, values: ['alpha:1 (train)', 'alpha:2'] },
        { name: 'value', type: FieldType.string, values: ['alpha:1', 'alpha:2'] },
      ],
    });
    const query = jest.spyOn(ds, 'query').mockReturnValue(of({ data: [frame] } as DataQueryResponse));

    const values = await ds.metricFindQuery({ variable: 'jobs', cluster: ['$cluster'] });

    expect(values).toEqual([
      { text: 'alpha:1 (train)', value: 'alpha:1' },
      { text: 'alpha:2', value: 'alpha:2' },
    ]);
    const request = query.mock.calls[0][0] as DataQueryRequest<JobsightQuery>;
    expect(request.targets).toEqual([
      { refId: 'jobsight-variable', queryType: 'variable', variable: 'jobs', cluster: ['$cluster'] },
    ]);
    expect(request.range.from.isBefore(request.range.to)).toBe(true);
  });

  it('gives each variable query its own request id, so that Grafana cancels none of them', async () => {
    const { ds } = mockDataSource();
    const query = jest.spyOn(ds, 'query').mockReturnValue(of({ data: [] } as DataQueryResponse));
    await Promise.all([ds.metricFindQuery({ variable: 'users' }), ds.metricFindQuery({ variable: 'accounts' })]);
    const ids = query.mock.calls.map((c) => (c[0] as DataQueryRequest<JobsightQuery>).requestId);
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(2);
  });

  it('fails with the backend error', async () => {
    const { ds } = mockDataSource();
    const error = { refId: 'jobsight-variable', message: 'variable "x" is unknown' };
    jest.spyOn(ds, 'query').mockReturnValue(of({ data: [], error, errors: [error] }));
    await expect(ds.metricFindQuery({ variable: 'users' })).rejects.toThrow('variable "x" is unknown');
  });

  it('fails with the first of the errors when the deprecated error is not set', async () => {
    const { ds } = mockDataSource();
    jest
      .spyOn(ds, 'query')
      .mockReturnValue(of({ data: [], errors: [{ message: 'first' }, { message: 'second' }] } as DataQueryResponse));
    await expect(ds.metricFindQuery({ variable: 'users' })).rejects.toThrow('first');
  });

  it('fails with the request error when only it is set (an HTTP error)', async () => {
    const { ds } = mockDataSource();
    jest
      .spyOn(ds, 'query')
      // What Grafana's runtime answers when the request fails: the deprecated error only.
      // eslint-disable-next-line @typescript-eslint/no-deprecated
      .mockReturnValue(of({ data: [], error: { message: 'Bad Gateway', status: 502 } } as DataQueryResponse));
    await expect(ds.metricFindQuery({ variable: 'users' })).rejects.toThrow('Bad Gateway');
  });

  it('lists nothing before a kind is chosen', async () => {
    const { ds } = mockDataSource();
    const query = jest.spyOn(ds, 'query');
    await expect(ds.metricFindQuery('')).resolves.toEqual([]);
    await expect(ds.metricFindQuery({})).resolves.toEqual([]);
    expect(query).not.toHaveBeenCalled();
  });
});
