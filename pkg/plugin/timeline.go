package plugin

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// timelineMetric is one sub-query of the job timeline.
type timelineMetric struct {
	tag, display, unit string
	// expr builds the PromQL with sel the job's matchers, by the
	// grouping and win the rate window.
	expr   func(sel, by, win string) string
	perGPU bool
}

var timelineMetrics = []timelineMetric{
	{tag: "cpu", display: "CPU cores", unit: "none", expr: func(sel, by, win string) string {
		return "sum by (" + by + ") (rate(jobsight_job_cpu_usage_seconds_total" + sel + "[" + win + "]))"
	}},
	{tag: "memory", display: "Memory", unit: "bytes", expr: func(sel, by, _ string) string {
		return "sum by (" + by + ") (jobsight_job_memory_used_bytes" + sel + ")"
	}},
	{tag: "rss", display: "Memory (resident)", unit: "bytes", expr: func(sel, by, _ string) string {
		return "sum by (" + by + ") (jobsight_job_memory_rss_bytes" + sel + ")"
	}},
	{tag: "working_set", display: "Memory (working set)", unit: "bytes", expr: func(sel, by, _ string) string {
		return "sum by (" + by + ") (jobsight_job_memory_working_set_bytes" + sel + ")"
	}},
	{tag: "shmem", display: "Memory (shared)", unit: "bytes", expr: func(sel, by, _ string) string {
		return "sum by (" + by + ") (jobsight_job_memory_shmem_bytes" + sel + ")"
	}},
	{tag: "io_read", display: "Storage read", unit: "Bps", expr: func(sel, by, win string) string {
		return "sum by (" + by + ") (rate(jobsight_job_io_read_bytes_total" + sel + "[" + win + "]))"
	}},
	{tag: "io_write", display: "Storage write", unit: "Bps", expr: func(sel, by, win string) string {
		return "sum by (" + by + ") (rate(jobsight_job_io_written_bytes_total" + sel + "[" + win + "]))"
	}},
	// The share of each step the job's tasks stalled on a resource (the
	// pressure stall counters are wall-clock seconds): the mean over the
	// job's nodes, or each node's with PerNode.
	{tag: "cpu_stall", display: "Stalled waiting for CPU", unit: "percentunit", expr: func(sel, by, win string) string {
		return "avg by (" + by + ") (rate(jobsight_job_cpu_pressure_stalled_seconds_total" + sel + "[" + win + "]))"
	}},
	{tag: "memory_stall", display: "Stalled waiting for memory", unit: "percentunit", expr: func(sel, by, win string) string {
		return "avg by (" + by + ") (rate(jobsight_job_memory_pressure_stalled_seconds_total" + sel + "[" + win + "]))"
	}},
	{tag: "io_stall", display: "Stalled waiting for I/O", unit: "percentunit", expr: func(sel, by, win string) string {
		return "avg by (" + by + ") (rate(jobsight_job_io_pressure_stalled_seconds_total" + sel + "[" + win + "]))"
	}},
	gpuSeries("gpu_util", "GPU utilisation", "percentunit", "jobsight_job_gpu_utilization_ratio"),
	gpuSeries("gpu_memory", "GPU memory", "bytes", "jobsight_job_gpu_memory_used_bytes"),
	// What each GPU did beyond "some kernel ran": only GPUs that report it
	// (NVML GPM on Hopper and later, AMD SMI's GPU metrics) have these
	// series, so the others get no frame for these tags. SM activity well
	// under utilisation means kernels too small to fill the GPU.
	gpuSeries("gpu_sm_activity", "GPU SM activity", "percentunit", "jobsight_job_gpu_sm_activity_ratio"),
	gpuSeries("gpu_tensor_activity", "GPU tensor activity", "percentunit", "jobsight_job_gpu_tensor_activity_ratio"),
	gpuSeries("gpu_dram_activity", "GPU DRAM activity", "percentunit", "jobsight_job_gpu_dram_activity_ratio"),
	// Traffic into each GPU: from the host over PCIe, from the other GPUs
	// over NVLink or XGMI (all links).
	gpuSeries("gpu_pcie_rx", "GPU PCIe receive", "Bps", "jobsight_job_gpu_pcie_receive_bytes_per_second"),
	gpuSeries("gpu_link_rx", "GPU NVLink/XGMI receive", "Bps", "jobsight_job_gpu_link_receive_bytes_per_second"),
}

// gpuSeries is a per-GPU timeline metric read from one of the agent's
// per-GPU gauges, each GPU's own series (max drops the simulated label).
func gpuSeries(tag, display, unit, metric string) timelineMetric {
	return timelineMetric{tag: tag, display: display, unit: unit, perGPU: true, expr: func(sel, _, _ string) string {
		return "max by (" + jobBy + ", node, gpu) (" + metric + sel + ")"
	}}
}

