package plugin_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/test/dashtest"
)

// On the real stores, the series the agent writes for two GPU jobs: job 36
// on an H100 with GPM (GPU 0: every activity figure, from the simulated
// source, so labelled simulated="true") beside an A100 (GPU 1: utilisation
// and memory only), job 37 on A100s alone. Job 36's timeline has GPU 0's
// SM, tensor, DRAM, PCIe and link series at the values written, one frame
// each, and no activity frame for GPU 1; job 37's has its utilisation and
// memory and no activity frame at all: no error, no zeros, no notice. The
// job detail dashboard's "What the GPUs did" panel shows both jobs (job
// 37's utilisation alone), its traffic panel job 36 only.
func TestTimelineGPUActivityOnRealStores(t *testing.T) {
	srv := startServers(t)
	index := uniqueIndex(t, "gpuactivity")
	now := time.Now().UTC().Truncate(time.Second)
	start, end := now.Add(-20*time.Minute), now.Add(-5*time.Minute)
	mk := func(id string) jobmodel.Job {
		j := jobmodel.Job{DocID: "c:" + id, SchemaVersion: jobmodel.SchemaVersion, Cluster: "c", JobID: id, User: "alice",
			Account: "a", Partition: "gpu", State: jobmodel.StateCompleted, Final: true, NodeCount: 1, Nodes: []string{"n1"},
			SubmitTime: jobmodel.At(start), StartTime: jobmodel.At(start), EndTime: jobmodel.At(end), UpdatedAt: jobmodel.At(now),
			ElapsedSeconds: jobmodel.Ptr(end.Sub(start).Seconds()), Sampling: jobmodel.Sampling{IntervalSeconds: 15, Count: 60}}
		j.Requested.GPUs = jobmodel.Ptr(int64(2))
		return j
	}
	j36, j37 := mk("36"), mk("37")
	indexJobs(t, srv.es, index, j36, j37)

	gpu := func(j jobmodel.Job, name, idx string, v float64, extra ...string) series {
		labels := append([]string{"cluster", j.Cluster, "job_id", j.JobID, "node", "n1", "gpu", idx,
			jobmodel.RunLabel, jobmodel.RunOf(j.SubmitTime)}, extra...)
		return series{name: name, labels: labels, value: constant(v)}
	}
	sim := []string{"simulated", "true"}
	written := map[string]float64{ // job 36's GPU 0, by timeline tag
		"gpu_util": 0.95, "gpu_memory": 40e9, "gpu_sm_activity": 0.12, "gpu_tensor_activity": 0.03,
		"gpu_dram_activity": 0.41, "gpu_pcie_rx": 6.5e9, "gpu_link_rx": 1.2e11,
	}
	writeSeries(t, srv.prom.URL, start, end,
		gpu(j36, "jobsight_job_gpu_utilization_ratio", "0", written["gpu_util"], sim...),
		gpu(j36, "jobsight_job_gpu_memory_used_bytes", "0", written["gpu_memory"], sim...),
		gpu(j36, "jobsight_job_gpu_sm_activity_ratio", "0", written["gpu_sm_activity"], sim...),
		gpu(j36, "jobsight_job_gpu_sm_occupancy_ratio", "0", 0.2, sim...),
		gpu(j36, "jobsight_job_gpu_tensor_activity_ratio", "0", written["gpu_tensor_activity"], sim...),
		gpu(j36, "jobsight_job_gpu_dram_activity_ratio", "0", written["gpu_dram_activity"], sim...),
		gpu(j36, "jobsight_job_gpu_pcie_receive_bytes_per_second", "0", written["gpu_pcie_rx"], sim...),
		gpu(j36, "jobsight_job_gpu_pcie_transmit_bytes_per_second", "0", 1e9, sim...),
		gpu(j36, "jobsight_job_gpu_link_receive_bytes_per_second", "0", written["gpu_link_rx"], sim...),
		gpu(j36, "jobsight_job_gpu_link_transmit_bytes_per_second", "0", 1.1e11, sim...),
		gpu(j36, "jobsight_job_gpu_utilization_ratio", "1", 0.5),
		gpu(j36, "jobsight_job_gpu_memory_used_bytes", "1", 20e9),
		gpu(j37, "jobsight_job_gpu_utilization_ratio", "0", 0.7),
		gpu(j37, "jobsight_job_gpu_memory_used_bytes", "0", 30e9),
		gpu(j37, "jobsight_job_gpu_utilization_ratio", "1", 0.6),
		gpu(j37, "jobsight_job_gpu_memory_used_bytes", "1", 30e9),
	)

	ds := newDatasource(t, srv, index, nil)
	admin := &backend.User{Login: "admin", Role: "Admin"}
	timeline := func(j jobmodel.Job, perNode bool) data.Frames {
		t.Helper()
		r := askRange(t, ds, admin, map[string]any{"queryType": "jobTimeline", "jobId": j.DocID, "perNode": perNode},
			now.Add(-time.Hour), now, 200)
		if r.Error != nil {
			t.Fatalf("timeline of %s: %v", j.DocID, r.Error)
		}
		for _, f := range r.Frames {
			if f.Meta != nil && len(f.Meta.Notices) > 0 {
				t.Errorf("timeline of %s: frame %s has notices %v", j.DocID, f.Name, f.Meta.Notices)
			}
		}
		return r.Frames
	}
	activity := []string{"gpu_sm_activity", "gpu_tensor_activity", "gpu_dram_activity", "gpu_pcie_rx", "gpu_link_rx"}
	// byTag: each frame's GPU, and its values (nulls aside), by tag.
	type gpuFrame struct {
		gpu  string
		vals []float64
	}
	summary := func(gs []gpuFrame) []string {
		var out []string
		for _, g := range gs {
			out = append(out, fmt.Sprintf("GPU %q: %d values", g.gpu, len(g.vals)))
		}
		return out
	}
	byTag := func(fs data.Frames) map[string][]gpuFrame {
		out := map[string][]gpuFrame{}
		for _, f := range fs {
			if len(f.Fields) != 2 || f.Fields[1].Labels["metric"] != f.Name {
				continue
			}
			g := gpuFrame{gpu: f.Fields[1].Labels["gpu"]}
			for i := 0; i < f.Fields[1].Len(); i++ {
				if v, ok := f.Fields[1].ConcreteAt(i); ok {
					g.vals = append(g.vals, v.(float64))
				}
			}
			out[f.Name] = append(out[f.Name], g)
		}
		return out
	}

	panels := map[string]dashtest.Panel{}
	for _, p := range dashtest.Load(t, "../../dashboards")["job-detail.json"].Panels {
		panels[p.Title] = p
	}
	did, traffic := panels["What the GPUs did"], panels["PCIe and NVLink/XGMI traffic per GPU"]
	if did.Title == "" || traffic.Title == "" {
		t.Fatal("the job detail dashboard lacks its GPU activity panels")
	}

	for _, perNode := range []bool{false, true} {
		fs36 := timeline(j36, perNode)
		got := byTag(fs36)
		for tag, v := range written {
			gs := got[tag]
			if len(gs) == 0 || gs[0].gpu != "0" || len(gs[0].vals) < 10 {
				t.Errorf("job 36 (perNode %v): %s frames %v, want GPU 0's series", perNode, tag, summary(gs))
				continue
			}
			for _, x := range gs[0].vals {
				if x != v {
					t.Errorf("job 36 (perNode %v): %s of GPU 0 is %v, want %v as written", perNode, tag, x, v)
					break
				}
			}
		}
		for _, tag := range activity {
			if len(got[tag]) != 1 {
				t.Errorf("job 36 (perNode %v): %d %s frames %v, want GPU 0's only (GPU 1 reports none)", perNode, len(got[tag]), tag, summary(got[tag]))
			}
		}
		if len(got["gpu_util"]) != 2 || len(got["gpu_memory"]) != 2 {
			t.Errorf("job 36 (perNode %v): utilisation %v, memory %v; want both GPUs'", perNode, summary(got["gpu_util"]), summary(got["gpu_memory"]))
		}

		fs37 := timeline(j37, perNode)
		got = byTag(fs37)
		for _, tag := range activity {
			if len(got[tag]) != 0 {
				t.Errorf("job 37 (perNode %v): %s frames %v, want none: its GPUs report no activity", perNode, tag, summary(got[tag]))
			}
		}
		if len(got["gpu_util"]) != 2 || slices.ContainsFunc(got["gpu_util"], func(g gpuFrame) bool { return len(g.vals) < 10 }) {
			t.Errorf("job 37 (perNode %v): utilisation %v, want both GPUs' series", perNode, summary(got["gpu_util"]))
		}

		for _, c := range []struct {
			job  string
			fs   data.Frames
			p    dashtest.Panel
			want bool
		}{{"36", fs36, did, true}, {"36", fs36, traffic, true}, {"37", fs37, did, true}, {"37", fs37, traffic, false}} {
			if ok, seen := dashtest.PanelHasData(t, c.p, c.fs); ok != c.want {
				t.Errorf("job %s (perNode %v): panel %q has data: %v, want %v (%s)", c.job, perNode, c.p.Title, ok, c.want, seen)
			}
		}
	}

	// Every panel of the job detail dashboard on job 36, as Grafana runs
	// them: each target validates and answers without an error (panels
	// of series this test did not write may be empty).
	r := dashtest.Runner{JobsightUID: "jobsight", PrometheusUID: "prometheus", Quiet: true,
		Jobsight: func(tb testing.TB, where string, model map[string]any) data.Frames {
			tb.Helper()
			dr := askRange(tb.(*testing.T), ds, admin, model, now.Add(-time.Hour), now, 200)
			if dr.Error != nil {
				tb.Fatalf("%s: %v", where, dr.Error)
			}
			return dr.Frames
		},
		Pick: func(tb testing.TB, v dashtest.Var, vals []string) []string {
			if v.Name == "job" {
				if !slices.Contains(vals, j36.DocID) {
					tb.Fatalf("the job variable lists %v, not %s", vals, j36.DocID)
				}
				return []string{j36.DocID}
			}
			return vals
		},
	}
	r.Run(t, "job-detail.json", dashtest.Load(t, "../../dashboards")["job-detail.json"])
}

