import {
  CoreApp,
  DataQueryRequest,
  DataQueryResponse,
  DataSourceInstanceSettings,
  dateTime,
  MetricFindValue,
  ScopedVars,
  TimeRange,
} from '@grafana/data';
import { DataSourceWithBackend, getTemplateSrv } from '@grafana/runtime';
import { lastValueFrom, Observable } from 'rxjs';

import { resolveTimeZone } from './timezone';
import {
  DEFAULT_QUERY,
  IdentityResponse,
  JobsightOptions,
  JobsightQuery,
  OptionKind,
  OptionsResponse,
} from './types';
import { expandList, framesToMetricFindValues, interpolateQuery } from './variables';

/**
 * The Jobsight datasource in the browser. Queries and health checks go to the
 * plugin backend (gpx_jobsight) through Grafana; nothing is computed here
 * beyond template-variable interpolation.
 */
export class DataSource extends DataSourceWithBackend<JobsightQuery, JobsightOptions> {
  constructor(instanceSettings: DataSourceInstanceSettings<JobsightOptions>) {
    super(instanceSettings);
  }

  getDefaultQuery(_: CoreApp): Partial<JobsightQuery> {
    return DEFAULT_QUERY;
  }

  /**
   * Every query carries the dashboard's time zone: hour-of-week cells and
   * day boundaries follow it.
   */
  query(request: DataQueryRequest<JobsightQuery>): Observable<DataQueryResponse> {
    const timezone = resolveTimeZone(request.timezone);
    return super.query({ ...request, targets: request.targets.map((t) => ({ ...t, timezone })) });
  }

  /** Queries without a query type are not sent to the backend. */
  filterQuery(query: JobsightQuery): boolean {
    return Boolean(query.queryType);
  }

  /**
   * Interpolates template variables in every string field; a multi-value
   * variable in a filter list becomes one element per value.
   */
  applyTemplateVariables(query: JobsightQuery, scopedVars: ScopedVars): JobsightQuery {
    return interpolateQuery(query, scopedVars, getTemplateSrv());
  }

  /**
   * The values the editors offer for a filter, from the backend's
   * resources/options route; cluster (optional, may be a variable) narrows
   * them to one cluster. An error or an odd answer gives no values: the
   * editors still take typed values.
   */
  async getOptions(kind: OptionKind, cluster?: string): Promise<string[]> {
    const params: Record<string, string> = { kind };
    // Narrow only to one known cluster: a multi-value or unknown variable
    // lists the values of all clusters.
    const clusters = cluster ? expandList([cluster], {}, getTemplateSrv()) : [];
    if (clusters.length === 1 && !clusters[0].includes('$')) {
      params.cluster = clusters[0];
    }
    const res: OptionsResponse = await this.getResource('options', params);
    return Array.isArray(res?.values) ? res.values.filter((v) => typeof v === 'string') : [];
  }

  /**
   * Whom the backend maps the signed-in user to, and why, or why not (the
   * refusal their queries get): GET resources/identity.
   */
  async getIdentity(): Promise<IdentityResponse> {
    return this.getResource('identity');
  }

  /**
   * Values of a template variable: runs a backend query of type variable and
   * maps its frame (string fields "text" and "value").
   */
  async metricFindQuery(
    query: Partial<JobsightQuery> | string,
    options?: { range?: TimeRange; scopedVars?: ScopedVars }
  ): Promise<MetricFindValue[]> {
    if (typeof query === 'string' || !query?.variable) {
      return [];
    }
    const range = options?.range ?? defaultRange();
    const target: JobsightQuery = { ...query, refId: 'jobsight-variable', queryType: 'variable' };
    const request = {
      targets: [target],
      range,
      rangeRaw: range.raw,
      scopedVars: options?.scopedVars ?? {},
      // Grafana cancels an in-flight request when another comes with the
      // same requestId: variables refreshed together (user, account and
      // partition after cluster) each need their own.
      requestId: `jobsight-variable-${++variableRequests}`,
      interval: '1m',
      intervalMs: 60000,
      timezone: 'browser',
      app: CoreApp.Unknown,
      startTime: Date.now(),
    } as DataQueryRequest<JobsightQuery>;
    const response = await lastValueFrom(this.query(request));
    // errors lists every failed query; Grafana's runtime still sets only the
    // deprecated error when the request itself failed (an HTTP error).
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    const error = response.errors?.[0] ?? response.error;
    if (error) {
      throw new Error(error.message ?? 'variable query failed');
    }
    return framesToMetricFindValues(response.data ?? []);
  }
}

/** Variable queries sent so far, for unique request ids. */
let variableRequests = 0;

/** The last 24 hours, for variable queries run without a dashboard range. */
function defaultRange(): TimeRange {
  const to = dateTime();
  const from = dateTime(to).subtract(24, 'hours');
  return { from, to, raw: { from: 'now-24h', to: 'now' } };
}
