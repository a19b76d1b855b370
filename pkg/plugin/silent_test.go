package plugin

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"os"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/pkg/models"
	"github.com/jobsight/jobsight/test/stack"
)

// A job whose node died with its checkpoint keeps a non-final document
// for ever. Through the datasource's query code on the real
// Elasticsearch-API server: such a job, silent for longer than
// silentAfterMinutes (its node document last written 8 h ago), is not
// running: it ends at its last update, so its reserved hours stop there,
// and the running scope (hogging) leaves it out. A job running for as long
// whose agent still rewrites its node document is running to now, though
// its job document was written only when it started.
func TestSilentJobIsNotRunning(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, suffix := stack.TestElasticsearch(t, ctx)
	jobIx, nodeIx := "jobsight-test-jobs-"+suffix, "jobsight-test-nodes-"+suffix
	es, err := elasticsearch.New(elasticsearch.Config{URLs: []string{srv.URL}, Username: srv.User, Password: srv.Password,
		CACertFile: srv.CACertFile, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string][]byte{jobIx: jobmodel.JobMapping(), nodeIx: jobmodel.NodeMapping()} {
		if err := es.EnsureIndex(ctx, name, m); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC().Truncate(time.Second)
	start := now.Add(-10 * time.Hour)
	job := func(id string) jobmodel.Job {
		return jobmodel.Job{DocID: "sc:" + id, SchemaVersion: jobmodel.SchemaVersion, Cluster: "sc", JobID: id, User: "alice",
			Partition: "gpu", State: jobmodel.StateRunning, StartTime: jobmodel.At(start), NodeCount: 1,
			Requested: jobmodel.Request{CPUs: jobmodel.Ptr(int64(4))}, UpdatedAt: jobmodel.At(start)}
	}
	node := func(j jobmodel.Job, at time.Time) jobmodel.Node {
		return jobmodel.Node{DocID: jobmodel.NodeDocID(j.DocID, "n1"), JobDocID: j.DocID, SchemaVersion: jobmodel.SchemaVersion,
			Cluster: "sc", JobID: j.JobID, Node: "n1", AgentState: jobmodel.AgentRunning, UpdatedAt: jobmodel.At(at)}
	}
	silent, alive := job("1"), job("2")
	var docs []store.Doc
	for _, j := range []jobmodel.Job{silent, alive} {
		raw, _ := json.Marshal(j)
		docs = append(docs, store.Doc{Kind: store.KindJobDoc, Index: jobIx, ID: j.DocID, Body: raw})
	}
	for _, n := range []jobmodel.Node{node(silent, now.Add(-8*time.Hour)), node(alive, now.Add(-time.Minute))} {
		raw, _ := json.Marshal(n)
		docs = append(docs, store.Doc{Kind: store.KindNodeDoc, Index: nodeIx, ID: n.DocID, Body: raw})
	}
	if f, err := es.Bulk(ctx, docs); err != nil || len(f) > 0 {
		t.Fatalf("storing the documents: %v %v", err, f)
	}

	jd, _ := json.Marshal(map[string]any{"elasticsearchUrl": srv.URL, "elasticsearchUser": srv.User, "elasticsearchJobIndex": jobIx,
		"elasticsearchNodeIndex": nodeIx, "prometheusUrl": "http://127.0.0.1:1", "timeoutSeconds": 5, "tlsCaCert": caPEM(t, srv.CACertFile)})
	inst, err := NewDatasource(ctx, backend.DataSourceInstanceSettings{UID: "silent", JSONData: jd,
		DecryptedSecureJSONData: map[string]string{models.SecureElasticsearchPassword: srv.Password}})
	if err != nil {
		t.Fatal(err)
	}
	d := inst.(*Datasource)
	defer d.Dispose()
	if d.settingsErr != nil {
		t.Fatal(d.settingsErr)
	}
	d.now = func() time.Time { return now }
	if d.settings.SilentAfterMinutes != models.DefaultSilentAfterMinutes {
		t.Errorf("silentAfterMinutes default %d", d.settings.SilentAfterMinutes)
	}
	qc := &queryCtx{ctx: ctx, st: &stats{}, v: Viewer{Full: true}, q: &models.Query{}, from: now.Add(-12 * time.Hour), to: now, now: now}

	var jobs []jobmodel.Job
	var figs []figures
	// ZincSearch makes writes searchable after about a second.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		jobs, figs, _, err = d.scopeJobs(qc, jobScope{q: qc.q, v: qc.v, from: qc.from, to: qc.to})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 2 || time.Now().After(deadline) {
			break
		}
	}
	got := map[string]figures{}
	for i, j := range jobs {
		got[j.DocID] = figs[i]
	}
	want := map[string]struct {
		running bool
		cpuResH float64
	}{silent.DocID: {false, 4 * 2}, alive.DocID: {true, 4 * 10}}
	for id, w := range want {
		f, ok := got[id]
		if !ok {
			t.Errorf("%s missing from the scope (%d jobs)", id, len(jobs))
			continue
		}
		if f.running != w.running || f.cpuResH == nil || math.Abs(*f.cpuResH-w.cpuResH) > 0.01 {
			t.Errorf("%s: running %v, reserved CPU-hours %v; want %v and %v", id, f.running, deref(f.cpuResH), w.running, w.cpuResH)
		}
	}

	// The running scope (the Hogging query's) leaves the silent job out.
	running, _, err := d.fetchJobs(*qc, jobScope{q: qc.q, v: qc.v, from: now, to: now, running: true}, nil, 0, 100, compactFields)
	if err != nil {
		t.Fatal(err)
	}
	if len(running) != 1 || running[0].DocID != alive.DocID {
		ids := []string{}
		for _, j := range running {
			ids = append(ids, j.DocID)
		}
		t.Errorf("running jobs %v, want only %s", ids, alive.DocID)
	}

	// Hogging's fallback contention (partitionCapacity) counts what other
	// running jobs hold: the silent job's 4 CPUs are not held any more.
	alloc, err := d.runningAllocations(qc, []string{"sc"})
	if err != nil {
		t.Fatal(err)
	}
	if got := alloc["sc/gpu"][models.ResourceCPU]; got != 4 {
		t.Errorf("running allocation of sc/gpu: %v CPUs, want 4 (the silent job's left out): %v", got, alloc)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// caPEM is the CA bundle's content for the tlsCaCert setting ("" for
// none).
func caPEM(t *testing.T, path string) string {
	t.Helper()
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
