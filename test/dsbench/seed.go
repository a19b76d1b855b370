// Package dsbench is the datasource benchmark environment: ZincSearch and
// Prometheus started without Slurm (test/stack), seeded by the generator
// of internal/demo with FinishedJobs finished jobs over FinishedSpan and
// RunningJobs running ones (10,000 over 7 days and 500 by default;
// JOBSIGHT_DSBENCH_JOBS=1000000 seeds a million over a year), bulk-indexed
// into the job index created with jobmodel.JobMapping, and the running
// jobs' series written by remote write as the agent writes them ({cluster,
// job_id, node, run[, gpu]}, a sample every 15 s over the last 40 minutes,
// then one every 15 s while the benchmark runs), with the partitions'
// cluster-state series. It also holds what the benchmark compares the
// plugin with: the requests Grafana's stock Elasticsearch and Prometheus
// datasources send to build the same panels (stock.go), and a recorder and
// replayer of backend answers for measuring the plugin's own share without
// network work (replay.go).
//
// Nothing here runs in `make test`: pkg/plugin's BenchmarkDatasource starts it
// only with JOBSIGHT_DSBENCH=1.
package dsbench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/jobsight/jobsight/internal/demo"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/store/promremote"
	"github.com/jobsight/jobsight/test/stack"
)

// Environment variables: EnvVar gates the benchmark (it runs only when
// this is "1"); EnvJobs, EnvRunning and EnvSpan size the seed (default
// 10,000 finished jobs over 7 days, 1,000,000 over 365 days when EnvJobs
// is more than 100,000; 500 running); EnvData names a directory that
// keeps ZincSearch's data between runs: a run that finds the same seed
// there (dsbench-seed.json and the number of finished documents) indexes
// only the running jobs.
const (
	EnvVar     = "JOBSIGHT_DSBENCH"
	EnvJobs    = "JOBSIGHT_DSBENCH_JOBS"
	EnvRunning = "JOBSIGHT_DSBENCH_RUNNING"
	EnvSpan    = "JOBSIGHT_DSBENCH_SPAN"
	EnvData    = "JOBSIGHT_DSBENCH_DATA"
)

// Sizes of the seed: variables, set by Start from the environment (the
// defaults are the 10,000-job benchmark).
var (
	FinishedJobs = 10000
	RunningJobs  = 500
	// FinishedSpan is how far back finished jobs were submitted (the
	// dashboards' range covers it).
	FinishedSpan = 7 * 24 * time.Hour
)

// The seeded site (internal/demo's: partitions cpu, bigmem, debug and
// gpu on Cluster, gpu-h100 on Cluster2).
const (
	Cluster  = "bench"
	Cluster2 = "bench-ai"
	Index    = "jobsight-jobs"
	// Seed is the generator's seed.
	Seed = 42
	// SeriesHistory is how far back the running jobs' series reach.
	SeriesHistory = 40 * time.Minute
	// SampleEvery is the series' sample interval.
	SampleEvery = demo.RunningStep
)

// Env is a started and seeded environment.
type Env struct {
	Stack *stack.Stack
	// Now is the seeding time: running jobs run at it, series reach it
	// (and later, while Feed runs). SeedEnd is the end of the finished
	// jobs' history: Now, or the time of the seed kept in EnvData.
	Now, SeedEnd time.Time
	// Jobs are the running jobs (the finished ones are never all in
	// memory: a million of them would not fit).
	Jobs []jobmodel.Job
	// Finished is the number of finished jobs in the index; Reused says
	// they were found in EnvData's index, not indexed by this run.
	Finished int
	Reused   bool
	// TimelineJob is a running multi-node GPU job ("<cluster>:<id>").
	TimelineJob string
	// Series is the number of series written for the running jobs (and
	// the partitions' cluster-state series).
	Series int
	// Samples is the number of samples written while seeding.
	Samples int
	// IndexTook and SeriesTook are the seeding phases' times; Indexed
	// what indexing did (documents, bytes, rate).
	IndexTook, SeriesTook time.Duration
	Indexed               demo.IndexStats

	gens   []demo.Gen
	prw    *promremote.Client
	mu     sync.Mutex
	lastTS int64
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once
	cerr   error
	zinc   *stack.ESServer // started apart in EnvData
	data   string
}

