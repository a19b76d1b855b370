// The Jobsight datasource's data models. They mirror pkg/models (Go): keep the
// two in step — src/models.contract.ts and pkg/models/contract_test.go fail
// the build when they drift apart.
import { DataSourceJsonData, SelectableValue } from '@grafana/data';
import type { DataQuery } from '@grafana/schema';

/** What a panel query asks for; the same strings as models.QueryType in Go. */
export type QueryType =
  | 'jobs'
  | 'jobTimeline'
  | 'reservation'
  | 'allocation'
  | 'hogging'
  | 'usageHistory'
  | 'variable'
  | 'clusterSeries'
  | 'typicalRequest';

/** One choice of a select: a value with its label and description. */
export interface Choice<T> {
  value: T;
  label: string;
  description?: string;
}

/** Every query type with its label and description (models.KnownQueryTypes in Go). */
export const QUERY_TYPES: Array<Choice<QueryType> & { description: string }> = [
  { value: 'jobs', label: 'Jobs', description: 'Table of jobs overlapping the time range, filtered, sorted and paged' },
  {
    value: 'jobTimeline',
    label: 'Job timeline',
    description: "One job's usage series with its requested amounts as thresholds",
  },
  {
    value: 'reservation',
    label: 'Reservation vs usage',
    description: 'Reserved vs used CPU-, GPU-, memory-hours and walltime, per job or grouped',
  },
  {
    value: 'allocation',
    label: 'Allocation',
    description: "Cumulative usage against a cluster's or account's allocation",
  },
  {
    value: 'hogging',
    label: 'Hogging',
    description: 'Running jobs holding resources they have not used for a window (for alerting)',
  },
  {
    value: 'usageHistory',
    label: 'Usage history',
    description: 'Utilisation over time by user, account or partition, or by hour of week',
  },
  {
    value: 'typicalRequest',
    label: 'Typical request vs use',
    description: 'By kind of finished job: the typical request, the typical and largest use, and the advice for the next one',
  },
  { value: 'variable', label: 'Variable values', description: 'Clusters, users, accounts, partitions, jobs or nodes' },
  {
    value: 'clusterSeries',
    label: 'Cluster series',
    description: "Agent and cluster-state collector health (full access only), or partitions' contention",
  },
];

/** The series of the clusterSeries query (models.ClusterSeriesNames in Go). */
export const CLUSTER_SERIES = [
  'agent_samples',
  'agent_sample_seconds',
  'agent_collector_errors',
  'agent_collectors_failing',
  'agent_sink_failures',
  'agent_sink_refused',
  'agent_spool_bytes',
  'agent_spool_dropped',
  'agent_jobs_watched',
  'agent_wake_ms',
  'agent_send_queue',
  'agent_spool_waiting',
  'agent_unsaved_finals',
  'agent_accept_errors',
  'agent_processes_unheld',
  'clusterstate_poll_seconds',
  'clusterstate_poll_errors',
  'clusterstate_node_unreported_jobs',
  'clusterstate_unreported_jobs',
  'partition_pending_cpus',
  'partition_pending_gpus',
  'partition_pending_gpus_by_type',
  'partition_allocated_ratio',
] as const;

/** One series of the clusterSeries query. */
export type ClusterSeriesName = (typeof CLUSTER_SERIES)[number];

/** The query types a panel's query editor offers (variable is for the variable editor). */
export const PANEL_QUERY_TYPES = QUERY_TYPES.filter((t) => t.value !== 'variable');

/** Group-by values of Reservation and UsageHistory ('' is no grouping). */
export type GroupBy = '' | 'user' | 'account' | 'partition' | 'cluster' | 'class' | 'hourOfWeek';

/** The group-by choices; hourOfWeek is for usage history only, class for reservation only. */
export const GROUP_BY: Array<Choice<GroupBy>> = [
  { value: '', label: 'None', description: 'One row per job (reservation) or one series (usage history)' },
  { value: 'user', label: 'User' },
  { value: 'account', label: 'Account' },
  { value: 'partition', label: 'Partition' },
  { value: 'cluster', label: 'Cluster' },
  { value: 'class', label: 'Efficiency class', description: 'Finished jobs by their analysis class; running jobs as one row' },
  { value: 'hourOfWeek', label: 'Hour of week', description: 'Hour of day × day of week, heatmap-ready' },
];

