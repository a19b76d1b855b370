package clusterstate

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/test/stack"
)

// A node crashed with its state (a diskless node, a reimage): its job's
// document stays non-final and Slurm no longer lists the job. On a real
// Elasticsearch-API server, one poll of the collector (Slurm read from the
// captured squeue answer, which lists 990943 as running) closes it as lost
// at its last update, with the usage its node document held and what is
// missing named; the job Slurm still lists, a job whose node wrote within
// lost_after and another cluster's job are left alone; and an agent that
// was only late still writes its own final document over the lost one.
// The jobs sit in monthly indices and in the single index of releases
// before 0.2: the collector finds both, and closes each where it is.
func TestCollectorClosesLostJobs(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, suffix := stack.TestElasticsearch(t, ctx)
	ix := "-lost-" + suffix
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	es, err := elasticsearch.New(elasticsearch.Config{URLs: []string{srv.URL}, Username: srv.User, Password: srv.Password,
		CACertFile: srv.CACertFile, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	jobIx, nodeIx := "jobsight-jobs"+ix, "jobsight-nodes"+ix // the bases, and the pre-0.2 single indices
	now := time.Now().UTC().Truncate(time.Millisecond)
	start := now.Add(-3 * time.Hour)
	jobMonth, nodeMonth := jobmodel.MonthlyIndex(jobIx, start), jobmodel.MonthlyIndex(nodeIx, start)
	for name, m := range map[string][]byte{jobIx: jobmodel.JobMapping(), nodeIx: jobmodel.NodeMapping(),
		jobMonth: jobmodel.JobMapping(), nodeMonth: jobmodel.NodeMapping()} {
		if err := es.EnsureIndex(ctx, name, m); err != nil {
			t.Fatal(err)
		}
	}

	running := func(cluster, id string, nodes ...string) jobmodel.Job {
		return jobmodel.Job{DocID: cluster + ":" + id, SchemaVersion: jobmodel.SchemaVersion, Source: jobmodel.SourceSlurm,
			Cluster: cluster, JobID: id, User: "alice", State: jobmodel.StateRunning, StartTime: jobmodel.At(start),
			Nodes: nodes, NodeCount: len(nodes), Requested: jobmodel.Request{CPUs: jobmodel.Ptr(int64(2))},
			UpdatedAt: jobmodel.At(start)}
	}
	nodeDoc := func(job jobmodel.Job, node string, at time.Time) jobmodel.Node {
		return jobmodel.Node{DocID: jobmodel.NodeDocID(job.DocID, node), JobDocID: job.DocID, SchemaVersion: jobmodel.SchemaVersion,
			Source: jobmodel.SourceSlurm, Cluster: job.Cluster, JobID: job.JobID, Node: node, StartTime: jobmodel.At(start),
			Usage:      jobmodel.Usage{CPU: &jobmodel.CPUUsage{CoreSeconds: jobmodel.Ptr(3600.0)}},
			AgentState: jobmodel.AgentRunning, UpdatedAt: jobmodel.At(at)}
	}
	lost := running("csclu", "880001", "n1", "n2")  // n1 crashed 2h ago, n2 never wrote
	listed := running("csclu", "990943", "csnode1") // Slurm lists it running
	recent := running("csclu", "880002", "n3")      // its node wrote a minute ago
	other := running("othercl", "880003", "m1")     // another cluster's
	oldLost := running("csclu", "880004", "n4")     // lost, written before the upgrade
	lastSeen := now.Add(-2 * time.Hour)
	var docs []store.Doc
	// lost is in its monthly indices, the others in the single ones.
	for _, j := range []jobmodel.Job{lost, listed, recent, other, oldLost} {
		b, _ := json.Marshal(j)
		index := jobIx
		if j.DocID == lost.DocID {
			index = jobMonth
		}
		docs = append(docs, store.Doc{Kind: store.KindJobDoc, Index: index, ID: j.DocID, Body: b})
	}
	for _, n := range []jobmodel.Node{nodeDoc(lost, "n1", lastSeen), nodeDoc(recent, "n3", now.Add(-time.Minute)), nodeDoc(oldLost, "n4", lastSeen)} {
		b, _ := json.Marshal(n)
		index := nodeIx
		if n.JobDocID == lost.DocID {
			index = nodeMonth
		}
		docs = append(docs, store.Doc{Kind: store.KindNodeDoc, Index: index, ID: n.DocID, Body: b})
	}
	if f, err := es.Bulk(ctx, docs); err != nil || len(f) > 0 {
		t.Fatalf("storing the documents: %v %v", err, f)
	}
	// ZincSearch makes writes searchable after about a second.
	waitFor(t, func() bool {
		got, err := es.GetByIDs(ctx, jobmodel.SearchIndices(jobIx), []string{lost.DocID, listed.DocID, recent.DocID, other.DocID, oldLost.DocID})
		nodes, err2 := es.GetByIDs(ctx, jobmodel.SearchIndices(nodeIx), []string{jobmodel.NodeDocID(lost.DocID, "n1"), jobmodel.NodeDocID(recent.DocID, "n3"),
			jobmodel.NodeDocID(oldLost.DocID, "n4")})
		return err == nil && err2 == nil && len(got) == 5 && len(nodes) == 3
	}, "the stored documents to become searchable")

	cfg := DefaultConfig()
	cfg.Cluster = "csclu"
	cfg.Elasticsearch.URLs = []string{srv.URL}
	cfg.Elasticsearch.CAFile = srv.CACertFile
	cfg.Elasticsearch.Index = "jobsight-cluster-state" + ix
	cfg.Elasticsearch.JobIndex, cfg.Elasticsearch.NodeIndex = jobIx, nodeIx
	if srv.User != "" {
		pw := filepath.Join(t.TempDir(), "pw")
		if err := os.WriteFile(pw, []byte(srv.Password), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg.Elasticsearch.Username, cfg.Elasticsearch.PasswordFile = srv.User, pw
	}
	cfg.Spool.Dir = filepath.Join(t.TempDir(), "spool")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	c, err := New(cfg, Options{Source: &fixtureSource{t: t}, Registerer: reg, Logger: quiet, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, c.metrics.lostClosed); got != 2 {
		t.Errorf("closed %v lost jobs, want 2", got)
	}
	var closed jobmodel.Job
	waitFor(t, func() bool {
		closed = getJob(t, ctx, es, jobMonth, lost.DocID)
		return closed.Final
	}, "the lost job to be written final in its monthly index")
	// The job of the single index is closed there, not copied into a
	// monthly index (where readers would see it twice).
	waitFor(t, func() bool { return getJob(t, ctx, es, jobIx, oldLost.DocID).Final }, "the pre-upgrade lost job to be written final in place")
	if got := getJob(t, ctx, es, jobMonth, oldLost.DocID); got.DocID != "" {
		t.Errorf("the pre-upgrade job was written to %s too", jobMonth)
	}
	if got := getJob(t, ctx, es, jobIx, lost.DocID); got.DocID != "" {
		t.Errorf("the monthly index's job was written to the single index %s", jobIx)
	}
	if closed.State != jobmodel.StateUnknown || closed.EndReason != jobmodel.EndLost || closed.EndTime == nil || !closed.EndTime.Equal(lastSeen) {
		t.Errorf("closed job: state %q end_reason %q end_time %v; want UNKNOWN, lost, %v", closed.State, closed.EndReason, closed.EndTime, lastSeen)
	}
	for _, m := range []string{jobmodel.MissingFinalState, "node:n2", "samples_after_agent_loss:n1"} {
		if !slices.Contains(closed.MissingMetrics, m) {
			t.Errorf("missing_metrics %v lacks %s", closed.MissingMetrics, m)
		}
	}
	if closed.CPU == nil || closed.CPU.CoreSeconds == nil || *closed.CPU.CoreSeconds != 3600 ||
		closed.ElapsedSeconds == nil || *closed.ElapsedSeconds != 3600 {
		t.Errorf("closed job's usage: cpu %+v elapsed %v; want the node document's 3600 core-seconds over 1h", closed.CPU, closed.ElapsedSeconds)
	}
	for _, j := range []jobmodel.Job{listed, recent, other} {
		if got := getJob(t, ctx, es, jobIx, j.DocID); got.Final || got.EndReason != "" {
			t.Errorf("%s was closed: final %v end_reason %q", j.DocID, got.Final, got.EndReason)
		}
	}

	// The agent was only late: its final document (newer updated_at,
	// versioned as agents write) replaces the collector's.
	late := lost
	late.State, late.Final, late.EndTime, late.UpdatedAt = jobmodel.StateCompleted, true, jobmodel.At(now.Add(-time.Hour)), jobmodel.At(now)
	b, _ := json.Marshal(late)
	if f, err := es.Bulk(ctx, []store.Doc{{Kind: store.KindJobDoc, Index: late.IndexOf(jobIx, now), ID: late.DocID, Body: b, Version: now.UnixMicro()}}); err != nil || len(f) > 0 {
		t.Fatalf("the late agent's write: %v %v", err, f)
	}
	waitFor(t, func() bool { return getJob(t, ctx, es, jobMonth, lost.DocID).State == jobmodel.StateCompleted }, "the late agent's final document to win")
}

func getJob(t *testing.T, ctx context.Context, es *elasticsearch.Client, index, id string) jobmodel.Job {
	t.Helper()
	got, err := es.GetByIDs(ctx, index, []string{id})
	if err != nil {
		t.Fatal(err)
	}
	var j jobmodel.Job
	if raw := got[id]; raw != nil {
		if err := json.Unmarshal(raw, &j); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

// waitFor polls cond for up to 20s (ZincSearch's writes take about a
// second to be searchable).
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
