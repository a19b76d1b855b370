package plugin

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// A finished job's series end with a null one step after the last sample,
// so that a state timeline stops at the job's end; a running job's do not.
func TestTimelineSeriesEndWithTheJob(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	m := model.Matrix{{
		Metric: model.Metric{"jobsight_metric": model.LabelValue(timelineMetrics[0].tag), "gpu": "0"},
		Values: []model.SamplePair{{Timestamp: model.TimeFromUnixNano(t0.UnixNano()), Value: 0.9},
			{Timestamp: model.TimeFromUnixNano(t0.Add(15 * time.Second).UnixNano()), Value: 0.8}},
	}}
	fs := timelineFrames(m, 15*time.Second)
	tf, vf := fs[0].Fields[0], fs[0].Fields[1]
	if vf.Len() != 3 || tf.At(2).(time.Time) != t0.Add(30*time.Second) {
		t.Fatalf("finished job: %d points, last at %v; want a third, 15 s after the last sample", vf.Len(), tf.At(vf.Len()-1))
	}
	if v := vf.At(2).(*float64); v != nil {
		t.Errorf("the end point is %v, want null", *v)
	}
	if v := vf.At(1).(*float64); v == nil || *v != 0.8 {
		t.Errorf("second sample %v, want 0.8", v)
	}
	if running := timelineFrames(m, 0); running[0].Fields[1].Len() != 2 {
		t.Errorf("running job: %d points, want the 2 samples only", running[0].Fields[1].Len())
	}
}

// The job detail dashboard's "Pressure stalls" panel keeps exactly the
// stall series of the timeline (its filter on their display names), each
// a share of the time (percentunit) from the rate of the agent's stall
// counter; no other timeline panel picks them up.
func TestStallSeriesReachTheirPanelOnly(t *testing.T) {
	filters := map[string]*regexp.Regexp{}
	for _, p := range timelinePanels(t) {
		filters[p.title] = p.filter
	}
	if filters["Pressure stalls"] == nil {
		t.Fatalf("no Pressure stalls timeline panel with a field filter (panels %v)", filters)
	}
	stalls := 0
	for _, m := range timelineMetrics {
		stall := strings.HasSuffix(m.tag, "_stall")
		for _, name := range []string{m.display, m.display + " node01"} {
			for title, re := range filters {
				if re.MatchString(name) != (stall && title == "Pressure stalls") && (stall || title == "Pressure stalls") {
					t.Errorf("%s (%s): panel %q filter %s matches %v", m.tag, name, title, re, re.MatchString(name))
				}
			}
		}
		if !stall {
			continue
		}
		stalls++
		expr := m.expr(`{cluster="c",job_id="1"}`, jobBy, "1m")
		if m.unit != "percentunit" || !strings.Contains(expr, "rate(jobsight_job_") || !strings.Contains(expr, "_pressure_stalled_seconds_total{") {
			t.Errorf("%s: unit %s, query %s; want the share of time, from a stall counter's rate", m.tag, m.unit, expr)
		}
	}
	if stalls != 3 {
		t.Errorf("%d stall series, want CPU, memory and I/O", stalls)
	}
}

// gpuTimeline are the timeline's per-GPU metrics: the agent's series each
// reads (agent/monitor GPUMetrics) and the unit it is drawn in.
var gpuTimeline = map[string]struct{ metric, unit string }{
	"gpu_util":            {"jobsight_job_gpu_utilization_ratio", "percentunit"},
	"gpu_memory":          {"jobsight_job_gpu_memory_used_bytes", "bytes"},
	"gpu_sm_activity":     {"jobsight_job_gpu_sm_activity_ratio", "percentunit"},
	"gpu_tensor_activity": {"jobsight_job_gpu_tensor_activity_ratio", "percentunit"},
	"gpu_dram_activity":   {"jobsight_job_gpu_dram_activity_ratio", "percentunit"},
	"gpu_pcie_rx":         {"jobsight_job_gpu_pcie_receive_bytes_per_second", "Bps"},
	"gpu_link_rx":         {"jobsight_job_gpu_link_receive_bytes_per_second", "Bps"},
}

