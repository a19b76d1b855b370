// The instance settings Grafana gives the Jobsight datasource, for the jest
// tests and the editors' browser host page (test/editors): no backend
// behind them.
import { DataSourceInstanceSettings, PluginType } from '@grafana/data';

import { JobsightOptions } from '../types';

/** The settings Grafana would give the datasource. */
export const instanceSettings: DataSourceInstanceSettings<JobsightOptions> = {
  // Deprecated (to go in Grafana 13's types) but still part of the settings Grafana 11 and 12 give.
  // eslint-disable-next-line @typescript-eslint/no-deprecated
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
