// A Jobsight DataSource for tests, its backend calls replaced by mocks.
import { DataSourceInstanceSettings, PluginType } from '@grafana/data';

import { DataSource } from '../datasource';
import { JobsightOptions, OptionKind } from '../types';

/** The settings Grafana would give the datasource. */
export const instanceSettings: DataSourceInstanceSettings<JobsightOptions> = {
  id: 1,
  uid: 'jobsight',
  type: 'jobsight-slurm-datasource',
  name: 'Jobsight',
  access: 'proxy',
  readOnly: false,
  jsonData: {},
  meta: {
    id: 'jobsight-slurm-datasource',
    name: 'Jobsight',
    type: PluginType.datasource,
    module: '',
    baseUrl: '',
    info: {
      author: { name: 'Jobsight' },
      description: '',
      links: [],
      logos: { small: '', large: '' },
      screenshots: [],
      updated: '',
      version: '',
    },
  },
};

/**
 * A DataSource whose resources/options route answers from options (per kind;
 * a kind not listed answers with no values). The returned mock records every
 * getResource call.
 */
export function mockDataSource(options: Partial<Record<OptionKind, string[]>> = {}) {
  const ds = new DataSource(instanceSettings);
  const getResource = jest
    .spyOn(ds, 'getResource')
    .mockImplementation(async (path: string, params?: Record<string, unknown>) => {
      if (path !== 'options') {
        throw new Error(`unexpected resource ${path}`);
      }
      return { values: options[params?.kind as OptionKind] ?? [] };
    });
  return { ds, getResource };
}