// Each per-GPU metric of the timeline is its own agent series, the
// maximum by the job's labels, node and GPU (one series per GPU, with or
// without perNode; the simulated label dropped), over exactly the job's
// matchers; tags and display names are unique, and the whole timeline
// expression parses with every sub-query tagged once.
func TestTimelineGPUQueries(t *testing.T) {
	submit := jobmodel.At(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	sel := "{cluster=" + promQuote(`c"1`) + ",job_id=" + promQuote("7") + jobmodel.RunMatcher(submit) + "}"
	tags, displays := map[string]bool{}, map[string]string{}
	for _, m := range timelineMetrics {
		if tags[m.tag] || displays[m.display] != "" {
			t.Errorf("%s (%q): tag or display name used twice (also %s)", m.tag, m.display, displays[m.display])
		}
		tags[m.tag], displays[m.display] = true, m.tag
		want, ok := gpuTimeline[m.tag]
		if ok != m.perGPU {
			t.Errorf("%s: per GPU %v, but the test knows it as per GPU: %v", m.tag, m.perGPU, ok)
		}
		if !ok {
			continue
		}
		if m.unit != want.unit {
			t.Errorf("%s: unit %q, want %q", m.tag, m.unit, want.unit)
		}
		for _, by := range []string{jobBy, jobBy + ", node"} {
			expr := m.expr(sel, by, "1m")
			e, err := parser.ParseExpr(expr)
			if err != nil {
				t.Errorf("%s: %s does not parse: %v", m.tag, expr, err)
				continue
			}
			agg, ok := e.(*parser.AggregateExpr)
			if !ok || agg.Op != parser.MAX || agg.Without ||
				!slices.Equal(agg.Grouping, []string{"cluster", "job_id", jobmodel.RunLabel, "node", "gpu"}) {
				t.Errorf("%s (by %s): %s is not the maximum by the job's labels, node and gpu", m.tag, by, expr)
				continue
			}
			vs, ok := agg.Expr.(*parser.VectorSelector)
			if !ok || vs.Name != want.metric {
				t.Errorf("%s: %s does not read %s alone", m.tag, expr, want.metric)
				continue
			}
			got := map[string]string{}
			for _, lm := range vs.LabelMatchers {
				got[lm.Name] = lm.Type.String() + lm.Value
			}
			if len(got) != 4 || got["cluster"] != `=c"1` || got["job_id"] != "=7" || got[jobmodel.RunLabel] != "=~"+jobmodel.RunOf(submit)+"|" {
				t.Errorf("%s: matchers %v, want exactly the job's", m.tag, got)
			}
		}
	}
	for tag := range gpuTimeline {
		if !tags[tag] {
			t.Errorf("the timeline has no %s", tag)
		}
	}
	full := timelineQuery(sel, jobBy, "1m")
	if _, err := parser.ParseExpr(full); err != nil {
		t.Fatalf("the timeline query does not parse: %v\n%s", err, full)
	}
	for _, m := range timelineMetrics {
		if n := strings.Count(full, `"jobsight_metric", `+promQuote(m.tag)+`,`); n != 1 {
			t.Errorf("%s tags %d sub-queries of the timeline, want 1", m.tag, n)
		}
	}
}

// A GPU that reports no activity figures (an NVIDIA GPU before Hopper)
// has no activity series: its utilisation and memory still come, and no
// frame of an activity tag names it: no error, no zeros. The other GPU's
// figures come through unchanged, one frame per GPU, with their units and
// display names.
func TestTimelineFramesGPUWithoutActivity(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	s := func(tag, gpu string, v float64) *model.SampleStream {
		return &model.SampleStream{
			Metric: model.Metric{"jobsight_metric": model.LabelValue(tag), "cluster": "c", "job_id": "7", "node": "n1", "gpu": model.LabelValue(gpu)},
			Values: []model.SamplePair{{Timestamp: model.TimeFromUnixNano(t0.UnixNano()), Value: model.SampleValue(v)},
				{Timestamp: model.TimeFromUnixNano(t0.Add(time.Minute).UnixNano()), Value: model.SampleValue(v)}},
		}
	}
	// GPU 0 (H100) reports everything; GPU 1 (A100) utilisation and memory only.
	m := model.Matrix{
		s("gpu_link_rx", "0", 2e9), s("gpu_util", "1", 0.9), s("gpu_sm_activity", "0", 0.12), s("gpu_util", "0", 0.95),
		s("gpu_memory", "1", 1<<30), s("gpu_pcie_rx", "0", 5e8), s("gpu_tensor_activity", "0", 0.03),
		s("gpu_dram_activity", "0", 0.4), s("gpu_memory", "0", 2<<30),
	}
	fs := timelineFrames(m, time.Minute)
	type key struct{ tag, gpu string }
	got := map[key]*data.Frame{}
	var order []string
	for _, f := range fs {
		vf := f.Fields[1]
		k := key{f.Name, vf.Labels["gpu"]}
		if got[k] != nil {
			t.Errorf("%v: two frames", k)
		}
		got[k] = f
		order = append(order, f.Name+"/"+k.gpu)
	}
	want := map[key]float64{
		{"gpu_util", "0"}: 0.95, {"gpu_util", "1"}: 0.9, {"gpu_memory", "0"}: 2 << 30, {"gpu_memory", "1"}: 1 << 30,
		{"gpu_sm_activity", "0"}: 0.12, {"gpu_tensor_activity", "0"}: 0.03, {"gpu_dram_activity", "0"}: 0.4,
		{"gpu_pcie_rx", "0"}: 5e8, {"gpu_link_rx", "0"}: 2e9,
	}
	if len(got) != len(want) {
		t.Errorf("frames %v, want %d", order, len(want))
	}
	for k, v := range want {
		f := got[k]
		if f == nil {
			t.Errorf("no %s frame for GPU %s (frames %v)", k.tag, k.gpu, order)
			continue
		}
		vf := f.Fields[1]
		display := displays(t)[k.tag] + " n1 GPU " + k.gpu
		if vf.Config.DisplayNameFromDS != display || vf.Config.Unit != gpuTimeline[k.tag].unit || vf.Labels["node"] != "n1" || vf.Labels["metric"] != k.tag {
			t.Errorf("%v: display %q, unit %q, labels %v; want %q, %q", k, vf.Config.DisplayNameFromDS, vf.Config.Unit, vf.Labels, display, gpuTimeline[k.tag].unit)
		}
		if vf.Len() != 3 || *vf.At(0).(*float64) != v || *vf.At(1).(*float64) != v || vf.At(2).(*float64) != nil {
			t.Errorf("%v: %d points, want %v twice and the end's null", k, vf.Len(), v)
		}
	}
	// In the timeline's order: utilisation and memory, then the activity
	// figures, then the traffic.
	wantOrder := []string{"gpu_util/0", "gpu_util/1", "gpu_memory/0", "gpu_memory/1", "gpu_sm_activity/0",
		"gpu_tensor_activity/0", "gpu_dram_activity/0", "gpu_pcie_rx/0", "gpu_link_rx/0"}
	if !slices.Equal(order, wantOrder) {
		t.Errorf("frame order %v, want %v", order, wantOrder)
	}
}

// displays maps each timeline tag to its display name.
func displays(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range timelineMetrics {
		out[m.tag] = m.display
	}
	return out
}

// timelinePanel is a job detail dashboard panel that draws part of the
// timeline: the fields its filter keeps, in its unit.
type timelinePanel struct {
	title, unit string
	filter      *regexp.Regexp
}

// timelinePanels reads the job detail dashboard's jobTimeline panels.
func timelinePanels(t *testing.T) []timelinePanel {
	t.Helper()
	b, err := os.ReadFile("../../dashboards/job-detail.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				QueryType string `json:"queryType"`
			} `json:"targets"`
			FieldConfig struct {
				Defaults struct {
					Unit string `json:"unit"`
				} `json:"defaults"`
			} `json:"fieldConfig"`
			Transformations []struct {
				ID      string `json:"id"`
				Options struct {
					Include struct {
						Pattern string `json:"pattern"`
					} `json:"include"`
				} `json:"options"`
			} `json:"transformations"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []timelinePanel
	for _, p := range d.Panels {
		if len(p.Targets) == 0 || p.Targets[0].QueryType != "jobTimeline" {
			continue
		}
		tp := timelinePanel{title: p.Title, unit: p.FieldConfig.Defaults.Unit}
		for _, tr := range p.Transformations {
			if tr.ID == "filterFieldsByName" {
				tp.filter = regexp.MustCompile(tr.Options.Include.Pattern)
			}
		}
		if tp.filter == nil {
			t.Fatalf("timeline panel %q has no field filter: it would draw every series", p.Title)
		}
		out = append(out, tp)
	}
	return out
}

// Every timeline series reaches exactly the job detail panels meant for it
// (their filters on the display names, as Grafana matches them, summed
// and per node or GPU), each drawn in the panel's unit: the GPU activity
// figures beside utilisation in "What the GPUs did", the PCIe and link
// traffic in their own panel, and none of them in the utilisation, memory
// or heatmap panels.
func TestTimelineSeriesReachTheirPanels(t *testing.T) {
	const (
		cpu, mem, memNode, io, stalls  = "CPU cores used vs requested", "Memory used vs requested", "Memory per node", "Storage I/O", "Pressure stalls"
		util, gmem, heat, did, traffic = "GPU utilisation per GPU", "GPU memory per GPU", "GPU heatmap", "What the GPUs did", "PCIe and NVLink/XGMI traffic per GPU"
	)
	want := map[string][]string{
		"cpu": {cpu}, "memory": {mem, memNode}, "rss": {mem, memNode}, "working_set": {mem, memNode}, "shmem": {mem, memNode},
		"io_read": {io}, "io_write": {io}, "cpu_stall": {stalls}, "memory_stall": {stalls}, "io_stall": {stalls},
		"gpu_util": {util, heat, did}, "gpu_memory": {gmem},
		"gpu_sm_activity": {did}, "gpu_tensor_activity": {did}, "gpu_dram_activity": {did},
		"gpu_pcie_rx": {traffic}, "gpu_link_rx": {traffic},
	}
	panels := timelinePanels(t)
	drawn := map[string]bool{}
	for _, m := range timelineMetrics {
		names := []string{m.display, m.display + " node01"}
		if m.perGPU {
			names = []string{m.display + " node01 GPU 0", m.display + " gpu-a-17 GPU 7"}
		}
		w, ok := want[m.tag]
		if !ok {
			t.Errorf("%s: no panel is meant for it (add it to this test)", m.tag)
		}
		for _, p := range panels {
			meant := slices.Contains(w, p.title)
			for _, name := range names {
				if p.filter.MatchString(name) != meant {
					t.Errorf("%s (%q): panel %q's filter %s matches: %v, want %v", m.tag, name, p.title, p.filter, !meant, meant)
				}
			}
			if meant && m.unit != p.unit {
				t.Errorf("%s (%s) in panel %q drawn in %s", m.tag, m.unit, p.title, p.unit)
			}
			drawn[p.title] = drawn[p.title] || meant
		}
	}
	for _, p := range panels {
		if !drawn[p.title] {
			t.Errorf("panel %q draws no timeline series", p.title)
		}
	}
	for _, title := range []string{did, traffic} {
		if !drawn[title] {
			t.Errorf("no panel %q on the job detail dashboard", title)
		}
	}
}

// A running job's timeline ends at the newest sample all its nodes have
// delivered: the steps after it (the agent pushes every 10 s) would
// take their rates from a window the samples only partly cover. The
// newest-sample series itself is never a frame.
func TestRunningTimelineEndsAtTheNewestSample(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(s int) model.Time {
		return model.TimeFromUnixNano(t0.Add(time.Duration(s) * time.Second).UnixNano())
	}
	series := func(tag string, vals ...float64) *model.SampleStream {
		ss := &model.SampleStream{Metric: model.Metric{"jobsight_metric": model.LabelValue(tag)}}
		for i, v := range vals {
			ss.Values = append(ss.Values, model.SamplePair{Timestamp: at(5 * i), Value: model.SampleValue(v)})
		}
		return ss
	}
	// Steps every 5 s; the newest sample at t0 + 12 s (seen from the step
	// at 15 s on).
	newest := float64(t0.Add(12*time.Second).UnixNano()) / 1e9
	m := model.Matrix{series("cpu", 3, 3, 3, 1.8, 1.2), series("memory", 1, 1, 1, 1, 1), series(newestTag, newest-10, newest-5, newest, newest, newest)}
	if !strings.Contains(newestSampleExpr(`{job_id="1"}`), `timestamp(jobsight_job_cpu_usage_seconds_total{job_id="1"})`) {
		t.Errorf("newest-sample query %q does not take the CPU samples' times", newestSampleExpr(`{job_id="1"}`))
	}
	fs := timelineFrames(trimToNewestSample(m), 0)
	if len(fs) != 2 {
		t.Fatalf("%d frames, want cpu and memory (no newest-sample frame)", len(fs))
	}
	for _, f := range fs {
		n := f.Fields[0].Len()
		if last := f.Fields[0].At(n - 1).(time.Time); n != 3 || !last.Equal(t0.Add(10*time.Second)) {
			t.Errorf("%s: %d points, last at %v; want 3, the last at the step before the newest sample (12:00:10)", f.Name, n, last)
		}
	}
	// Without a newest-sample series (no CPU series), nothing is cut.
	if fs := timelineFrames(trimToNewestSample(model.Matrix{series("memory", 1, 1, 1)}), 0); fs[0].Fields[0].Len() != 3 {
		t.Errorf("without CPU samples: %d points, want all 3", fs[0].Fields[0].Len())
	}
}
