package clusterstate

import (
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jobsight/jobsight/internal/store/promremote"
)

// Series names: the contract the datasource's Hogging query reads
// (docs/metrics.md, "Cluster state").
const (
	MetricPartitionCPUs        = "jobsight_partition_cpus"
	MetricPartitionGPUs        = "jobsight_partition_gpus"
	MetricPartitionPendingJobs = "jobsight_partition_pending_jobs"
	MetricPartitionPendingCPUs = "jobsight_partition_pending_cpus"
	MetricPartitionPendingGPUs = "jobsight_partition_pending_gpus"
	// MetricPartitionPendingGPUsByType splits it by the GPU type asked for.
	MetricPartitionPendingGPUsByType = "jobsight_partition_pending_gpus_by_type"
	MetricPartitionRatio             = "jobsight_partition_allocated_ratio"
	MetricNodeState                  = "jobsight_node_state"
	MetricNodeCPUs                   = "jobsight_node_cpus"
	MetricNodeMemory                 = "jobsight_node_memory_bytes"
	MetricNodeGPUs                   = "jobsight_node_gpus"
	// MetricNodeUnreportedJobs is per node, only nodes with such jobs;
	// MetricUnreportedJobs the cluster's total, written whenever the
	// check ran (0 included). Both are absent for a poll whose check
	// could not read the store.
	MetricNodeUnreportedJobs = "jobsight_cluster_node_unreported_jobs"
	MetricUnreportedJobs     = "jobsight_cluster_unreported_jobs"
	MetricPollDuration       = "jobsight_clusterstate_poll_duration_seconds"
	MetricSlurmCalls         = "jobsight_clusterstate_slurm_calls_total"
	MetricPollErrors         = "jobsight_clusterstate_poll_errors_total"
	// MetricLastSuccess is when a poll last read Slurm whole: after failed
	// polls the cluster's series keep their last good values, and this
	// says how old they are.
	MetricLastSuccess = "jobsight_clusterstate_last_success_timestamp_seconds"
	// MetricQueueAge is how old the queue's reading behind the partition
	// series is (queue_cpu_budget: 0 when read at this poll).
	MetricQueueAge = "jobsight_clusterstate_queue_age_seconds"
)

// MetricHelp gives each series' Prometheus type and help text (for
// promtool and readers of docs/metrics.md).
var MetricHelp = map[string][2]string{
	MetricPartitionCPUs:              {"gauge", "CPUs of the partition's nodes by state (total, allocated, idle, unavailable)."},
	MetricPartitionGPUs:              {"gauge", "GPUs of the partition's nodes by state (total, allocated, idle, unavailable)."},
	MetricPartitionPendingJobs:       {"gauge", "Jobs waiting for resources or priority in the partition."},
	MetricPartitionPendingCPUs:       {"gauge", "CPUs the partition's pending jobs ask for."},
	MetricPartitionPendingGPUs:       {"gauge", "GPUs the partition's pending jobs ask for."},
	MetricPartitionPendingGPUsByType: {"gauge", "GPUs the partition's pending jobs ask for, by the type asked for (any: no type)."},
	MetricPartitionRatio:             {"gauge", "Allocated share of the partition's usable CPUs or GPUs."},
	MetricNodeState:                  {"gauge", "1 for each base state and flag the node has."},
	MetricNodeCPUs:                   {"gauge", "The node's CPUs by state."},
	MetricNodeMemory:                 {"gauge", "The node's memory by state."},
	MetricNodeGPUs:                   {"gauge", "The node's GPUs of one type by state."},
	MetricNodeUnreportedJobs:         {"gauge", "Running jobs on the node without its agent's node document (past unmonitored_after)."},
	MetricUnreportedJobs:             {"gauge", "Running jobs missing an agent's node document from at least one of their nodes."},
	MetricPollDuration:               {"gauge", "Seconds the last poll took."},
	MetricSlurmCalls:                 {"counter", "Slurm commands the collector started."},
	MetricPollErrors:                 {"counter", "Polls that could not read Slurm."},
	MetricLastSuccess:                {"gauge", "When a poll last read Slurm whole (Unix time); the cluster's series are that old."},
}

// staleNaN is Prometheus' staleness marker: a series the cluster no longer
// has (a node left a state, a partition was removed) ends at once instead
// of lingering five minutes in instant queries.
var staleNaN = math.Float64frombits(0x7ff0000000000002)

// Health is the collector's own counters, sent with every poll.
type Health struct {
	PollSeconds float64
	SlurmCalls  uint64
	PollErrors  uint64
	// LastSuccess is when a poll last read Slurm whole; zero: never.
	LastSuccess time.Time
}

// seriesBuilder appends series sharing one timestamp.
type seriesBuilder struct {
	ts  int64
	out []promremote.Series
}

func (b *seriesBuilder) add(name string, v float64, labels ...string) {
	ls := make([]promremote.Label, 0, len(labels)/2)
	for i := 0; i+1 < len(labels); i += 2 {
		ls = append(ls, promremote.Label{Name: labels[i], Value: labels[i+1]})
	}
	b.out = append(b.out, promremote.Series{Name: name, Labels: ls,
		Samples: []promremote.Sample{{TimestampMs: b.ts, Value: v}}})
}

