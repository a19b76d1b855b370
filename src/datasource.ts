import { CoreApp, DataSourceInstanceSettings } from '@grafana/data';
import { DataSourceWithBackend } from '@grafana/runtime';

import { DEFAULT_QUERY, JobsightOptions, JobsightQuery } from './types';

/**
 * The Jobsight datasource in the browser. Queries and health checks go to the
 * plugin backend (gpx_jobsight) through Grafana; nothing is computed here.
 */
export class DataSource extends DataSourceWithBackend<JobsightQuery, JobsightOptions> {
  constructor(instanceSettings: DataSourceInstanceSettings<JobsightOptions>) {
    super(instanceSettings);
  }

  getDefaultQuery(_: CoreApp): Partial<JobsightQuery> {
    return DEFAULT_QUERY;
  }

  /** Queries without a query type are not sent to the backend. */
  filterQuery(query: JobsightQuery): boolean {
    return Boolean(query.queryType);
  }
}