// queryTimeline answers one job's series over its own run, its request as
// threshold series and its start and end as annotations: one
// Elasticsearch and one Prometheus request.
func (d *Datasource) queryTimeline(qc *queryCtx) (data.Frames, error) {
	j, err := d.findJob(qc, qc.q.JobID, nil)
	if err != nil {
		return nil, err
	}
	if j.StartTime == nil {
		return nil, fmt.Errorf("job %s has no start time yet", j.DocID)
	}
	start := j.StartTime.Time
	end := qc.now
	if j.Final && j.EndTime != nil {
		end = j.EndTime.Time
	}
	if !end.After(start) {
		end = start.Add(time.Second)
	}
	step := promStep(start, end, qc.maxPoints)
	win := rateWindow(step, j.Sampling.IntervalSeconds)
	sel := "{cluster=" + promQuote(j.Cluster) + ",job_id=" + promQuote(j.JobID) + jobmodel.RunMatcher(j.SubmitTime) + "}"
	by := jobBy
	if qc.q.PerNode {
		by += ", node"
	}
	// The range starts one step early so the first sample is drawn.
	expr := timelineQuery(sel, by, win)
	if !j.Final {
		expr += " or " + labeled(newestTag, newestSampleExpr(sel))
	}
	matrix, err := d.promRange(qc.ctx, qc.st, expr, promv1.Range{Start: start.Add(-step), End: end, Step: step})
	if err != nil {
		return nil, err
	}
	var ended time.Duration // a finished job's series end one step after their last sample
	if j.Final {
		ended = step
	} else {
		matrix = trimToNewestSample(matrix)
	}
	frames := timelineFrames(matrix, ended)
	frames = append(frames, requestFrames(j, start, end, qc.q.PerNode)...)
	frames = append(frames, eventsFrame(j))
	if len(matrix) == 0 {
		frames[0].AppendNotices(data.Notice{Severity: data.NoticeSeverityWarning,
			Text: fmt.Sprintf("No series for job %s in Prometheus between %s and %s (retention, or the agent could not deliver)", j.DocID, start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))})
	}
	return frames, nil
}

// newestTag tags the running job's newest-sample series in the timeline's
// answer (never a frame).
const newestTag = "newest_sample"

// newestSampleExpr is, at each step, the time of the newest CPU sample of
// the job that every node has delivered: the oldest of the nodes' newest
// (a node whose series went stale drops out after Prometheus' lookback).
func newestSampleExpr(sel string) string {
	return "min by (" + jobBy + ") (max by (" + jobBy + ", node) (timestamp(jobsight_job_cpu_usage_seconds_total" + sel + ")))"
}

// trimToNewestSample removes the newest-sample series from a running
// job's answer and, with it, every point after the newest sample all its
// nodes have delivered. An agent pushes its samples every push_interval
// (10 s by default), so the steps after them would take their rates
// from a window the samples only partly cover, and show a running job's
// last point well below what it uses (3 cores drawn as 1.2 in the Thanos
// test). The timeline of a running job ends at its newest complete data.
func trimToNewestSample(m model.Matrix) model.Matrix {
	var newest model.Time
	out := m[:0]
	for _, s := range m {
		if string(s.Metric["jobsight_metric"]) == newestTag {
			if n := len(s.Values); n > 0 {
				newest = model.TimeFromUnixNano(int64(float64(s.Values[n-1].Value) * 1e9))
			}
			continue
		}
		out = append(out, s)
	}
	if newest == 0 {
		return out
	}
	for _, s := range out {
		k := len(s.Values)
		for k > 0 && s.Values[k-1].Timestamp > newest {
			k--
		}
		s.Values = s.Values[:k]
	}
	return out
}

// timelineQuery is the timeline's one PromQL expression: every metric's
// sub-query over the job's series (sel), tagged with its metric in the
// jobsight_metric label. A metric without series (a GPU without activity
// figures, a cgroup v1 node's stalls) simply adds nothing.
func timelineQuery(sel, by, win string) string {
	parts := make([]string, 0, len(timelineMetrics))
	for _, m := range timelineMetrics {
		parts = append(parts, labeled(m.tag, m.expr(sel, by, win)))
	}
	return strings.Join(parts, " or ")
}