// sizesFromEnv sets FinishedJobs, RunningJobs and FinishedSpan from the
// environment.
func sizesFromEnv() error {
	num := func(name string, def, lo, hi int) (int, error) {
		v := os.Getenv(name)
		if v == "" {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("%s=%q: want a whole number from %d to %d", name, v, lo, hi)
		}
		return n, nil
	}
	var err error
	if FinishedJobs, err = num(EnvJobs, 10000, 1, 5_000_000); err != nil {
		return err
	}
	if RunningJobs, err = num(EnvRunning, 500, 1, 20000); err != nil {
		return err
	}
	FinishedSpan = 7 * 24 * time.Hour
	if FinishedJobs > 100_000 {
		FinishedSpan = 365 * 24 * time.Hour
	}
	if v := os.Getenv(EnvSpan); v != "" {
		if FinishedSpan, err = demo.ParseSpan(v); err != nil {
			return fmt.Errorf("%s: %w", EnvSpan, err)
		}
	}
	return nil
}

// Start starts ZincSearch (or the Elasticsearch named by
// JOBSIGHT_TEST_ES_URL; ZincSearch in EnvData's directory when that is
// set) and Prometheus under dir, without Slurm. The caller must Close the
// Env, also when a later step fails.
func Start(ctx context.Context, dir string) (*Env, error) {
	if err := sizesFromEnv(); err != nil {
		return nil, err
	}
	// The job index must answer one search of all 10,500 jobs for the
	// per-job reservation panel; ZincSearch caps a search at
	// ZINC_MAX_RESULTS (10,000 by default, like Elasticsearch's
	// index.max_result_window), which its process inherits from ours.
	if os.Getenv("ZINC_MAX_RESULTS") == "" {
		os.Setenv("ZINC_MAX_RESULTS", "20000")
	}
	e := &Env{data: os.Getenv(EnvData)}
	if e.data == "" || os.Getenv(stack.EnvTestESURL) != "" {
		st, err := stack.Up(ctx, dir, stack.Options{NoSlurm: true})
		if err != nil {
			return nil, err
		}
		e.Stack = st
		return e, nil
	}
	// ZincSearch keeps its data (and credentials) in EnvData's directory;
	// Prometheus starts afresh (the running jobs' series are relative to
	// now).
	if err := os.MkdirAll(e.data, 0o755); err != nil { // #nosec G703 -- the developer's own benchmark directory, named in their environment
		return nil, fmt.Errorf("%s: %w", EnvData, err)
	}
	// Data of another seed (or of an interrupted one) is removed: its
	// documents would stay beside the new seed's.
	if old, ok := readMark(e.data); !ok || !old.sameSeed(currentMark()) {
		if err := os.RemoveAll(filepath.Join(e.data, "es")); err != nil { // #nosec G703 -- the benchmark's own data under the developer's directory
			return nil, fmt.Errorf("%s: removing another seed's data: %w", EnvData, err)
		}
	}
	zinc, err := stack.StartZinc(ctx, filepath.Join(e.data, "es"))
	if err != nil {
		return nil, err
	}
	prom, err := stack.StartPrometheus(ctx, filepath.Join(dir, "prometheus"))
	if err != nil {
		_ = zinc.Stop()
		return nil, err
	}
	e.zinc = zinc
	e.Stack = &stack.Stack{Dir: dir, Prometheus: prom, Elasticsearch: zinc}
	return e, nil
}

// Close stops the feeder and the servers; safe to call more than once and
// from another goroutine (a watchdog).
func (e *Env) Close() error {
	if e == nil {
		return nil
	}
	e.closed.Do(func() {
		e.StopFeed()
		if e.Stack != nil {
			e.cerr = e.Stack.Down()
		}
	})
	return e.cerr
}

// ESURL, ESUser, ESPassword and PromURL say where the seeded servers are.
func (e *Env) ESURL() string      { return e.Stack.Elasticsearch.URL }
func (e *Env) ESUser() string     { return e.Stack.Elasticsearch.User }
func (e *Env) ESPassword() string { return e.Stack.Elasticsearch.Password }
func (e *Env) PromURL() string    { return e.Stack.Prometheus.URL }

// seedMark is what EnvData's dsbench-seed.json records of the seed its
// index holds.
type seedMark struct {
	Seed     uint64    `json:"seed"`
	Finished int       `json:"finished"`
	SpanSec  int64     `json:"span_seconds"`
	End      time.Time `json:"end"`
	Compact  bool      `json:"compact"`
}

func currentMark() seedMark {
	return seedMark{Seed: Seed, Finished: FinishedJobs, SpanSec: int64(FinishedSpan / time.Second), Compact: FinishedJobs > 100_000}
}

