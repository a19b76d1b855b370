package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
	// The IANA time zone database inside the executable, so that a
	// dashboard's time zone resolves on a host without /usr/share/zoneinfo.
	_ "time/tzdata"
)

// QueryType names what a panel query asks for. The values are the same
// strings as the QueryType union in src/types.ts.
type QueryType string

// The query types. docs/datasource.md documents each one's model and frames.
const (
	QueryTypeJobs         QueryType = "jobs"         // table of jobs overlapping the time range
	QueryTypeJobTimeline  QueryType = "jobTimeline"  // one job's series with its request as thresholds
	QueryTypeReservation  QueryType = "reservation"  // reserved vs used, per job or grouped
	QueryTypeAllocation   QueryType = "allocation"   // cumulative usage against an allocation
	QueryTypeHogging      QueryType = "hogging"      // running jobs holding unused resources
	QueryTypeUsageHistory QueryType = "usageHistory" // utilisation over time, or hour × weekday
	QueryTypeVariable     QueryType = "variable"     // values for a template variable
	// QueryTypeClusterSeries: one named series of the agents' and the
	// cluster-state collector's health, or of the partitions' contention
	// (ClusterSeriesNames), under the datasource's access rules.
	QueryTypeClusterSeries QueryType = "clusterSeries"
	// QueryTypeTypicalRequest: by kind of finished job, the typical
	// request against the typical use and the advice `jobsight advise`
	// gives for the next job of the kind.
	QueryTypeTypicalRequest QueryType = "typicalRequest"
)

// KnownQueryTypes returns every QueryType the frontend may send.
func KnownQueryTypes() []QueryType {
	return []QueryType{QueryTypeJobs, QueryTypeJobTimeline, QueryTypeReservation,
		QueryTypeAllocation, QueryTypeHogging, QueryTypeUsageHistory, QueryTypeVariable, QueryTypeClusterSeries, QueryTypeTypicalRequest}
}

// ClusterSeriesNames are the series the clusterSeries query serves (the
// same list as CLUSTER_SERIES in src/types.ts). The agent_* and
// clusterstate_* series describe nodes and the Jobsight processes on them:
// full-access viewers only. The partition_* series are per-partition
// numbers that name no user or job: every viewer.
var ClusterSeriesNames = []string{
	"agent_samples", "agent_sample_seconds", "agent_collector_errors", "agent_collectors_failing",
	"agent_sink_failures", "agent_sink_refused", "agent_spool_bytes", "agent_spool_dropped",
	"agent_jobs_watched", "agent_wake_ms", "agent_send_queue",
	"agent_spool_waiting", "agent_unsaved_finals", "agent_accept_errors", "agent_processes_unheld",
	"clusterstate_poll_seconds", "clusterstate_poll_errors",
	"clusterstate_node_unreported_jobs", "clusterstate_unreported_jobs",
	"partition_pending_cpus", "partition_pending_gpus", "partition_pending_gpus_by_type", "partition_allocated_ratio",
}

// GroupBy values (Reservation, UsageHistory).
const (
	GroupNone      = ""          // one row per job (Reservation) or one series (UsageHistory)
	GroupUser      = "user"      //
	GroupAccount   = "account"   //
	GroupPartition = "partition" //
	GroupCluster   = "cluster"   //
	// GroupClass (Reservation): one row per efficiency class
	// (analysis.class) of the finished jobs; running jobs, which have no
	// class yet, are the row "running".
	GroupClass = "class"
	// GroupHourOfWeek (UsageHistory only): one cell per hour of day × day
	// of week, heatmap-ready.
	GroupHourOfWeek = "hourOfWeek"
)

// Resources (Allocation, Hogging, UsageHistory).
const (
	ResourceCPU    = "cpu"
	ResourceGPU    = "gpu"
	ResourceMemory = "memory"
)

// Variable kinds (QueryTypeVariable).
const (
	VariableClusters   = "clusters"
	VariableUsers      = "users"
	VariableAccounts   = "accounts"
	VariablePartitions = "partitions"
	VariableJobs       = "jobs"
	// VariableNodes: the nodes whose agents report health (full-access
	// viewers only).
	VariableNodes = "nodes"
)

// Sort keys of the Jobs query.
var JobSortKeys = []string{"start_time", "end_time", "submit_time", "elapsed", "job_id", "user",
	"account", "partition", "state", "efficiency", "cpus", "gpus", "memory"}

