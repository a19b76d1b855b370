// The Jobsight datasource's data models. They mirror pkg/models (Go): keep the
// two in step — src/models.contract.ts and pkg/models/contract_test.go fail
// the build when they drift apart.
import { DataQuery, DataSourceJsonData } from '@grafana/data';

/** What a panel query asks for; the same strings as models.QueryType in Go. */
export type QueryType = 'jobs' | 'jobTimeline';

/** The query types offered in the query editor, with their labels. */
export const QUERY_TYPES: Array<{ value: QueryType; label: string; description: string }> = [
  { value: 'jobs', label: 'Jobs', description: 'Job list from the Elasticsearch job index' },
  { value: 'jobTimeline', label: 'Job timeline', description: "One job's usage series over time" },
];

/** One panel query: models.Query in Go. */
export interface JobsightQuery extends DataQuery {
  queryType?: QueryType;
  /** Restrict to one Slurm cluster; empty means the datasource's cluster filter, or all. */
  cluster?: string;
  /** One Slurm job id as Slurm prints it: "1234", "1234_7", "1234+1". */
  jobId?: string;
}

/** The query a new panel starts with. */
export const DEFAULT_QUERY: Partial<JobsightQuery> = {
  queryType: 'jobs',
};

/** The datasource's jsonData: models.Settings in Go (without its secrets). */
export interface JobsightOptions extends DataSourceJsonData {
  elasticsearchUrl?: string;
  elasticsearchJobIndex?: string;
  elasticsearchNodeIndex?: string;
  elasticsearchUser?: string;
  prometheusUrl?: string;
  prometheusUser?: string;
  clusterFilter?: string;
  timeoutSeconds?: number;
}

/** The datasource's secure fields, stored encrypted by Grafana: models.Secrets in Go. */
export interface JobsightSecureJsonData {
  elasticsearchPassword?: string;
  prometheusBearerToken?: string;
  prometheusPassword?: string;
}

/** Defaults applied by the backend when a setting is empty (models.Default* in Go). */
export const DEFAULTS = {
  elasticsearchJobIndex: 'jobsight-jobs',
  elasticsearchNodeIndex: 'jobsight-nodes',
  timeoutSeconds: 30,
} as const;