// sameSeed: the marks describe the same finished jobs (up to their end).
func (m seedMark) sameSeed(o seedMark) bool {
	m.End, o.End = time.Time{}, time.Time{}
	return m == o
}

func readMark(dir string) (seedMark, bool) {
	var m seedMark
	b, err := os.ReadFile(filepath.Join(dir, "dsbench-seed.json")) // #nosec G703 -- the benchmark's own mark file
	return m, err == nil && json.Unmarshal(b, &m) == nil
}

// GeneratorConfig is the generator's configuration for a seed ending at
// end.
func GeneratorConfig(end time.Time) demo.Config {
	return demo.Config{Seed: Seed, End: end, Span: FinishedSpan, Jobs: FinishedJobs, Running: RunningJobs,
		Clusters: []string{Cluster, Cluster2}, Compact: FinishedJobs > 100_000}
}

// Seed generates the jobs, indexes them (only the running ones when
// EnvData holds the same finished jobs) and writes the running jobs'
// series, then waits until the index answers all of them.
func (e *Env) Seed(ctx context.Context) error {
	e.Now = time.Now().Truncate(time.Second)
	e.SeedEnd = e.Now
	es := e.Stack.Elasticsearch
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{es.URL}, Username: es.User, Password: es.Password, Timeout: 5 * time.Minute, CACertFile: es.CACertFile})
	if err != nil {
		return err
	}
	if _, err := c.Info(ctx); err != nil {
		return err
	}
	mark := currentMark()
	markFile := filepath.Join(e.data, "dsbench-seed.json")
	if e.data != "" {
		if old, ok := readMark(e.data); ok && old.sameSeed(mark) {
			n, err := demo.CountDocs(ctx, c, Index, `{"term":{"final":true}}`)
			if err == nil && n == FinishedJobs {
				e.SeedEnd, e.Reused = old.End, true
			}
		}
	}
	gen, err := demo.New(GeneratorConfig(e.SeedEnd))
	if err != nil {
		return err
	}
	if e.Reused {
		// Only the running jobs, generated relative to now.
		rc := GeneratorConfig(e.Now)
		if gen, err = demo.New(rc); err != nil {
			return err
		}
	}
	e.Jobs = gen.Running()
	if len(e.Jobs) > 0 {
		e.TimelineJob = e.Jobs[0].DocID
	}
	e.Finished = FinishedJobs
	t0 := time.Now()
	if e.Reused {
		if e.Indexed, err = demo.IndexJobs(ctx, c, Index, emptyGen(), e.Jobs, demo.IndexOptions{}); err != nil {
			return err
		}
	} else {
		if e.data != "" {
			_ = os.Remove(markFile) // until the new seed is complete
		}
		if e.Indexed, err = demo.IndexJobs(ctx, c, Index, gen, e.Jobs, demo.IndexOptions{}); err != nil {
			return err
		}
	}
	// ZincSearch indexes what a bulk request took in the background, at
	// some 50–150 of these documents a second on two shared cores (each
	// field costs it; measured with TestIndexRate): a million take hours.
	wait := 10*time.Minute + time.Duration(FinishedJobs)*40*time.Millisecond
	if e.Reused {
		wait = 10 * time.Minute
	}
	if err := demo.WaitCount(ctx, c, Index, FinishedJobs+len(e.Jobs), wait); err != nil {
		return err
	}
	e.IndexTook = time.Since(t0)
	if e.data != "" && !e.Reused {
		mark.End = e.SeedEnd
		b, _ := json.Marshal(mark)
		if err := os.WriteFile(markFile, b, 0o644); err != nil {
			return err
		}
	}
	// The series reach the time they are written (indexing takes a
	// while), so that rate()[2m] at the first query has samples.
	t0 = time.Now()
	err = e.writeSeries(ctx, t0.Truncate(time.Second), gen.Site())
	e.SeriesTook = time.Since(t0)
	return err
}

// emptyGen is a generator with no finished jobs.
func emptyGen() *demo.Generator {
	g, _ := demo.New(demo.Config{End: time.Now(), Clusters: []string{Cluster}})
	return g
}