func (b *seriesBuilder) amount(name string, a Amount, labels ...string) {
	for _, st := range [...]struct {
		state string
		v     int64
	}{{"total", a.Total}, {"allocated", a.Allocated}, {"idle", a.Idle}, {"unavailable", a.Unavailable}} {
		b.add(name, float64(st.v), append(labels, "state", st.state)...)
	}
}

// Series turns a snapshot into the series of docs/metrics.md (the
// unreported-jobs series only when s.Unreported is set). Labels are
// bounded: cluster, partition, node, state (Slurm's fixed set of states
// and flags, or total|allocated|idle|unavailable), type (GPU types) and
// resource (cpu|gpu). perNode false leaves the node series out.
func Series(s *Snapshot, h Health, perNode bool) []promremote.Series {
	b := &seriesBuilder{ts: s.Time.UnixMilli()}
	c := s.Cluster
	for i := range s.Partitions {
		p := &s.Partitions[i]
		b.amount(MetricPartitionCPUs, p.CPUs, "cluster", c, "partition", p.Name)
		b.amount(MetricPartitionGPUs, p.GPUs, "cluster", c, "partition", p.Name)
		b.add(MetricPartitionPendingJobs, float64(p.PendingJobs), "cluster", c, "partition", p.Name)
		b.add(MetricPartitionPendingCPUs, float64(p.PendingCPUs), "cluster", c, "partition", p.Name)
		b.add(MetricPartitionPendingGPUs, float64(p.PendingGPUs), "cluster", c, "partition", p.Name)
		for _, t := range slices.Sorted(maps.Keys(p.PendingGPUsByType)) {
			b.add(MetricPartitionPendingGPUsByType, float64(p.PendingGPUsByType[t]), "cluster", c, "partition", p.Name, "type", t)
		}
		if r, ok := p.CPUs.AllocatedRatio(); ok {
			b.add(MetricPartitionRatio, r, "cluster", c, "partition", p.Name, "resource", "cpu")
		}
		if r, ok := p.GPUs.AllocatedRatio(); ok {
			b.add(MetricPartitionRatio, r, "cluster", c, "partition", p.Name, "resource", "gpu")
		}
	}
	if perNode {
		for i := range s.Nodes {
			n := &s.Nodes[i]
			for _, st := range n.States {
				b.add(MetricNodeState, 1, "cluster", c, "node", n.Name, "state", st)
			}
			b.amount(MetricNodeCPUs, n.CPUs, "cluster", c, "node", n.Name)
			b.amount(MetricNodeMemory, n.MemoryBytes, "cluster", c, "node", n.Name)
			for t, g := range n.GPUs {
				b.amount(MetricNodeGPUs, g, "cluster", c, "node", n.Name, "type", t)
			}
		}
	}
	// Not behind perNode: a health signal, and few nodes have it.
	if u := s.Unreported; u != nil {
		b.add(MetricUnreportedJobs, float64(u.Jobs), "cluster", c)
		for _, n := range u.Nodes {
			b.add(MetricNodeUnreportedJobs, float64(n.Jobs), "cluster", c, "node", n.Node)
		}
	}
	if !s.QueueTime.IsZero() {
		b.add(MetricQueueAge, s.Time.Sub(s.QueueTime).Seconds(), "cluster", c)
	}
	b.add(MetricPollDuration, h.PollSeconds, "cluster", c)
	b.add(MetricSlurmCalls, float64(h.SlurmCalls), "cluster", c)
	b.add(MetricPollErrors, float64(h.PollErrors), "cluster", c)
	if !h.LastSuccess.IsZero() {
		b.add(MetricLastSuccess, float64(h.LastSuccess.UnixMilli())/1000, "cluster", c)
	}
	return b.out
}

// staleness remembers which series the last batch held, to end those the
// next batch lacks.
type staleness struct {
	last map[string]promremote.Series
}

// seriesKey identifies a series by name and labels (in the order built).
func seriesKey(s promremote.Series) string {
	var b strings.Builder
	b.WriteString(s.Name)
	for _, l := range s.Labels {
		b.WriteByte(0)
		b.WriteString(l.Name)
		b.WriteByte(0)
		b.WriteString(l.Value)
	}
	return b.String()
}

// mark appends a staleness marker at tsMs for every series of the previous
// batch that series lacks, and remembers series for the next call.
func (st *staleness) mark(series []promremote.Series, tsMs int64) []promremote.Series {
	now := make(map[string]promremote.Series, len(series))
	for _, s := range series {
		now[seriesKey(s)] = promremote.Series{Name: s.Name, Labels: s.Labels}
	}
	for k, s := range st.last {
		if _, ok := now[k]; !ok {
			s.Samples = []promremote.Sample{{TimestampMs: tsMs, Value: staleNaN}}
			series = append(series, s)
		}
	}
	st.last = now
	return series
}