// Limits on what one query may ask.
const (
	MaxLimit        = 10000 // rows of one Jobs page
	MaxFilterValues = 5000  // values of one multi-value filter (a dashboard's "All" sends every value)
	MaxFilterLength = 256   // bytes of one filter value
	DefaultLimit    = 100
	DefaultWindowS  = 1800 // Hogging: 30 min
)

// Query is the JSON model of one panel query (backend.DataQuery.JSON).
// Grafana's own keys (refId, datasource, hide, intervalMs, maxDataPoints,
// key) travel in the same object and are ignored here. Every field is
// optional; what a query type does not use, it ignores.
type Query struct {
	// QueryType selects the handler. Grafana copies it to
	// backend.DataQuery.QueryType as well.
	QueryType QueryType `json:"queryType,omitempty"`

	// Filters (Jobs, Reservation, UsageHistory, Allocation, Hogging,
	// Variable). Each list matches any of its values; an empty list
	// matches all. Values are matched exactly (name: substring).

	// Cluster restricts the query to these Slurm clusters; empty means the
	// datasource's clusterFilter, or all clusters.
	Cluster []string `json:"cluster,omitempty"`
	// User, Account, Partition: Slurm names.
	User      []string `json:"user,omitempty"`
	Account   []string `json:"account,omitempty"`
	Partition []string `json:"partition,omitempty"`
	// State: Slurm base states as stored (RUNNING, COMPLETED, FAILED, ...).
	State []string `json:"state,omitempty"`
	// Class: efficiency classes (efficient, acceptable, inefficient,
	// wasted, short, unknown).
	Class []string `json:"class,omitempty"`
	// Name matches jobs whose name contains it (case-sensitive).
	Name string `json:"name,omitempty"`

	// JobID is one job (Job timeline; a filter elsewhere): a
	// cluster-qualified id "<cluster>:<jobid>" or a Slurm id "1234",
	// "1234_7", "1234+1" together with Cluster.
	JobID string `json:"jobId,omitempty"`

	// Jobs: sorting and paging.
	SortBy   string `json:"sortBy,omitempty"`
	SortDesc bool   `json:"sortDesc,omitempty"`
	Limit    int    `json:"limit,omitempty"`
	Offset   int    `json:"offset,omitempty"`

	// PerNode (Job timeline): one series per node instead of the sum.
	PerNode bool `json:"perNode,omitempty"`

	// GroupBy (Reservation, UsageHistory): "", user, account, partition,
	// cluster; Reservation also class, UsageHistory also hourOfWeek.
	GroupBy string `json:"groupBy,omitempty"`
	// Timezone is the dashboard's time zone (an IANA name, or utc), which
	// the frontend copies from the request: hour-of-week cells and day
	// boundaries of usage history and allocations follow it.
	Timezone string `json:"timezone,omitempty"`

	// Resources (Hogging: which to check, default all three; UsageHistory
	// and Allocation: the first is used, default cpu).
	Resources []string `json:"resources,omitempty"`

	// Hogging: how long a resource must have been unused (seconds, default
	// 1800) and the utilisation below which it counts as unused (0–1,
	// default 0.05). MinContention drops jobs whose partition's contention
	// weight is below it (0–1, default 0: report all, weighted).
	WindowSeconds int      `json:"windowSeconds,omitempty"`
	IdleThreshold *float64 `json:"idleThreshold,omitempty"`
	MinContention *float64 `json:"minContention,omitempty"`

	// Variable: which values (clusters, users, accounts, partitions, jobs,
	// nodes).
	Variable string `json:"variable,omitempty"`

	// ClusterSeries: which series (one of ClusterSeriesNames), and the
	// nodes it is limited to (agent series; empty: all).
	Series string   `json:"series,omitempty"`
	Node   []string `json:"node,omitempty"`
}

// Validation patterns for the values that name things.
var (
	slurmJobIDPattern = regexp.MustCompile(`^[0-9]{1,10}([_+][0-9]{1,10})?$`)
)

