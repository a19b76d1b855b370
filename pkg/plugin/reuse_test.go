package plugin_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store/promremote"
	"github.com/jobsight/jobsight/pkg/plugin"
)

// TestReusedIDSeriesStayApart: Slurm gave job id 77 to alice's job, lost
// its state (a controller reset) and gave 77 again to bob's job while
// alice's document was not final yet (its node died with the agent). Both
// jobs' series exist in Prometheus under {cluster="c", job_id="77"}; each
// document's live figures and timeline must be its own job's (alice 1
// core, bob 4), never the two summed, on the real ZincSearch and
// Prometheus.
func TestReusedIDSeriesStayApart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const index = "jobsight-jobs-reuse"
	st, c := stackWithJobIndex(t, ctx, index)

	now := time.Now().Truncate(time.Second)
	doc := func(docID, user string, submit time.Time, cpus int) jobmodel.Job {
		j := jobmodel.Job{DocID: docID, SchemaVersion: jobmodel.SchemaVersion, Cluster: "c", JobID: "77", SlurmJobID: 77,
			User: user, Account: "acct", Partition: "p", State: jobmodel.StateRunning, NodeCount: 1, Nodes: []string{"n1"},
			SubmitTime: &jobmodel.Time{Time: submit}, StartTime: &jobmodel.Time{Time: submit},
			UpdatedAt: &jobmodel.Time{Time: now}}
		j.Requested.CPUs = jobmodel.Ptr(int64(cpus))
		j.Sampling.IntervalSeconds = 15
		return j
	}
	alice := doc("c:77", "alice", now.Add(-2*time.Hour), 4)
	bob := doc(jobmodel.ReuseDocID("c:77", now.Add(-30*time.Minute)), "bob", now.Add(-30*time.Minute), 4)

	es := st.Elasticsearch
	bulkJobs(t, ctx, c, index, alice, bob)

	// Each job's CPU counter: alice uses 1 core, bob 4, both over the last
	// 20 minutes, on the same node, under the same job id.
	prw, err := promremote.New(promremote.Config{URL: st.Prometheus.URL + "/api/v1/write", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var series []promremote.Series
	for _, x := range []struct {
		j     jobmodel.Job
		cores float64
	}{{alice, 1}, {bob, 4}} {
		labels := []promremote.Label{{Name: "cluster", Value: "c"}, {Name: "job_id", Value: "77"}, {Name: "node", Value: "n1"},
			{Name: jobmodel.RunLabel, Value: jobmodel.RunOf(x.j.SubmitTime)}}
		cpu := promremote.Series{Name: "jobsight_job_cpu_usage_seconds_total", Labels: labels}
		mem := promremote.Series{Name: "jobsight_job_memory_used_bytes", Labels: labels}
		for ts := now.Add(-20 * time.Minute); !ts.After(now); ts = ts.Add(15 * time.Second) {
			cpu.Samples = append(cpu.Samples, promremote.Sample{TimestampMs: ts.UnixMilli(), Value: x.cores * ts.Sub(now.Add(-20*time.Minute)).Seconds()})
			mem.Samples = append(mem.Samples, promremote.Sample{TimestampMs: ts.UnixMilli(), Value: x.cores * (1 << 30)})
		}
		series = append(series, cpu, mem)
	}
	if err := prw.Write(ctx, series); err != nil {
		t.Fatal(err)
	}

	jd, _ := json.Marshal(map[string]any{"elasticsearchUrl": es.URL, "elasticsearchUser": es.User, "elasticsearchJobIndex": index,
		"prometheusUrl": st.Prometheus.URL, "timeoutSeconds": 30})
	inst, err := plugin.NewDatasource(ctx, backend.DataSourceInstanceSettings{UID: "reuse", Name: "Jobsight", JSONData: jd,
		DecryptedSecureJSONData: map[string]string{"elasticsearchPassword": es.Password}})
	if err != nil {
		t.Fatal(err)
	}
	ds := inst.(*plugin.Datasource)
	defer ds.Dispose()
	query := func(q string) data.Frames {
		t.Helper()
		resp, err := ds.QueryData(ctx, &backend.QueryDataRequest{
			PluginContext: backend.PluginContext{User: &backend.User{Login: "admin", Role: "Admin"},
				DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: "reuse"}},
			Queries: []backend.DataQuery{{RefID: "A", JSON: json.RawMessage(q), MaxDataPoints: 100, Interval: 15 * time.Second,
				TimeRange: backend.TimeRange{From: now.Add(-3 * time.Hour), To: now.Add(time.Minute)}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		dr := resp.Responses["A"]
		if dr.Error != nil {
			t.Fatalf("%s: %v", q, dr.Error)
		}
		return dr.Frames
	}

	// ZincSearch makes writes searchable after about a second.
	var cores map[string]float64
	deadline := time.Now().Add(time.Minute)
	for {
		cores = map[string]float64{}
		f := query(`{"queryType":"jobs"}`)[0]
		docID, _ := f.FieldByName("doc_id")
		used, _ := f.FieldByName("cpu_cores_used")
		for i := 0; docID != nil && used != nil && i < docID.Len(); i++ {
			id, idOK := docID.ConcreteAt(i)
			if v, ok := used.ConcreteAt(i); ok && idOK {
				cores[id.(string)] = v.(float64)
			}
		}
		if len(cores) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	want := map[string]float64{alice.DocID: 1, bob.DocID: 4}
	for id, w := range want {
		if got, ok := cores[id]; !ok || math.Abs(got-w) > 0.2 {
			t.Errorf("Jobs: %s uses %v cores now (found %v), want %v: its own job's series only", id, got, ok, w)
		}
	}

	// Each document's timeline (by its exact id) reads its own job's
	// series only: alice 1 core, bob 4, never 5.
	for _, x := range []struct {
		j     jobmodel.Job
		cores float64
	}{{alice, 1}, {bob, 4}} {
		timelineCores(t, query(`{"queryType":"jobTimeline","jobId":`+strconvQuote(x.j.DocID)+`}`), x.j.User, x.cores, now)
	}
}

// timelineCores checks that a timeline's CPU series stays at cores.
func timelineCores(t *testing.T, frames data.Frames, who string, cores float64, now time.Time) {
	t.Helper()
	points := 0
	for _, f := range frames {
		if f.Name != "cpu" || len(f.Fields) < 2 {
			continue
		}
		for i := 0; i < f.Fields[1].Len(); i++ {
			// Past the series' first minutes (rate()'s extrapolation at
			// a counter's first samples is not what this checks).
			if f.Fields[0].At(i).(time.Time).Before(now.Add(-18 * time.Minute)) {
				continue
			}
			if v, ok := f.Fields[1].ConcreteAt(i); ok {
				points++
				if math.Abs(v.(float64)-cores) > 0.5 {
					t.Fatalf("%s's timeline shows %v cores at %v, want %v: another job's series mixed in", who, v, f.Fields[0].At(i), cores)
				}
			}
		}
	}
	if points == 0 {
		t.Errorf("%s's timeline has no CPU points", who)
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
