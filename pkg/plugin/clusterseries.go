package plugin

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// The clusterSeries query: the agents' and the cluster-state collector's
// health, and the partitions' contention, as the shipped dashboards draw
// them, without a raw Prometheus datasource (which would hand every
// viewer every job's series: Grafana OSS has no per-datasource
// permissions). Only the fixed expressions below run; none reads a
// jobsight_job_* series.

// clusterSeries is one named series: its PromQL built from the matchers
// (sel: cluster, node and partition matchers, without braces) and the rate
// window, how each resulting series is named (legend: label names in {}),
// its unit, and whether restricted viewers may read it.
type clusterSeries struct {
	expr   func(sel func(metric string) string, win string) string
	legend string
	unit   string
	// everyone: per-partition numbers that name no user or job. Otherwise
	// node and agent internals, for full-access viewers only.
	everyone bool
	// byNode: the series has a node label (the node filter applies).
	byNode bool
}

var clusterSeriesCatalogue = map[string]clusterSeries{
	"agent_samples": {byNode: true, legend: "{cluster}/{node}", unit: "hertz", expr: func(sel func(string) string, win string) string {
		return "sum by (cluster, node) (rate(" + sel("jobsight_agent_samples_total") + "[" + win + "]))"
	}},
	"agent_sample_seconds": {byNode: true, legend: "{cluster}/{node}", unit: "s", expr: func(sel func(string) string, win string) string {
		return "sum by (cluster, node) (rate(" + sel("jobsight_agent_sample_duration_seconds_total") + "[" + win + "])) / sum by (cluster, node) (rate(" + sel("jobsight_agent_samples_total") + "[" + win + "]))"
	}},
	"agent_collector_errors": {byNode: true, legend: "{cluster}/{node} {collector}", unit: "short", expr: func(sel func(string) string, win string) string {
		return "sum by (cluster, node, collector) (rate(" + sel("jobsight_agent_collector_errors_total") + "[" + win + "]))"
	}},
	"agent_collectors_failing": {byNode: true, legend: "{cluster}/{node} {collector}", unit: "short", expr: func(sel func(string) string, _ string) string {
		return "1 - min by (cluster, node, collector) (" + sel("jobsight_agent_collector_success") + ")"
	}},
	"agent_sink_failures": {byNode: true, legend: "{cluster}/{node} {sink}", unit: "short", expr: func(sel func(string) string, win string) string {
		return "sum by (cluster, node, sink) (increase(" + sel("jobsight_agent_sink_failures_total") + "[" + win + "]))"
	}},
	"agent_sink_refused": {byNode: true, legend: "{cluster}/{node} {sink}", unit: "short", expr: func(sel func(string) string, win string) string {
		return "sum by (cluster, node, sink) (increase(" + sel("jobsight_agent_sink_refused_total") + "[" + win + "]))"
	}},
	"agent_spool_bytes": {byNode: true, legend: "{cluster}/{node}", unit: "bytes", expr: func(sel func(string) string, _ string) string {
		return "max by (cluster, node) (" + sel("jobsight_agent_spool_bytes") + ")"
	}},
	"agent_spool_dropped": {byNode: true, legend: "{cluster}/{node} {kind}{reason}", unit: "short", expr: func(sel func(string) string, win string) string {
		return "sum by (cluster, node, kind) (increase(" + sel("jobsight_agent_spool_dropped_total") + "[" + win + "])) or sum by (cluster, node, reason) (increase(" + sel("jobsight_agent_spool_set_aside_total") + "[" + win + "]))"
	}},
	"agent_jobs_watched": {byNode: true, legend: "{node} jobs", unit: "short", expr: func(sel func(string) string, _ string) string {
		return "max by (cluster, node) (" + sel("jobsight_agent_jobs_watched") + ")"
	}},
	"agent_wake_ms": {byNode: true, legend: "{node} wake ms", unit: "ms", expr: func(sel func(string) string, _ string) string {
		return "max by (cluster, node) (" + sel("jobsight_agent_wake_duration_seconds") + ") * 1000"
	}},
	"agent_send_queue": {byNode: true, legend: "{node}", unit: "short", expr: func(sel func(string) string, _ string) string {
		return "max by (cluster, node) (" + sel("jobsight_agent_send_queue_points") + ")"
	}},
	"agent_spool_waiting": {byNode: true, legend: "{node} {sink} {reason}", unit: "short", expr: func(sel func(string) string, _ string) string {
		return "max by (cluster, node, sink, reason) (" + sel("jobsight_agent_spool_waiting_items") + ")"
	}},
	"agent_unsaved_finals": {byNode: true, legend: "{node} final jobs not yet safe", unit: "short", expr: func(sel func(string) string, _ string) string {
		return "max by (cluster, node) (" + sel("jobsight_agent_unsaved_final_jobs") + ")"
	}},
	"agent_accept_errors": {byNode: true, legend: "{node} failed accepts", unit: "short", expr: func(sel func(string) string, win string) string {
		return "sum by (cluster, node) (increase(" + sel("jobsight_agent_accept_errors_total") + "[" + win + "]))"
	}},
	"agent_processes_unheld": {byNode: true, legend: "{node} processes over the open-file cap", unit: "short", expr: func(sel func(string) string, _ string) string {
		return "max by (cluster, node) (" + sel("jobsight_agent_processes_unheld") + ")"
	}},
	"clusterstate_poll_seconds": {legend: "{cluster} poll time", unit: "s", expr: func(sel func(string) string, _ string) string {
		return "max by (cluster) (" + sel("jobsight_clusterstate_poll_duration_seconds") + ")"
	}},
	// Running jobs without an agent's node document (a SPANK plugin built
	// for another Slurm release, no plugstack.conf or agent on the node,
	// or jobs that opted out): the collector's check, per node and for
	// the cluster (0 included; absent where the store could not be read).
	"clusterstate_node_unreported_jobs": {byNode: true, legend: "{cluster}/{node}", unit: "short", expr: func(sel func(string) string, _ string) string {
		return "max by (cluster, node) (" + sel("jobsight_cluster_node_unreported_jobs") + ")"
	}},
	"clusterstate_unreported_jobs": {legend: "{cluster} running jobs without an agent report", unit: "short", expr: func(sel func(string) string, _ string) string {
		return "max by (cluster) (" + sel("jobsight_cluster_unreported_jobs") + ")"
	}},
	"clusterstate_poll_errors": {legend: "{cluster} failed polls", unit: "short", expr: func(sel func(string) string, win string) string {
		return "sum by (cluster) (increase(" + sel("jobsight_clusterstate_poll_errors_total") + "[" + win + "]))"
	}},
	"partition_pending_cpus": {everyone: true, legend: "{cluster}/{partition}", unit: "short", expr: func(sel func(string) string, _ string) string {
		return "sum by (cluster, partition) (" + sel("jobsight_partition_pending_cpus") + ")"
	}},
	"partition_pending_gpus": {everyone: true, legend: "{cluster}/{partition}", unit: "short", expr: func(sel func(string) string, _ string) string {
		return "sum by (cluster, partition) (" + sel("jobsight_partition_pending_gpus") + ")"
	}},
	"partition_pending_gpus_by_type": {everyone: true, legend: "{cluster}/{partition} {type}", unit: "short", expr: func(sel func(string) string, _ string) string {
		return "sum by (cluster, partition, type) (" + sel("jobsight_partition_pending_gpus_by_type") + ")"
	}},
	"partition_allocated_ratio": {everyone: true, legend: "{cluster}/{partition} {resource}", unit: "percentunit", expr: func(sel func(string) string, _ string) string {
		return "max by (cluster, partition, resource) (" + sel("jobsight_partition_allocated_ratio") + ")"
	}},
}