// buildGens builds the series of the running jobs and of the partitions.
func (e *Env) buildGens(site *demo.Site) {
	var gens []demo.Gen
	alloc := map[string][2]float64{}
	for ji := range e.Jobs {
		j := &e.Jobs[ji]
		gens = append(gens, demo.SeriesOf(j, e.Now)...)
		k := j.Cluster + "/" + j.Partition
		a := alloc[k]
		a[0] += float64(*j.Requested.CPUs)
		a[1] += float64(*j.Requested.GPUs)
		alloc[k] = a
	}
	gens = append(gens, demo.PartitionSeries(site, func(time.Time) map[string][2]float64 { return alloc })...)
	e.gens = gens
	e.Series = len(gens)
}

// writeSeries writes every series' history (in order, each series whole in
// one request), then Feed keeps them current.
func (e *Env) writeSeries(ctx context.Context, until time.Time, site *demo.Site) error {
	c, err := promremote.New(promremote.Config{URL: e.Stack.Prometheus.URL + "/api/v1/write", Timeout: 2 * time.Minute})
	if err != nil {
		return err
	}
	e.prw = c
	e.buildGens(site)
	first := until.Add(-SeriesHistory)
	const perBatch = 500
	for i := 0; i < len(e.gens); i += perBatch {
		var batch []promremote.Series
		for _, g := range e.gens[i:min(i+perBatch, len(e.gens))] {
			s := promremote.Series{Name: g.Name, Labels: g.Labels}
			for t := first; !t.After(until); t = t.Add(SampleEvery) {
				s.Samples = append(s.Samples, promremote.Sample{TimestampMs: t.UnixMilli(), Value: g.Value(t)})
			}
			e.Samples += len(s.Samples)
			batch = append(batch, s)
		}
		if err := c.Write(ctx, batch); err != nil {
			return fmt.Errorf("remote write: %w", err)
		}
	}
	e.lastTS = until.UnixMilli()
	// Wait until the last sample is queryable.
	deadline := time.Now().Add(time.Minute)
	for {
		v, ok, err := stack.PromQuery(ctx, e.Stack.Prometheus.URL, "count(jobsight_job_cpu_usage_seconds_total)")
		if err == nil && ok && v > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Prometheus has no job series a minute after writing them (%v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Feed writes one sample of every series every SampleEvery until StopFeed,
// as the agents would while the benchmark runs, so that rate()[2m] at the
// time of each query has data.
func (e *Env) Feed() {
	e.mu.Lock()
	e.stop, e.done = make(chan struct{}), make(chan struct{})
	e.mu.Unlock()
	go func() {
		defer close(e.done)
		tick := time.NewTicker(SampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-e.stop:
				return
			case now := <-tick.C:
				_ = e.feedOnce(now)
			}
		}
	}()
}

func (e *Env) feedOnce(now time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	ts := now.UnixMilli()
	if ts <= e.lastTS {
		return nil
	}
	batch := make([]promremote.Series, 0, len(e.gens))
	for _, g := range e.gens {
		batch = append(batch, promremote.Series{Name: g.Name, Labels: g.Labels,
			Samples: []promremote.Sample{{TimestampMs: ts, Value: g.Value(now)}}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.prw.Write(ctx, batch)
	if err == nil {
		e.lastTS = ts
	}
	return err
}

// StopFeed stops Feed (safe without Feed).
func (e *Env) StopFeed() {
	e.mu.Lock()
	stop, done := e.stop, e.done
	e.stop = nil
	e.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// Running returns the running jobs' doc ids, sorted.
func (e *Env) Running() []string {
	var out []string
	for _, j := range e.Jobs {
		if !j.Final {
			out = append(out, j.DocID)
		}
	}
	sort.Strings(out)
	return out
}

// Summary describes the seeded data in one line.
func (e *Env) Summary() string {
	var gpuJobs, multi int
	for _, j := range e.Jobs {
		if j.Requested.GPUs != nil && *j.Requested.GPUs > 0 {
			gpuJobs++
		}
		if j.NodeCount > 1 {
			multi++
		}
	}
	how := fmt.Sprintf("indexed in %s (%s)", e.IndexTook.Round(time.Millisecond), e.Indexed)
	if e.Reused {
		how = fmt.Sprintf("finished jobs kept in %s from a seed ending %s; running jobs indexed in %s", e.data, e.SeedEnd.Format(time.RFC3339), e.IndexTook.Round(time.Millisecond))
	}
	return fmt.Sprintf("%d finished jobs over %s and %d running (%d with GPUs, %d multi-node), %s; %d series, %d samples written in %s; timeline job %s",
		e.Finished, FinishedSpan, len(e.Jobs), gpuJobs, multi, how,
		e.Series, e.Samples, e.SeriesTook.Round(time.Millisecond), e.TimelineJob)
}
