package dsbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/demo"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/store/promremote"
	"github.com/jobsight/jobsight/test/stack"
)

// servers starts ZincSearch and Prometheus (no Slurm) under a temporary
// directory, stopped when the test ends.
func servers(t *testing.T, retention time.Duration) (*elasticsearch.Client, *promremote.Client, *stack.Server) {
	t.Helper()
	stack.Require(t, stack.PrometheusBin)
	ctx := context.Background()
	dir := t.TempDir()
	es, err := stack.StartElasticsearch(ctx, dir+"/es")
	if err != nil {
		stack.Unavailable(t, "no Elasticsearch-API server: %v", err)
	}
	t.Cleanup(func() {
		if !es.External {
			_ = es.Stop()
		}
	})
	prom, err := stack.StartPrometheusWith(ctx, dir+"/prometheus", stack.PrometheusOptions{Retention: retention})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prom.Stop() })
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{es.URL}, Username: es.User, Password: es.Password, Timeout: 2 * time.Minute, CACertFile: es.CACertFile})
	if err != nil {
		t.Fatal(err)
	}
	w, err := promremote.New(promremote.Config{URL: prom.URL + "/api/v1/write", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return c, w, prom
}

// TestSeedHistory seeds a small generated history (3 days, 600 finished
// and 12 running jobs) into a real ZincSearch and Prometheus the way
// `jobsight-stack up --history` does, and reads back the number of
// documents and a multi-node GPU job's series over its run.
func TestSeedHistory(t *testing.T) {
	c, w, prom := servers(t, 30*24*time.Hour)
	ctx := context.Background()
	end := time.Now().Truncate(time.Second)
	g, err := demo.New(demo.Config{Seed: 3, End: end, Span: 72 * time.Hour, Jobs: 600, Running: 12, Clusters: []string{"demo", "demo-ai"}})
	if err != nil {
		t.Fatal(err)
	}
	running := g.Running()
	var all []jobmodel.Job
	st, err := demo.IndexJobs(ctx, c, "demo-jobs", g, running, demo.IndexOptions{Batch: 250, Keep: func(j *jobmodel.Job) { all = append(all, *j) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("indexed %s", st)
	if err := demo.WaitCount(ctx, c, "demo-jobs", 612, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, err := demo.CountDocs(ctx, c, "demo-jobs", `{"term":{"source":"generated"}}`); err != nil || n != 612 {
		t.Fatalf("documents with source generated: %d (%v), want 612", n, err)
	}
	if n, err := demo.CountDocs(ctx, c, "demo-jobs", `{"term":{"final":true}}`); err != nil || n != 600 {
		t.Fatalf("final documents: %d (%v), want 600", n, err)
	}
	hs, err := demo.WriteHistory(ctx, w, g.Site(), all, end)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("history: %s", hs)
	// A finished multi-node GPU job with readable utilisation: its
	// utilisation series covers its run, per node and GPU, and its
	// mean is the document's.
	var pick *jobmodel.Job
	for i := range all {
		j := &all[i]
		if j.Final && j.NodeCount > 1 && j.GPU != nil && j.GPU.UtilizationAvg != nil && *j.ElapsedSeconds > 3600 {
			pick = j
			break
		}
	}
	if pick == nil {
		t.Fatal("no finished multi-node GPU job of over an hour in the seed")
	}
	sel := fmt.Sprintf(`{cluster=%q,job_id=%q%s}`, pick.Cluster, pick.JobID, jobmodel.RunMatcher(pick.SubmitTime))
	at := pick.EndTime.Time
	rng := strconv.FormatInt(int64(pick.EndTime.Sub(pick.StartTime.Time).Seconds()), 10) + "s"
	n, ok, err := stack.PromQuery(ctx, prom.URL, fmt.Sprintf("count(count_over_time(jobsight_job_gpu_utilization_ratio%s[%s] @ %d) > 0)", sel, rng, at.Unix()))
	if err != nil || !ok || int64(n) != *pick.Requested.GPUs {
		t.Fatalf("GPU series of %s: %v (ok %v, %v), want %d", pick.DocID, n, ok, err, *pick.Requested.GPUs)
	}
	samples, _, err := stack.PromQuery(ctx, prom.URL, fmt.Sprintf("min(count_over_time(jobsight_job_gpu_utilization_ratio%s[%s] @ %d))", sel, rng, at.Unix()))
	if err != nil {
		t.Fatal(err)
	}
	wantSamples := pick.EndTime.Sub(pick.StartTime.Time).Seconds() / pick.Sampling.IntervalSeconds
	if samples < wantSamples*0.95 {
		t.Errorf("%s: %v samples per GPU series, want about %.0f (its whole run)", pick.DocID, samples, wantSamples)
	}
	mean, _, err := stack.PromQuery(ctx, prom.URL, fmt.Sprintf("avg(avg_over_time(jobsight_job_gpu_utilization_ratio%s[%s] @ %d))", sel, rng, at.Unix()))
	if err != nil {
		t.Fatal(err)
	}
	if d := mean - *pick.GPU.UtilizationAvg; d > 0.05 || d < -0.05 {
		t.Errorf("%s: series mean utilisation %.3f, document %.3f", pick.DocID, mean, *pick.GPU.UtilizationAvg)
	}
	// The oldest job's memory series is there too: the slices reached
	// back to the first job without Prometheus refusing them.
	first := all[0]
	v, ok, err := stack.PromQuery(ctx, prom.URL, fmt.Sprintf(`count(count_over_time(jobsight_job_memory_used_bytes{cluster=%q,job_id=%q}[%ds] @ %d))`,
		first.Cluster, first.JobID, int64(first.EndTime.Sub(first.StartTime.Time).Seconds())+1, first.EndTime.Unix()))
	if first.Memory != nil && (err != nil || !ok || int(v) != first.NodeCount) {
		t.Errorf("oldest job %s: %v memory series (ok %v, %v), want %d", first.DocID, v, ok, err, first.NodeCount)
	}
	// A running job's series reach the end.
	r0 := running[0]
	v, ok, err = stack.PromQuery(ctx, prom.URL, fmt.Sprintf(`count(jobsight_job_gpu_utilization_ratio{cluster=%q,job_id=%q} @ %d)`, r0.Cluster, r0.JobID, end.Unix()))
	if err != nil || !ok || int64(v) != *r0.Requested.GPUs {
		t.Errorf("running job %s: %v GPU series at the end (ok %v, %v), want %d", r0.DocID, v, ok, err, *r0.Requested.GPUs)
	}
}

// TestIndexRate measures IndexJobs into the Elasticsearch-API server at
// JOBSIGHT_DSBENCH_RATE documents (e.g. 20000 or 100000; skipped unless
// set) in the benchmark's compact form and logs the rate.
func TestIndexRate(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("JOBSIGHT_DSBENCH_RATE"))
	if n <= 0 {
		t.Skip("set JOBSIGHT_DSBENCH_RATE=<documents> to measure the bulk-indexing rate")
	}
	c, _, _ := servers(t, 0)
	ctx := context.Background()
	g, err := demo.New(demo.Config{Seed: Seed, End: time.Now(), Span: 365 * 24 * time.Hour, Jobs: n, Clusters: []string{Cluster, Cluster2}, Compact: true})
	if err != nil {
		t.Fatal(err)
	}
	batch, _ := strconv.Atoi(os.Getenv("JOBSIGHT_DSBENCH_BATCH"))
	workers, _ := strconv.Atoi(os.Getenv("JOBSIGHT_DSBENCH_WORKERS"))
	st, err := demo.IndexJobs(ctx, c, Index, g, nil, demo.IndexOptions{Batch: batch, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := demo.WaitCount(ctx, c, Index, n, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("bulk: %s; searchable %s later", st, time.Since(t0).Round(time.Millisecond))
}

// TestSeedReuse: with JOBSIGHT_DSBENCH_DATA a second run finds the first
// run's finished jobs in ZincSearch's kept data and indexes only the
// running ones; a different size indexes again.
func TestSeedReuse(t *testing.T) {
	stack.Require(t, stack.PrometheusBin)
	if os.Getenv(stack.EnvTestESURL) != "" {
		t.Skip("the kept data directory is ZincSearch's")
	}
	data := t.TempDir()
	t.Setenv(EnvData, data)
	t.Setenv(EnvJobs, "400")
	t.Setenv(EnvRunning, "20")
	t.Setenv(EnvSpan, "1d")
	ctx := context.Background()
	run := func() *Env {
		t.Helper()
		e, err := Start(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if err := e.Seed(ctx); err != nil {
			t.Fatal(err)
		}
		t.Log(e.Summary())
		if len(e.Jobs) != 20 || e.TimelineJob == "" || e.Series == 0 {
			t.Errorf("%d running jobs, timeline %q, %d series", len(e.Jobs), e.TimelineJob, e.Series)
		}
		return e
	}
	first := run()
	if first.Reused || FinishedJobs != 400 || FinishedSpan != 24*time.Hour {
		t.Fatalf("first run: reused %v, %d jobs over %s", first.Reused, FinishedJobs, FinishedSpan)
	}
	second := run()
	if !second.Reused || !second.SeedEnd.Equal(first.SeedEnd) || second.Indexed.Docs != 20 {
		t.Errorf("second run: reused %v, seed end %s (first %s), indexed %d", second.Reused, second.SeedEnd, first.SeedEnd, second.Indexed.Docs)
	}
	// Another size: the kept data is removed, not added to (the index
	// holds exactly the new seed).
	t.Setenv(EnvJobs, "300")
	third := run()
	if third.Reused || third.Indexed.Docs != 320 {
		t.Errorf("another size: reused %v, indexed %d", third.Reused, third.Indexed.Docs)
	}
	zinc, err := stack.StartZinc(ctx, filepath.Join(data, "es"))
	if err != nil {
		t.Fatal(err)
	}
	defer zinc.Stop()
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{zinc.URL}, Username: zinc.User, Password: zinc.Password})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := demo.CountDocs(ctx, c, Index, ""); err != nil || n != 320 {
		t.Errorf("the kept index holds %d documents (%v), want the new seed's 320", n, err)
	}
}

func TestSizesFromEnv(t *testing.T) {
	for _, c := range []struct{ jobs, running, span, want string }{
		{"abc", "", "", EnvJobs}, {"0", "", "", EnvJobs}, {"", "-1", "", EnvRunning}, {"", "", "0d", EnvSpan}, {"", "", "401d", EnvSpan},
	} {
		t.Setenv(EnvJobs, c.jobs)
		t.Setenv(EnvRunning, c.running)
		t.Setenv(EnvSpan, c.span)
		if err := sizesFromEnv(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c, err, c.want)
		}
	}
	t.Setenv(EnvJobs, "1000000")
	t.Setenv(EnvRunning, "")
	t.Setenv(EnvSpan, "")
	if err := sizesFromEnv(); err != nil || FinishedJobs != 1_000_000 || RunningJobs != 500 || FinishedSpan != 365*24*time.Hour {
		t.Errorf("a million: %v, %d, %d, %s", err, FinishedJobs, RunningJobs, FinishedSpan)
	}
	t.Setenv(EnvJobs, "")
	if err := sizesFromEnv(); err != nil || FinishedJobs != 10000 || FinishedSpan != 7*24*time.Hour {
		t.Errorf("defaults: %v, %d, %s", err, FinishedJobs, FinishedSpan)
	}
}