// ParseQuery decodes a query's JSON model strictly enough to name a wrong
// value: an unknown key is ignored (Grafana adds its own), a key of the
// wrong JSON type is an error naming it. Empty input is an empty query.
// Grafana's own keys are accepted.
func ParseQuery(raw []byte) (Query, error) {
	var q Query
	if len(bytes.TrimSpace(raw)) == 0 {
		return q, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&q); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return Query{}, fmt.Errorf("query field %s must be %s, got a JSON %s", typeErr.Field, jsonKind(typeErr.Type.Kind()), typeErr.Value)
		}
		return Query{}, fmt.Errorf("decoding the query model: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Query{}, fmt.Errorf("decoding the query model: trailing data after the JSON object")
	}
	return q, nil
}

// Validate checks the values of a query for its type and applies
// defaults. The error names the field and the value at fault (quoted, so
// a hostile value cannot break the message).
func (q *Query) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if q.QueryType == "" {
		add("no query type selected (one of %s)", knownTypeList())
	} else if !knownType(q.QueryType) {
		add("queryType %q is unknown (one of %s)", string(q.QueryType), knownTypeList())
	}
	lists := map[string][]string{"cluster": q.Cluster, "user": q.User, "account": q.Account,
		"partition": q.Partition, "state": q.State, "class": q.Class, "node": q.Node}
	for _, name := range []string{"cluster", "user", "account", "partition", "state", "class", "node"} {
		vals := lists[name]
		if len(vals) > MaxFilterValues {
			add("%s has %d values; at most %d", name, len(vals), MaxFilterValues)
		}
		for _, v := range vals {
			if p := checkFilterValue(v); p != "" {
				add("%s value %q %s", name, clip(v), p)
			}
		}
	}
	if p := checkFilterValue(q.Name); p != "" && q.Name != "" {
		add("name %q %s", clip(q.Name), p)
	}
	if q.JobID != "" {
		if _, _, err := SplitJobID(q.JobID); err != nil {
			errs = append(errs, err)
		}
	}
	if q.QueryType == QueryTypeJobTimeline && q.JobID == "" {
		add("jobId is required for a job timeline (e.g. \"mycluster:1234\")")
	}
	if q.SortBy != "" && !contains(JobSortKeys, q.SortBy) {
		add("sortBy %q is unknown (one of %s)", clip(q.SortBy), strings.Join(JobSortKeys, ", "))
	}
	if q.Limit == 0 {
		q.Limit = DefaultLimit
	}
	if q.Limit < 0 || q.Limit > MaxLimit {
		add("limit must be between 1 and %d, got %d", MaxLimit, q.Limit)
	}
	if q.Offset < 0 || q.Offset > MaxLimit {
		add("offset must be between 0 and %d, got %d", MaxLimit, q.Offset)
	}
	switch q.GroupBy {
	case GroupNone, GroupUser, GroupAccount, GroupPartition, GroupCluster:
	case GroupHourOfWeek:
		if q.QueryType != QueryTypeUsageHistory {
			add("groupBy %q is for usage history only", q.GroupBy)
		}
	case GroupClass:
		if q.QueryType != QueryTypeReservation {
			add("groupBy %q is for reservation only", q.GroupBy)
		}
	default:
		add("groupBy %q is unknown (one of user, account, partition, cluster, class, hourOfWeek)", clip(q.GroupBy))
	}
	if _, err := q.Location(); err != nil {
		errs = append(errs, err)
	}
	for _, r := range q.Resources {
		if r != ResourceCPU && r != ResourceGPU && r != ResourceMemory {
			add("resource %q is unknown (one of cpu, gpu, memory)", clip(r))
		}
	}
	if q.WindowSeconds == 0 {
		q.WindowSeconds = DefaultWindowS
	}
	if q.WindowSeconds < 60 || q.WindowSeconds > 7*24*3600 {
		add("windowSeconds must be between 60 and 604800, got %d", q.WindowSeconds)
	}
	if q.IdleThreshold != nil && (*q.IdleThreshold < 0 || *q.IdleThreshold > 1) {
		add("idleThreshold must be between 0 and 1, got %g", *q.IdleThreshold)
	}
	if q.MinContention != nil && (*q.MinContention < 0 || *q.MinContention > 1) {
		add("minContention must be between 0 and 1, got %g", *q.MinContention)
	}
	if q.QueryType == QueryTypeVariable {
		switch q.Variable {
		case VariableClusters, VariableUsers, VariableAccounts, VariablePartitions, VariableJobs, VariableNodes:
		case "":
			add("variable is required (one of clusters, users, accounts, partitions, jobs, nodes)")
		default:
			add("variable %q is unknown (one of clusters, users, accounts, partitions, jobs, nodes)", clip(q.Variable))
		}
	}
	if q.QueryType == QueryTypeClusterSeries {
		switch {
		case q.Series == "":
			add("series is required for cluster series (one of %s)", strings.Join(ClusterSeriesNames, ", "))
		case !contains(ClusterSeriesNames, q.Series):
			add("series %q is unknown (one of %s)", clip(q.Series), strings.Join(ClusterSeriesNames, ", "))
		}
	}
	return errors.Join(errs...)
}