// The Jobs table's gpu_sm_activity: a finished job's from its document
// (the mean over its GPUs of their average SM activity), a running job's
// now from Prometheus, the mean over the GPUs that report it (its third
// GPU, without the figure, is not a zero in the mean), and null for a job
// whose GPUs report none.
func TestJobsGPUSMActivity(t *testing.T) {
	srv := startServers(t)
	index := uniqueIndex(t, "gpusm")
	now := time.Now().UTC().Truncate(time.Second)
	start := now.Add(-20 * time.Minute)
	mk := func(id string, final bool) jobmodel.Job {
		j := jobmodel.Job{DocID: "c:" + id, SchemaVersion: jobmodel.SchemaVersion, Cluster: "c", JobID: id, User: "alice",
			Account: "a", Partition: "gpu", State: jobmodel.StateRunning, NodeCount: 1, Nodes: []string{"n1"},
			SubmitTime: jobmodel.At(start), StartTime: jobmodel.At(start), UpdatedAt: jobmodel.At(now),
			Sampling: jobmodel.Sampling{IntervalSeconds: 15, Count: 60}}
		j.Requested.GPUs = jobmodel.Ptr(int64(3))
		j.GPU = &jobmodel.GPUUsage{Count: 3, UtilizationAvg: jobmodel.Ptr(0.9)}
		if final {
			end := now.Add(-5 * time.Minute)
			j.Final, j.State, j.EndTime = true, jobmodel.StateCompleted, jobmodel.At(end)
			j.ElapsedSeconds = jobmodel.Ptr(end.Sub(start).Seconds())
		}
		return j
	}
	withSM, without, running := mk("36", true), mk("37", true), mk("38", false)
	withSM.GPU.Activity = &jobmodel.GPUActivity{SM: &jobmodel.Stat{Avg: jobmodel.Ptr(0.12), P95: jobmodel.Ptr(0.2), Peak: jobmodel.Ptr(0.3)}}
	indexJobs(t, srv.es, index, withSM, without, running)
	gpu := func(name, idx string, v float64) series {
		return series{name: name, value: constant(v), labels: []string{"cluster", "c", "job_id", "38", "node", "n1", "gpu", idx,
			jobmodel.RunLabel, jobmodel.RunOf(running.SubmitTime)}}
	}
	writeSeries(t, srv.prom.URL, start, now,
		gpu("jobsight_job_gpu_utilization_ratio", "0", 0.9), gpu("jobsight_job_gpu_sm_activity_ratio", "0", 0.3),
		gpu("jobsight_job_gpu_utilization_ratio", "1", 0.9), gpu("jobsight_job_gpu_sm_activity_ratio", "1", 0.36),
		gpu("jobsight_job_gpu_utilization_ratio", "2", 0.9),
	)

	ds := newDatasource(t, srv, index, nil)
	f := ask(t, ds, &backend.User{Login: "admin", Role: "Admin"}, map[string]any{"queryType": "jobs"})[0]
	ids, _ := f.FieldByName("doc_id")
	sm, _ := f.FieldByName("gpu_sm_activity")
	if ids == nil || sm == nil {
		t.Fatalf("jobs frame without doc_id or gpu_sm_activity: %v", f.Fields)
	}
	if sm.Config == nil || sm.Config.Unit != "percentunit" {
		t.Errorf("gpu_sm_activity config %+v, want percentunit", sm.Config)
	}
	got := map[string]*float64{}
	for i := 0; i < f.Rows(); i++ {
		id, _ := ids.ConcreteAt(i)
		v, _ := sm.At(i).(*float64)
		got[id.(string)] = v
	}
	if len(got) != 3 {
		t.Fatalf("jobs %v, want 3", got)
	}
	for id, want := range map[string]*float64{"c:36": jobmodel.Ptr(0.12), "c:37": nil, "c:38": jobmodel.Ptr(0.33)} {
		v := got[id]
		switch {
		case want == nil && v != nil:
			t.Errorf("%s: SM activity %v, want null: its GPUs report none", id, *v)
		case want != nil && v == nil:
			t.Errorf("%s: SM activity null, want %v", id, *want)
		case want != nil && math.Abs(*v-*want) > 1e-9:
			t.Errorf("%s: SM activity %v, want %v", id, *v, *want)
		}
	}
}