/** Resources (Allocation, Hogging, UsageHistory). */
export type Resource = 'cpu' | 'gpu' | 'memory';

/** The resource choices. */
export const RESOURCES: Array<Choice<Resource>> = [
  { value: 'cpu', label: 'CPU' },
  { value: 'gpu', label: 'GPU' },
  { value: 'memory', label: 'Memory' },
];

/** Variable kinds (queryType variable). */
export type VariableKind = 'clusters' | 'users' | 'accounts' | 'partitions' | 'jobs' | 'nodes';

/** The variable kinds with their labels. */
export const VARIABLE_KINDS: Array<Choice<VariableKind>> = [
  { value: 'clusters', label: 'Clusters' },
  { value: 'users', label: 'Users' },
  { value: 'accounts', label: 'Accounts' },
  { value: 'partitions', label: 'Partitions' },
  { value: 'jobs', label: 'Jobs', description: 'Document ids of the jobs in the time range' },
  { value: 'nodes', label: 'Nodes', description: 'Nodes whose agents report (full access only)' },
];

/** Sort keys of the Jobs query (models.JobSortKeys in Go). */
export const JOB_SORT_KEYS = [
  'start_time',
  'end_time',
  'submit_time',
  'elapsed',
  'job_id',
  'user',
  'account',
  'partition',
  'state',
  'efficiency',
  'cpus',
  'gpus',
  'memory',
] as const;

/** One sort key of the Jobs query. */
export type JobSortKey = (typeof JOB_SORT_KEYS)[number];

/** Limits on one query (models.Max* and Default* in Go). */
export const QUERY_LIMITS = {
  maxLimit: 10000,
  maxFilterValues: 100,
  defaultLimit: 100,
  defaultWindowSeconds: 1800,
  defaultIdleThreshold: 0.05,
} as const;

/** The filter lists of a query; each matches any of its values, empty matches all. */
export type FilterKey = 'cluster' | 'user' | 'account' | 'partition' | 'state' | 'class';

/** Option-list kinds of the backend's resources/options route, per filter. */
export const FILTER_OPTION_KINDS: Record<FilterKey, OptionKind> = {
  cluster: 'clusters',
  user: 'users',
  account: 'accounts',
  partition: 'partitions',
  state: 'states',
  class: 'classes',
};

/** What GET resources/options?kind= lists. */
export type OptionKind = 'clusters' | 'users' | 'accounts' | 'partitions' | 'states' | 'classes';

/** The answer of GET resources/options. */
export interface OptionsResponse {
  values: string[];
}

/** One decision of GET resources/identity (pkg/plugin/whoami.go's Answer). */
export interface IdentityAnswer {
  authenticatedBy?: string;
  assumes?: string;
  allowed: boolean;
  refusal?: string;
  source?: 'role' | 'alertEngine' | 'idToken' | 'userHeaders';
  grafanaUserId?: string;
  grafanaUid?: string;
  rule?: string;
  slurmUser?: string;
  scope: 'all' | 'own' | 'none';
  piAccounts?: string[];
  summary: string;
}

/** The answer of GET resources/identity: whom the plugin maps the asking user to, and why. */
export interface IdentityResponse extends Partial<IdentityAnswer> {
  about: 'you' | 'named user';
  login?: string;
  role?: string;
  identitySource?: string;
  fullAccessRoles: string[];
  cases?: IdentityAnswer[];
  notes?: string[];
}

/** One panel query: models.Query in Go. Every field is optional. */
export interface JobsightQuery extends DataQuery {
  queryType?: QueryType;

  /** Slurm clusters; empty means the datasource's cluster filter, or all clusters. */
  cluster?: string[];
  user?: string[];
  account?: string[];
  partition?: string[];
  /** Slurm base states as stored (RUNNING, COMPLETED, FAILED, ...). */
  state?: string[];
  /** Efficiency classes (efficient, acceptable, inefficient, wasted, short, unknown). */
  class?: string[];
  /** Jobs whose name contains this (case-sensitive). */
  name?: string;

  /** One job: its document id ("<cluster>:<jobid>", "<cluster>:<jobid>@<submit>"), or a Slurm id ("1234", "1234_7", "1234+1") with cluster. */
  jobId?: string;