// errFullAccessOnly: a restricted viewer asked for node or agent internals.
var errFullAccessOnly = errors.New("only full-access roles (fullAccessRoles) see node and agent health")

// queryClusterSeries answers one named series over the time range, one
// frame per series: one Prometheus range request.
func (d *Datasource) queryClusterSeries(qc *queryCtx) (data.Frames, error) {
	cs, ok := clusterSeriesCatalogue[qc.q.Series]
	if !ok {
		return nil, fmt.Errorf("series %q is unknown", qc.q.Series) // Validate refuses it first
	}
	if !cs.everyone && !qc.v.Full {
		return nil, fmt.Errorf("series %s: %w", qc.q.Series, errFullAccessOnly)
	}
	var m []string
	if cl := d.clusters(qc.q); len(cl) > 0 {
		m = append(m, "cluster=~"+promAnyOf(cl))
	}
	if cs.byNode && len(qc.q.Node) > 0 {
		m = append(m, "node=~"+promAnyOf(qc.q.Node))
	}
	if cs.everyone && len(qc.q.Partition) > 0 {
		m = append(m, "partition=~"+promAnyOf(qc.q.Partition))
	}
	sel := func(metric string) string { return metric + "{" + strings.Join(m, ",") + "}" }
	step := promStep(qc.from, qc.to, qc.maxPoints)
	expr := cs.expr(sel, rateWindow(step, 0))
	matrix, err := d.promRange(qc.ctx, qc.st, expr, promv1.Range{Start: qc.from, End: qc.to, Step: step})
	if err != nil {
		return nil, err
	}
	sort.Slice(matrix, func(a, b int) bool { return matrix[a].Metric.String() < matrix[b].Metric.String() })
	var frames data.Frames
	for _, s := range matrix {
		labels := data.Labels{}
		for k, v := range s.Metric {
			labels[string(k)] = string(v)
		}
		times := make([]time.Time, len(s.Values))
		vals := make([]float64, len(s.Values))
		for i, p := range s.Values {
			times[i], vals[i] = p.Timestamp.Time().UTC(), float64(p.Value)
		}
		vf := data.NewField("value", labels, vals)
		vf.Config = &data.FieldConfig{DisplayNameFromDS: legend(cs.legend, s.Metric), Unit: cs.unit}
		f := data.NewFrame(qc.q.Series, data.NewField("time", nil, times), vf)
		f.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti}
		frames = append(frames, f)
	}
	if len(frames) == 0 {
		f := data.NewFrame(qc.q.Series, data.NewField("time", nil, []time.Time{}), data.NewField("value", nil, []float64{}))
		f.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti}
		frames = append(frames, f)
	}
	return frames, nil
}

// legend fills {label} placeholders with the series' labels (absent: "").
func legend(tmpl string, m model.Metric) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(tmpl, '{')
		j := strings.IndexByte(tmpl, '}')
		if i < 0 || j < i {
			b.WriteString(tmpl)
			return strings.TrimSpace(b.String())
		}
		b.WriteString(tmpl[:i])
		b.WriteString(string(m[model.LabelName(tmpl[i+1:j])]))
		tmpl = tmpl[j+1:]
	}
}

// agentNodes lists the nodes whose agents report (the nodes variable),
// for full-access viewers: one instant query.
func (d *Datasource) agentNodes(qc *queryCtx) ([]string, error) {
	if !qc.v.Full {
		return nil, fmt.Errorf("variable nodes: %w", errFullAccessOnly)
	}
	expr := "group by (node) (last_over_time(" + selector("jobsight_agent_samples_total", d.clusters(qc.q), nil) + "[" + promDuration(qc.to.Sub(qc.from)+time.Minute) + "]))"
	vec, err := d.promInstant(qc.ctx, qc.st, expr, qc.to)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(vec))
	for _, s := range vec {
		if n := string(s.Metric["node"]); n != "" && len(out) < maxOptions {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}
