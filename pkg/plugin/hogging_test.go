package plugin_test

import (
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// hogValue returns the hogging value and row details of (jobID, resource)
// in a hogging answer; ok false when there is no such row.
func hogValue(t *testing.T, fs data.Frames, jobID, resource string) (float64, map[string]any, bool) {
	t.Helper()
	if len(fs) != 1 {
		t.Fatalf("%d frames", len(fs))
	}
	f := fs[0]
	ids, _ := f.FieldByName("job_id")
	res, _ := f.FieldByName("resource")
	val, _ := f.FieldByName("hogging")
	if ids == nil || res == nil || val == nil {
		t.Fatalf("hogging frame lacks job_id, resource or hogging: %v", f.Fields)
	}
	rows, _ := f.Meta.Custom.(map[string]any)["rows"].([]map[string]any)
	for i := 0; i < f.Rows(); i++ {
		if ids.At(i).(string) == jobID && res.At(i).(string) == resource {
			var detail map[string]any
			if i < len(rows) {
				detail = rows[i]
			}
			return val.At(i).(float64), detail, true
		}
	}
	return 0, nil, false
}

// An idle job holding both CPUs of a 2-CPU partition, in the real stores
// (ZincSearch, Prometheus by remote write), asked through the datasource
// as the alert engine asks: while nobody else wants the partition it hogs
// nothing (value 0); once a job waits for a CPU there, it hogs its two
// unused cores. Before the fix both answers were 2: the weight was the
// allocated fraction, the job's own allocation included.
func TestHoggingNeedsOthersDemand(t *testing.T) {
	srv := startServers(t)
	index := uniqueIndex(t, "hog")
	now := time.Now()
	start := now.Add(-20 * time.Minute)
	idle := jobmodel.Job{DocID: "c1:501", Cluster: "c1", JobID: "501", User: "alice", Account: "physics", Partition: "small",
		State: "RUNNING", StartTime: jobmodel.At(start), SubmitTime: jobmodel.At(start), Sampling: jobmodel.Sampling{IntervalSeconds: 5, Count: 10}}
	idle.Requested.CPUs = jobmodel.Ptr(int64(2))
	indexJobs(t, srv.es, index, idle)

	job := []string{"cluster", "c1", "job_id", "501", "node", "n1"}
	part := func(state string) []string { return []string{"cluster", "c1", "partition", "small", "state", state} }
	from := now.Add(-12 * time.Minute)
	writeSeries(t, srv.prom.URL, from, now.Add(-30*time.Second),
		series{"jobsight_job_cpu_usage_seconds_total", job, constant(3)}, // no CPU time spent
		series{"jobsight_job_allocated_cpus", job, constant(2)},
		series{"jobsight_partition_cpus", part("total"), constant(2)},
		series{"jobsight_partition_cpus", part("allocated"), constant(2)}, // all of it: the idle job's
		series{"jobsight_partition_cpus", part("idle"), constant(0)},
		series{"jobsight_partition_pending_cpus", []string{"cluster", "c1", "partition", "small"}, constant(0)},
	)
	ds := newDatasource(t, srv, index, nil)
	model := map[string]any{"queryType": "hogging", "resources": []string{"cpu"}, "windowSeconds": 300}

	v, detail, ok := hogValue(t, ask(t, ds, nil, model), "501", "cpu")
	if !ok {
		t.Fatal("no CPU row for the idle job")
	}
	if v != 0 {
		t.Errorf("nobody else wants the partition: hogging %g, want 0 (%v)", v, detail)
	}
	if detail["unused"] != 2.0 || detail["signal"] != "cluster_state" {
		t.Errorf("row details %v: want 2 unused cores weighed by the cluster state", detail)
	}

	// A job now waits for one CPU of the partition.
	writeSeries(t, srv.prom.URL, now.Add(-15*time.Second), now.Add(-15*time.Second),
		series{"jobsight_partition_pending_cpus", []string{"cluster", "c1", "partition", "small"}, constant(1)})
	v, detail, _ = hogValue(t, ask(t, ds, nil, model), "501", "cpu")
	if v != 2 {
		t.Errorf("a job waits for the partition: hogging %g, want 2 (2 unused cores × weight 1) (%v)", v, detail)
	}
}