  /** Jobs: sorting and paging. */
  sortBy?: JobSortKey;
  sortDesc?: boolean;
  limit?: number;
  offset?: number;

  /** Job timeline: one series per node instead of the sum. */
  perNode?: boolean;

  /** Reservation, UsageHistory (hourOfWeek: usage history only; class: reservation only). */
  groupBy?: GroupBy;

  /** The dashboard's time zone (IANA name or UTC); set by the datasource from the request. */
  timezone?: string;

  /** Hogging: which to check (default all); UsageHistory and Allocation: the first (default cpu). */
  resources?: Resource[];

  /** Hogging: seconds a resource must have been unused (default 1800). */
  windowSeconds?: number;
  /** Hogging: utilisation below which a resource counts as unused (0–1, default 0.05). */
  idleThreshold?: number;
  /** Hogging: drop jobs whose partition's contention weight is below this (0–1, default 0). */
  minContention?: number;

  /** Variable: which values. */
  variable?: VariableKind;

  /** Cluster series: which series, and the nodes of the agent series (empty: all). */
  series?: ClusterSeriesName;
  node?: string[];
}

/** The query a new panel starts with. */
export const DEFAULT_QUERY: Partial<JobsightQuery> = {
  queryType: 'jobs',
};

/** The filter lists of a query with their labels. */
export const FILTERS: Array<{ key: FilterKey; label: string; tooltip: string }> = [
  { key: 'cluster', label: 'Cluster', tooltip: "Empty: the datasource's cluster filter, or all clusters" },
  { key: 'user', label: 'User', tooltip: 'Slurm users' },
  { key: 'account', label: 'Account', tooltip: 'Slurm accounts' },
  { key: 'partition', label: 'Partition', tooltip: 'Slurm partitions' },
  { key: 'state', label: 'State', tooltip: 'Slurm base states (RUNNING, COMPLETED, FAILED, ...)' },
  {
    key: 'class',
    label: 'Efficiency',
    tooltip: 'Efficiency classes (efficient, acceptable, inefficient, wasted, ...)',
  },
];

/** How a Grafana user is mapped to a Slurm user (models.UserMapping* in Go). */
export type UserMapping = 'login' | 'email' | 'emailLocalPart';

/** Where a restricted viewer's identity comes from (models.Identity* in Go). */
export type IdentitySource = 'idToken' | 'unverifiedLogin';

/** The user-mapping choices. */
export const USER_MAPPINGS: Array<Choice<UserMapping>> = [
  { value: 'login', label: 'Login', description: 'The Grafana login is the Slurm user name' },
  { value: 'email', label: 'Email', description: 'The whole email address is the Slurm user name' },
  { value: 'emailLocalPart', label: 'Email local part', description: 'The part of the email before the @' },
];

/** The identity-source choices. */
export const IDENTITY_SOURCES: Array<Choice<IdentitySource>> = [
  {
    value: 'idToken',
    label: "Grafana's signed ID token",
    description: 'Safe: logins only of accounts from an identity provider; any account by its user id',
  },
  {
    value: 'unverifiedLogin',
    label: 'Unverified login (unsafe)',
    description: 'The login Grafana passes: built-in accounts can rename themselves to anyone',
  },
];

/** A Grafana organisation role. */
export type GrafanaRole = 'Admin' | 'Editor' | 'Viewer';

/** The Grafana roles that may be given full access. */
export const GRAFANA_ROLES: GrafanaRole[] = ['Admin', 'Editor', 'Viewer'];

/** One allocation threshold: models.Allocation in Go. */
export interface Allocation {
  cluster: string;
  account?: string;
  resource: 'cpu' | 'gpu';
  /** Resource-hours per period. */
  hours: number;
  /** Length of the period in days (default 365). */
  periodDays?: number;
  /** Start of the period, a date (2026-01-01) or RFC 3339 time; default 1 January. */
  start?: string;
}

/** A partition's size for the Hogging contention fallback: models.Capacity in Go. */
export interface Capacity {
  cpus?: number;
  gpus?: number;
}