// Location is the dashboard's time zone (Timezone): UTC when empty,
// "utc" or "browser" (the frontend resolves "browser" to the browser's
// IANA zone before sending; one that could not be resolved means UTC).
func (q *Query) Location() (*time.Location, error) {
	switch strings.ToLower(q.Timezone) {
	case "", "utc", "browser":
		return time.UTC, nil
	}
	if len(q.Timezone) > 64 {
		return nil, fmt.Errorf("timezone is longer than 64 bytes")
	}
	loc, err := time.LoadLocation(q.Timezone)
	if err != nil {
		return nil, fmt.Errorf("timezone %q is not an IANA time zone (e.g. Europe/Berlin) or utc", clip(q.Timezone))
	}
	return loc, nil
}

// Resource returns the first of Resources, or cpu.
func (q *Query) Resource() string {
	if len(q.Resources) > 0 {
		return q.Resources[0]
	}
	return ResourceCPU
}

// SplitJobID splits a job reference into its cluster ("" when not
// qualified) and Slurm job id, and checks both. A document id of a job
// whose Slurm id was reused ("<cluster>:<id>@<submit time>") is accepted;
// see ParseJobRef for its suffix.
func SplitJobID(ref string) (cluster, jobID string, err error) {
	cluster, jobID, _, err = ParseJobRef(ref)
	return cluster, jobID, err
}

// reuseSuffix is the submit-time suffix of a reused id's document id
// (jobmodel.ReuseDocID).
var reuseSuffix = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z$`)

// ParseJobRef is SplitJobID that also returns the submit-time suffix of a
// reused id's document id ("" for a plain reference). A suffix needs the
// cluster in the reference.
func ParseJobRef(ref string) (cluster, jobID, suffix string, err error) {
	if i := strings.LastIndexByte(ref, '@'); i >= 0 {
		suffix = ref[i+1:]
		ref = ref[:i]
		if !reuseSuffix.MatchString(suffix) || !strings.Contains(ref, ":") {
			return "", "", "", fmt.Errorf("jobId %q: after @ must come a submit time such as 20261123T101500Z, and the reference must name its cluster", clip(ref+"@"+suffix))
		}
	}
	cl, id, err := splitPlain(ref)
	return cl, id, suffix, err
}

func splitPlain(ref string) (cluster, jobID string, err error) {
	jobID = ref
	if i := strings.LastIndexByte(ref, ':'); i >= 0 {
		cluster, jobID = ref[:i], ref[i+1:]
		if p := checkFilterValue(cluster); p != "" || cluster == "" {
			return "", "", fmt.Errorf("jobId %q: the cluster part is not a valid cluster name", clip(ref))
		}
	}
	if !slurmJobIDPattern.MatchString(jobID) {
		return "", "", fmt.Errorf("jobId %q is not a Slurm job id (e.g. \"1234\", \"1234_7\", \"1234+1\", or \"mycluster:1234\")", clip(ref))
	}
	return cluster, jobID, nil
}

// checkFilterValue returns what is wrong with a filter value, or "".
func checkFilterValue(v string) string {
	switch {
	case v == "":
		return "is empty"
	case len(v) > MaxFilterLength:
		return fmt.Sprintf("is %d bytes long; at most %d", len(v), MaxFilterLength)
	case strings.ContainsAny(v, "\x00\n\r"):
		return "contains a control character"
	}
	return ""
}

// clip shortens a value for an error message.
func clip(v string) string {
	if len(v) > 64 {
		return v[:64] + "…"
	}
	return v
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func knownType(t QueryType) bool {
	for _, k := range KnownQueryTypes() {
		if k == t {
			return true
		}
	}
	return false
}

func knownTypeList() string {
	var names []string
	for _, t := range KnownQueryTypes() {
		names = append(names, string(t))
	}
	return strings.Join(names, ", ")
}