// timelineFrames turns the tagged matrix into one frame per series, in a
// stable order (metric, node, GPU). With endStep > 0 (a finished job)
// each series gets a null point endStep after its last sample: without it
// a state timeline (the GPU heatmap) paints the last value on to the end
// of the dashboard's range, long after the job ended.
func timelineFrames(m model.Matrix, endStep time.Duration) data.Frames {
	order := map[string]int{}
	meta := map[string]timelineMetric{}
	for i, t := range timelineMetrics {
		order[t.tag], meta[t.tag] = i, t
	}
	sort.SliceStable(m, func(a, b int) bool {
		ta, tb := string(m[a].Metric["jobsight_metric"]), string(m[b].Metric["jobsight_metric"])
		if ta != tb {
			return order[ta] < order[tb]
		}
		return m[a].Metric.String() < m[b].Metric.String()
	})
	var frames data.Frames
	for _, s := range m {
		tag := string(s.Metric["jobsight_metric"])
		tm := meta[tag]
		labels := data.Labels{"metric": tag}
		display := tm.display
		if n := string(s.Metric["node"]); n != "" {
			labels["node"] = n
			display += " " + n
		}
		if g := string(s.Metric["gpu"]); g != "" {
			labels["gpu"] = g
			display += " GPU " + g
		}
		times := make([]time.Time, 0, len(s.Values)+1)
		vals := make([]*float64, 0, len(s.Values)+1)
		for _, p := range s.Values {
			times = append(times, p.Timestamp.Time().UTC())
			vals = append(vals, ptr(float64(p.Value)))
		}
		if endStep > 0 && len(times) > 0 {
			times = append(times, times[len(times)-1].Add(endStep))
			vals = append(vals, nil)
		}
		vf := data.NewField("value", labels, vals)
		vf.Config = &data.FieldConfig{DisplayNameFromDS: display, Unit: tm.unit}
		f := data.NewFrame(tag, data.NewField("time", nil, times), vf)
		f.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti}
		frames = append(frames, f)
	}
	if len(frames) == 0 {
		f := data.NewFrame("no-data", data.NewField("time", nil, []time.Time{}), data.NewField("value", nil, []float64{}))
		frames = append(frames, f)
	}
	return frames
}

// requestFrames are the job's requested amounts as constant series over
// its run (threshold lines): CPUs, memory and GPUs.
func requestFrames(j *jobmodel.Job, from, to time.Time, perNode bool) data.Frames {
	var frames data.Frames
	add := func(tag, display, unit string, v float64) {
		vf := data.NewField("value", data.Labels{"metric": tag, "threshold": "requested"}, []float64{v, v})
		vf.Config = &data.FieldConfig{DisplayNameFromDS: display, Unit: unit,
			Custom: map[string]any{"lineStyle": map[string]any{"fill": "dash", "dash": []int{10, 10}}}}
		f := data.NewFrame(tag, data.NewField("time", nil, []time.Time{from.UTC(), to.UTC()}), vf)
		f.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti}
		frames = append(frames, f)
	}
	r := j.Requested
	div := 1.0
	label := "requested"
	if perNode && j.NodeCount > 1 {
		div = float64(j.NodeCount)
		label = "requested per node"
	}
	if r.CPUs != nil {
		add("cpu_requested", "CPU cores "+label, "none", float64(*r.CPUs)/div)
	}
	if perNode && r.MemoryPerNodeBytes != nil {
		add("memory_requested", "Memory requested per node", "bytes", float64(*r.MemoryPerNodeBytes))
	} else if r.MemoryBytes != nil {
		add("memory_requested", "Memory "+label, "bytes", float64(*r.MemoryBytes)/div)
	}
	if r.GPUs != nil && *r.GPUs > 0 {
		add("gpu_requested", "GPUs "+label, "none", float64(*r.GPUs)/div)
	}
	return frames
}

// eventsFrame is the job's start and end as annotations.
func eventsFrame(j *jobmodel.Job) *data.Frame {
	var times []time.Time
	var titles, texts, tags []string
	if j.SubmitTime != nil {
		times, titles, texts, tags = append(times, j.SubmitTime.UTC()), append(titles, "Submitted"), append(texts, "Job "+j.DocID+" submitted"), append(tags, "submit")
	}
	if j.StartTime != nil {
		times, titles, texts, tags = append(times, j.StartTime.UTC()), append(titles, "Started"), append(texts, "Job "+j.DocID+" started"), append(tags, "start")
	}
	if j.Final && j.EndTime != nil {
		text := "Job " + j.DocID + " ended: " + j.State
		if j.ExitCode != nil {
			text += fmt.Sprintf(" (exit code %d)", *j.ExitCode)
		}
		if j.Reason != "" {
			text += ", " + j.Reason
		}
		times, titles, texts, tags = append(times, j.EndTime.UTC()), append(titles, "Ended: "+j.State), append(texts, text), append(tags, "end")
	}
	f := data.NewFrame("events",
		data.NewField("time", nil, times),
		data.NewField("title", nil, titles),
		data.NewField("text", nil, texts),
		data.NewField("tags", nil, tags))
	f.Meta = &data.FrameMeta{DataTopic: data.DataTopicAnnotations}
	return f
}