/** The datasource's jsonData: models.Settings in Go (without its secrets). */
export interface JobsightOptions extends DataSourceJsonData {
  elasticsearchUrl?: string;
  elasticsearchJobIndex?: string;
  elasticsearchNodeIndex?: string;
  elasticsearchUser?: string;
  prometheusUrl?: string;
  prometheusUser?: string;
  /** Tenant of a multi-tenant series store (Mimir, Thanos), sent on every Prometheus request. */
  prometheusTenant?: string;
  /** The header carrying prometheusTenant (default X-Scope-OrgID). */
  prometheusTenantHeader?: string;
  clusterFilter?: string;
  timeoutSeconds?: number;
  /** PEM CA bundle trusted for Elasticsearch, Prometheus and allocationsUrl, in addition to the system's CAs. */
  tlsCaCert?: string;
  /**
   * TLS trust per backend (docs/datasource.md, "TLS trust"): PEM CA bundles
   * added to the system's CAs and tlsCaCert, for that backend only.
   */
  elasticsearchTlsCaCert?: string;
  prometheusTlsCaCert?: string;
  /** For allocationsUrl (the cluster-state collector). */
  allocationsTlsCaCert?: string;
  /** For Grafana's signing keys only, added to the system's CAs; tlsCaCert is not used there. */
  grafanaTlsCaCert?: string;

  /** Access control. */
  userMapping?: UserMapping;
  /** Grafana login → Slurm user, overriding userMapping. */
  userMap?: Record<string, string>;
  /** Slurm account → the Slurm users who see all of its jobs. */
  accountPIs?: Record<string, string[]>;
  /** Grafana roles that see every job (default Admin, Editor). */
  fullAccessRoles?: GrafanaRole[];
  /**
   * Where a restricted viewer's identity comes from: Grafana's signed ID
   * token (default), or the login Grafana passes, which built-in accounts
   * can change (unsafe unless every account comes from an identity provider).
   */
  identitySource?: IdentitySource;
  /** The ID token's authenticatedBy values whose login is trusted (default ldap, auth.saml, jwt, oauth_*; authproxy only where the proxy refuses PUT /api/user). */
  trustedAuthMethods?: string[];
  /** Grafana user → Slurm user, by "user:<numeric id>" (the ID token's sub) or the uid alone (its identifier): safe for built-in accounts too. */
  userIdMap?: Record<string, string>;
  /** Grafana's base URL for its signing keys, when its root_url is not reachable from the server. */
  grafanaUrl?: string;
  /** Grafana's own switch (its first ID-forwarding releases, 10.3) to forward the ID token to this datasource. */
  forwardGrafanaIdToken?: boolean;

  /** Caps (default 10000 jobs, 20000 series). */
  maxJobs?: number;
  maxSeries?: number;
  /** Minutes without any update of a non-final job's documents after which it counts as ended, not running (default 30). */
  silentAfterMinutes?: number;

  allocations?: Allocation[];
  /** JSON endpoint serving {"allocations": [...]}. */
  allocationsUrl?: string;
  /** "cluster/partition" (or "partition") → capacity. */
  partitionCapacity?: Record<string, Capacity>;
  /** Job link target; ${cluster} and ${job_id} are replaced. */
  jobPageUrl?: string;
}

/** The datasource's secure fields, stored encrypted by Grafana: models.Secrets in Go. */
export interface JobsightSecureJsonData {
  elasticsearchPassword?: string;
  prometheusBearerToken?: string;
  prometheusPassword?: string;
  /** Bearer token allocationsUrl requires (the cluster-state collector's listen_token_file). */
  allocationsToken?: string;
}

/** Defaults applied by the backend when a setting is empty (models.Default* in Go). */
export const DEFAULTS = {
  elasticsearchJobIndex: 'jobsight-jobs',
  elasticsearchNodeIndex: 'jobsight-nodes',
  timeoutSeconds: 30,
  prometheusTenantHeader: 'X-Scope-OrgID',
  userMapping: 'login' as UserMapping,
  fullAccessRoles: ['Admin', 'Editor'] as GrafanaRole[],
  identitySource: 'idToken' as IdentitySource,
  trustedAuthMethods: ['ldap', 'auth.saml', 'jwt', 'oauth_*'],
  maxJobs: 10000,
  maxSeries: 20000,
  silentAfterMinutes: 30,
  periodDays: 365,
} as const;

/** Turns choices into the options a Grafana select takes. */
export function toOptions<T>(choices: Array<Choice<T>>): Array<SelectableValue<T>> {
  return choices.map((c) => ({ value: c.value, label: c.label, description: c.description }));
}
