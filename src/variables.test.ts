import { FieldType, toDataFrame } from '@grafana/data';

import { fakeTemplateSrv } from './test/templateSrv';
import { JobsightQuery } from './types';
import { expandList, framesToMetricFindValues, interpolateQuery } from './variables';

const templateSrv = fakeTemplateSrv({
  user: ['alice', 'bob'],
  one: 'carol',
  hostile: 'a"b|c',
  hostiles: ['a"b|c', 'x,y', '{z}', '$user', '["q"]'],
  empty: '',
  site: ['north', 'south'],
  everyone: '.*',
});

describe('expandList', () => {
  it('makes one element per value of a multi-value variable', () => {
    expect(expandList(['$user'], {}, templateSrv)).toEqual(['alice', 'bob']);
    expect(expandList(['${user}', 'dave'], {}, templateSrv)).toEqual(['alice', 'bob', 'dave']);
    expect(expandList(['[[user]]'], {}, templateSrv)).toEqual(['alice', 'bob']);
  });

  it('keeps single values and literal elements', () => {
    expect(expandList(['$one', 'plain'], {}, templateSrv)).toEqual(['carol', 'plain']);
  });

  it('passes hostile values through unchanged, one element each', () => {
    expect(expandList(['a"b|c', 'x,y', '{z}'], {}, templateSrv)).toEqual(['a"b|c', 'x,y', '{z}']);
    expect(expandList(['$hostile'], {}, templateSrv)).toEqual(['a"b|c']);
    // A value that looks like a variable or JSON is not interpolated again.
    expect(expandList(['$hostiles'], {}, templateSrv)).toEqual(['a"b|c', 'x,y', '{z}', '$user', '["q"]']);
  });

  it('repeats the text around a multi-value variable for each value', () => {
    expect(expandList(['gpu-$site'], {}, templateSrv)).toEqual(['gpu-north', 'gpu-south']);
    expect(expandList(['$site/$one'], {}, templateSrv)).toEqual(['north/carol', 'south/carol']);
  });

  it('leaves unknown variables as written, drops empty results and duplicates', () => {
    expect(expandList(['$nope'], {}, templateSrv)).toEqual(['$nope']);
    expect(expandList(['$empty', 'alice', '$user'], {}, templateSrv)).toEqual(['alice', 'bob']);
  });

  it('drops the whole list when a variable in it is at All (the custom all value): no filter', () => {
    expect(expandList(['$everyone'], {}, templateSrv)).toEqual([]);
    expect(expandList(['alice', '$everyone'], {}, templateSrv)).toEqual([]);
  });

  it('uses scoped variables (repeated panels) before dashboard ones', () => {
    expect(expandList(['$user'], { user: { text: 'erin', value: 'erin' } }, templateSrv)).toEqual(['erin']);
  });
});

describe('interpolateQuery', () => {
  it('interpolates every string field and expands every list', () => {
    const query: JobsightQuery = {
      refId: 'A',
      queryType: 'jobs',
      cluster: ['$site'],
      user: ['$user'],
      account: ['$hostile'],
      partition: ['gpu'],
      state: ['RUNNING'],
      class: ['$one'],
      resources: ['gpu'],
      name: 'train-$one',
      jobId: '$one:1234',
      limit: 50,
    };
    expect(interpolateQuery(query, {}, templateSrv)).toEqual({
      ...query,
      cluster: ['north', 'south'],
      user: ['alice', 'bob'],
      account: ['a"b|c'],
      class: ['carol'],
      name: 'train-carol',
      jobId: 'carol:1234',
    });
  });

  it('does not change the query it is given', () => {
    const query: JobsightQuery = { refId: 'A', user: ['$user'] };
    interpolateQuery(query, {}, templateSrv);
    expect(query.user).toEqual(['$user']);
  });
});

describe('framesToMetricFindValues', () => {
  it('maps the text and value fields', () => {
    const frame = toDataFrame({
      fields: [
        { name: 'text', type: FieldType.string, values: ['alpha:1', 'alpha:2'] },
        { name: 'value', type: FieldType.string, values: ['a1', 'a2'] },
      ],
    });
    expect(framesToMetricFindValues([frame])).toEqual([
      { text: 'alpha:1', value: 'a1' },
      { text: 'alpha:2', value: 'a2' },
    ]);
  });

  it('uses the text as value when there is no value field', () => {
    const frame = toDataFrame({ fields: [{ name: 'text', type: FieldType.string, values: ['x'] }] });
    expect(framesToMetricFindValues([frame])).toEqual([{ text: 'x', value: 'x' }]);
  });

  it('gives nothing for no frames', () => {
    expect(framesToMetricFindValues([])).toEqual([]);
  });
});
