// Package dsbench is the datasource benchmark environment: ZincSearch and
// Prometheus started without Slurm (test/stack), seeded with 10,000
// finished and 200 running jobs on 50 nodes (job documents built with the
// internal/jobmodel types, bulk-indexed into the job index created with
// jobmodel.JobMapping) and the running jobs' series written by remote write
// as the agent writes them ({cluster, job_id, node[, gpu]}, a sample every
// 15 s over the last 40 minutes, then one every 15 s while the benchmark
// runs). It also holds what the benchmark compares the plugin with: the
// requests Grafana's stock Elasticsearch and Prometheus datasources send to
// build the same panels (stock.go), and a recorder and replayer of backend
// answers for measuring the plugin's own share without network work
// (replay.go).
//
// Nothing here runs in `make test`: pkg/plugin's BenchmarkDatasource starts it
// only with JOBSIGHT_DSBENCH=1.
package dsbench

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/store/promremote"
	"github.com/jobsight/jobsight/test/stack"
)

// EnvVar gates the benchmark: it runs only when this is "1".
const EnvVar = "JOBSIGHT_DSBENCH"

// Sizes of the seeded cluster.
const (
	Cluster      = "bench"
	FinishedJobs = 10000
	RunningJobs  = 200
	Nodes        = 50
	GPUNodes     = 20 // node000–node019: 4 GPUs each, partition gpu
	GPUsPerNode  = 4
	CoresPerNode = 64
	Index        = "jobsight-jobs"
	// SeriesHistory is how far back the running jobs' series reach.
	SeriesHistory = 40 * time.Minute
	// SampleEvery is the series' sample interval.
	SampleEvery = 15 * time.Second
	// FinishedSpan is how far back finished jobs ended (the dashboards'
	// range covers it).
	FinishedSpan = 7 * 24 * time.Hour
)

// Env is a started and seeded environment.
type Env struct {
	Stack *stack.Stack
	// Now is the seeding time: finished jobs ended before it, series reach
	// it (and later, while Feed runs).
	Now  time.Time
	Jobs []jobmodel.Job // finished first, then running
	// TimelineJob is a running multi-node GPU job ("<cluster>:<id>").
	TimelineJob string
	// Series is the number of series written for the running jobs (and
	// the partitions' cluster-state series).
	Series int
	// Samples is the number of samples written while seeding.
	Samples int
	// IndexTook and SeriesTook are the seeding phases' times.
	IndexTook, SeriesTook time.Duration

	gens   []seriesGen
	prw    *promremote.Client
	mu     sync.Mutex
	lastTS int64
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once
	cerr   error
}

// Start starts ZincSearch (or the Elasticsearch named by
// JOBSIGHT_TEST_ES_URL) and Prometheus under dir, without Slurm. The caller
// must Close the Env, also when a later step fails.
func Start(ctx context.Context, dir string) (*Env, error) {
	// The job index must answer one search of all 10,200 jobs for the
	// per-job reservation panel; ZincSearch caps a search at
	// ZINC_MAX_RESULTS (10,000 by default, like Elasticsearch's
	// index.max_result_window), which its process inherits from ours.
	if os.Getenv("ZINC_MAX_RESULTS") == "" {
		os.Setenv("ZINC_MAX_RESULTS", "20000")
	}
	st, err := stack.Up(ctx, dir, stack.Options{NoSlurm: true})
	if err != nil {
		return nil, err
	}
	return &Env{Stack: st}, nil
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

var (
	partitions = []string{"gpu", "cpu", "bigmem"}
	states     = []struct {
		state  string
		weight int
	}{{jobmodel.StateCompleted, 75}, {jobmodel.StateFailed, 10}, {jobmodel.StateCancelled, 7}, {jobmodel.StateTimeout, 5}, {jobmodel.StateOutOfMemory, 3}}
	jobNames = []string{"train", "eval", "preprocess", "md-sim", "cfd", "align", "assemble", "render", "sweep", "notebook", "infer", "bench"}
)

// nodesOf returns the node names of a partition.
func nodesOf(p string) []string {
	var lo, hi int
	switch p {
	case "gpu":
		lo, hi = 0, GPUNodes
	case "cpu":
		lo, hi = GPUNodes, 45
	default: // bigmem
		lo, hi = 45, Nodes
	}
	out := make([]string, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, nodeName(i))
	}
	return out
}

func nodeName(i int) string { return fmt.Sprintf("node%03d", i) }

// Generate builds the job documents (deterministic for a seed and now).
// Running jobs started between 35 minutes and 6 hours before now, so that
// every one has run for Hogging's 30-minute window.
func Generate(now time.Time, seed uint64) ([]jobmodel.Job, string) {
	r := rand.New(rand.NewPCG(seed, 0x6a6f6273)) // #nosec G404 -- benchmark data, reproducible from the seed on purpose
	users := make([]string, 120)
	userAccts := make([][]string, len(users))
	for i := range users {
		users[i] = fmt.Sprintf("user%03d", i)
		userAccts[i] = []string{fmt.Sprintf("proj-%02d", i%25)}
		if i%4 == 0 {
			userAccts[i] = append(userAccts[i], fmt.Sprintf("proj-%02d", (i/4+7)%25))
		}
	}
	jobs := make([]jobmodel.Job, 0, FinishedJobs+RunningJobs)
	timeline := ""
	for i := 0; i < FinishedJobs+RunningJobs; i++ {
		running := i >= FinishedJobs
		u := r.IntN(len(users))
		part := partitions[pick(r, []int{35, 55, 10})]
		j := jobmodel.Job{
			SchemaVersion: jobmodel.SchemaVersion,
			Source:        jobmodel.SourceSlurm,
			Cluster:       Cluster,
			SlurmJobID:    uint64(1_000_000 + i),
			Name:          jobNames[r.IntN(len(jobNames))] + "-" + strconv.Itoa(r.IntN(100)),
			User:          users[u],
			UID:           jobmodel.Ptr(uint32(10000 + u)), // #nosec G115 -- u indexes the 120 users
			GID:           jobmodel.Ptr(uint32(10000 + u%25)),
			Account:       userAccts[u][r.IntN(len(userAccts[u]))],
			Partition:     part,
			QOS:           "normal",
			AgentVersion:  "bench",
		}
		j.JobID = strconv.FormatUint(j.SlurmJobID, 10)
		j.DocID = jobmodel.Identity{Cluster: Cluster, JobID: j.SlurmJobID}.DocID()

		// Request.
		var nodes, cpus, gpus int64
		var memPerNode int64
		switch part {
		case "gpu":
			gpus = []int64{1, 1, 2, 4, 4, 8, 8, 16}[r.IntN(8)]
			nodes = (gpus + GPUsPerNode - 1) / GPUsPerNode
			cpus = gpus * 8
			memPerNode = min(gpus, GPUsPerNode) * 64 << 30
		case "cpu":
			cpus = []int64{1, 2, 4, 8, 16, 32, 64, 128}[r.IntN(8)]
			nodes = (cpus + CoresPerNode - 1) / CoresPerNode
			memPerNode = min(cpus, CoresPerNode) * 4 << 30
		default:
			cpus = []int64{4, 8, 16, 32}[r.IntN(4)]
			nodes = 1
			memPerNode = cpus * 24 << 30
		}
		if running && i == FinishedJobs { // the timeline job: 2 GPU nodes
			part, gpus, nodes, cpus, memPerNode = "gpu", 8, 2, 64, 256<<30
			j.Partition = part
			j.Name = "train-llm"
		}
		pool := nodesOf(part)
		first := r.IntN(len(pool))
		for n := int64(0); n < nodes; n++ {
			j.Nodes = append(j.Nodes, pool[(first+int(n))%len(pool)])
		}
		j.NodeCount = int(nodes)
		j.Requested = jobmodel.Request{
			CPUs: jobmodel.Ptr(cpus), MemoryBytes: jobmodel.Ptr(memPerNode * nodes), MemoryPerNodeBytes: jobmodel.Ptr(memPerNode),
			Nodes: jobmodel.Ptr(nodes), Tasks: jobmodel.Ptr(nodes),
			TRES: fmt.Sprintf("cpu=%d,mem=%dG,node=%d", cpus, memPerNode*nodes>>30, nodes),
		}
		if gpus > 0 {
			j.Requested.GPUs = jobmodel.Ptr(gpus)
			j.Requested.Gres = []string{fmt.Sprintf("gpu:%d", min(gpus, GPUsPerNode))}
			j.Requested.TRES += fmt.Sprintf(",gres/gpu=%d", gpus)
		}
		limit := []int64{3600, 4 * 3600, 12 * 3600, 24 * 3600, 48 * 3600}[r.IntN(5)]
		j.TimeLimitSeconds = jobmodel.Ptr(limit)

		// Times.
		var start, end time.Time
		if running {
			start = now.Add(-35*time.Minute - time.Duration(r.Int64N(int64(325*time.Minute))))
			if i == FinishedJobs {
				start = now.Add(-50 * time.Minute)
			}
			j.State = jobmodel.StateRunning
		} else {
			end = now.Add(-time.Duration(r.Int64N(int64(FinishedSpan - 12*time.Hour))))
			elapsed := time.Duration(float64(limit) * (0.02 + 0.98*r.Float64()*r.Float64()) * float64(time.Second))
			j.State = states[pick(r, []int{75, 10, 7, 5, 3})].state
			if j.State == jobmodel.StateTimeout {
				elapsed = time.Duration(limit) * time.Second
			}
			start = end.Add(-elapsed.Truncate(time.Second))
			j.ElapsedSeconds = jobmodel.Ptr(elapsed.Truncate(time.Second).Seconds())
			j.EndTime = jobmodel.At(end)
			j.Final = true
			switch j.State {
			case jobmodel.StateFailed:
				j.ExitCode = jobmodel.Ptr(1)
				j.Reason = "NonZeroExitCode"
			case jobmodel.StateOutOfMemory:
				j.ExitCode = jobmodel.Ptr(0)
				j.Reason = "OutOfMemory"
			default:
				j.ExitCode = jobmodel.Ptr(0)
			}
		}
		j.SubmitTime = jobmodel.At(start.Add(-time.Duration(r.Int64N(int64(2 * time.Hour)))))
		j.StartTime = jobmodel.At(start)
		j.Sampling = jobmodel.Sampling{IntervalSeconds: 5, First: jobmodel.At(start)}
		if running {
			j.UpdatedAt = jobmodel.At(start)
			j.Sampling.Count = 0
		} else {
			j.UpdatedAt = jobmodel.At(end)
			j.Sampling.Count = int64(end.Sub(start) / (5 * time.Second))
			j.Sampling.Last = jobmodel.At(end)
			fillUsage(r, &j, cpus, gpus, memPerNode, end.Sub(start))
		}
		if running && i == FinishedJobs {
			timeline = j.DocID
		}
		jobs = append(jobs, j)
	}
	return jobs, timeline
}

func pick(r *rand.Rand, weights []int) int {
	t := 0
	for _, w := range weights {
		t += w
	}
	x := r.IntN(t)
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}

// fillUsage writes a finished job's usage summaries and analysis.
func fillUsage(r *rand.Rand, j *jobmodel.Job, cpus, gpus, memPerNode int64, el time.Duration) {
	sec := el.Seconds()
	cpuEff := math.Min(1, 0.05+0.95*math.Pow(r.Float64(), 0.7))
	if r.IntN(10) == 0 {
		cpuEff = 0.01 + 0.05*r.Float64()
	}
	coreS := cpuEff * float64(cpus) * sec
	j.CPU = &jobmodel.CPUUsage{
		CoreSeconds: jobmodel.Ptr(coreS), AvgCores: jobmodel.Ptr(coreS / math.Max(sec, 1)),
		P95Cores: jobmodel.Ptr(math.Min(float64(cpus), 1.2*cpuEff*float64(cpus))), PeakCores: jobmodel.Ptr(math.Min(float64(cpus), 1.5*cpuEff*float64(cpus))),
		ActiveSeconds: jobmodel.Ptr(sec * 0.9), Efficiency: jobmodel.Ptr(cpuEff),
	}
	memTotal := memPerNode * int64(j.NodeCount)
	memFrac := 0.05 + 0.9*r.Float64()
	if j.State == jobmodel.StateOutOfMemory {
		memFrac = 1
	}
	peak := int64(float64(memTotal) * memFrac)
	j.Memory = &jobmodel.MemoryUsage{
		AvgBytes: jobmodel.Ptr(peak * 7 / 10), P95Bytes: jobmodel.Ptr(peak * 9 / 10), PeakBytes: jobmodel.Ptr(peak),
		RSSAvgBytes: jobmodel.Ptr(peak * 6 / 10), RSSPeakBytes: jobmodel.Ptr(peak * 8 / 10), LimitBytes: jobmodel.Ptr(memTotal),
		MaxNodePeakBytes: jobmodel.Ptr(peak / int64(j.NodeCount)), Efficiency: jobmodel.Ptr(0.8 * memFrac),
		PeakFromLimit: j.State == jobmodel.StateOutOfMemory,
	}
	j.IO = &jobmodel.IOUsage{ReadBytes: jobmodel.Ptr(r.Int64N(1 << 36)), WrittenBytes: jobmodel.Ptr(r.Int64N(1 << 34))}
	j.Processes = &jobmodel.CountUsage{Avg: jobmodel.Ptr(float64(cpus) * 0.8), Peak: jobmodel.Ptr(cpus + 2)}
	j.Threads = &jobmodel.CountUsage{Avg: jobmodel.Ptr(float64(cpus) * 2), Peak: jobmodel.Ptr(cpus * 3)}

	kind := jobmodel.KindCPU
	score := cpuEff
	var gpuUtil float64
	fig := jobmodel.AnalysisFigures{
		CPUEfficiency: jobmodel.Ptr(cpuEff), MemoryEfficiency: jobmodel.Ptr(0.8 * memFrac), MemoryBasis: "per_node",
		WalltimeEfficiency: jobmodel.Ptr(sec / float64(*j.TimeLimitSeconds)),
		CoreHours:          jobmodel.Ptr(float64(cpus) * sec / 3600), CoreHoursWasted: jobmodel.Ptr((1 - cpuEff) * float64(cpus) * sec / 3600),
	}
	if gpus > 0 {
		kind = jobmodel.KindGPU
		gpuUtil = math.Pow(r.Float64(), 0.6)
		if r.IntN(8) == 0 {
			gpuUtil = 0.01 * r.Float64()
		}
		score = gpuUtil
		eff := int64(math.Round(gpuUtil * float64(gpus)))
		gs := float64(gpus) * sec
		j.GPU = &jobmodel.GPUUsage{
			Count: gpus, Held: jobmodel.Ptr(gpus), Source: jobmodel.GPUSourceNVML, Attribution: "slurm",
			UtilizationAvg: jobmodel.Ptr(gpuUtil), EffectiveGPUs: jobmodel.Ptr(eff), EffectiveRatio: jobmodel.Ptr(float64(eff) / float64(gpus)),
			HeldIdle: jobmodel.Ptr(int64(0)), GPUSeconds: jobmodel.Ptr(gs), ActiveSeconds: jobmodel.Ptr(gs * gpuUtil),
			MemoryPeakBytes: jobmodel.Ptr(int64(80<<30) * int64(10+r.IntN(90)) / 100), EnergyJoules: jobmodel.Ptr(gs * (80 + 300*gpuUtil)),
		}
		for g := int64(0); g < gpus; g++ {
			u := math.Max(0, math.Min(1, gpuUtil+0.1*(r.Float64()-0.5)))
			j.GPUs = append(j.GPUs, jobmodel.GPUDevice{
				Node: j.Nodes[g/GPUsPerNode], Index: g % GPUsPerNode, UUID: fmt.Sprintf("GPU-%08x-%04d", j.SlurmJobID, g),
				Model: "NVIDIA A100-SXM4-80GB", Vendor: "nvidia", Held: true,
				UtilizationAvg: jobmodel.Ptr(u), UtilizationP95: jobmodel.Ptr(math.Min(1, u*1.2)), UtilizationPeak: jobmodel.Ptr(math.Min(1, u*1.5)),
				ActiveSeconds: jobmodel.Ptr(sec * u), IdleSeconds: jobmodel.Ptr(sec * (1 - u)),
				MemoryAvgBytes: jobmodel.Ptr(int64(40 << 30)), MemoryPeakBytes: jobmodel.Ptr(int64(60 << 30)), MemoryTotalBytes: jobmodel.Ptr(int64(80 << 30)),
				PowerAvgWatts: jobmodel.Ptr(80 + 300*u), EnergyJoules: jobmodel.Ptr(sec * (80 + 300*u)),
			})
		}
		fig.GPUUtilization, fig.GPUs, fig.EffectiveGPUs = jobmodel.Ptr(gpuUtil), jobmodel.Ptr(gpus), jobmodel.Ptr(eff)
		fig.EffectiveGPURatio = jobmodel.Ptr(float64(eff) / float64(gpus))
		fig.GPUHours = jobmodel.Ptr(gs / 3600)
		fig.GPUHoursWasted = jobmodel.Ptr((1 - gpuUtil) * gs / 3600)
	}
	class := jobmodel.ClassEfficient
	switch {
	case sec < 300:
		class = jobmodel.ClassShort
	case score < 0.1:
		class = jobmodel.ClassWasted
	case score < 0.4:
		class = jobmodel.ClassInefficient
	case score < 0.7:
		class = jobmodel.ClassAcceptable
	}
	a := &jobmodel.Analysis{Version: 1, AnalyzedAt: j.EndTime, Kind: kind, Class: class, Score: jobmodel.Ptr(score), Figures: fig}
	if kind == jobmodel.KindGPU {
		a.Vendor = "nvidia"
	}
	if class == jobmodel.ClassWasted || class == jobmodel.ClassInefficient {
		a.Causes = []jobmodel.Cause{{ID: "over_scaled", Title: "The job asked for more than it used", Confidence: 0.8,
			Evidence: fmt.Sprintf("score %.2f", score), Lesson: "Ask for fewer resources; see the report for the right size."}}
		if gpus > 1 {
			rec := max(1, int64(math.Ceil(gpuUtil*float64(gpus))))
			a.Recommendation.GPUs = jobmodel.Ptr(rec)
			a.Recommendation.Changes = []jobmodel.SbatchChange{{Option: "--gpus", From: strconv.FormatInt(gpus, 10), To: strconv.FormatInt(rec, 10), Reason: "GPUs idle"}}
			a.Savings.GPUHours = jobmodel.Ptr(float64(gpus-rec) * sec / 3600)
		}
	}
	j.Analysis = a
}

// Seed generates the jobs, indexes them and writes the running jobs'
// series, then waits until the index answers all of them.
func (e *Env) Seed(ctx context.Context) error {
	e.Now = time.Now().Truncate(time.Second)
	e.Jobs, e.TimelineJob = Generate(e.Now, 42)
	t0 := time.Now()
	if err := e.index(ctx); err != nil {
		return err
	}
	e.IndexTook = time.Since(t0)
	// The series reach the time they are written (indexing takes a
	// while), so that rate()[2m] at the first query has samples.
	t0 = time.Now()
	err := e.writeSeries(ctx, t0.Truncate(time.Second))
	e.SeriesTook = time.Since(t0)
	return err
}

func (e *Env) index(ctx context.Context) error {
	es := e.Stack.Elasticsearch
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{es.URL}, Username: es.User, Password: es.Password, Timeout: 2 * time.Minute, CACertFile: es.CACertFile})
	if err != nil {
		return err
	}
	if _, err := c.Info(ctx); err != nil {
		return err
	}
	if err := c.EnsureIndex(ctx, Index, jobmodel.JobMapping()); err != nil {
		return fmt.Errorf("creating the job index: %w", err)
	}
	const batch = 1000
	for i := 0; i < len(e.Jobs); i += batch {
		docs := make([]store.Doc, 0, batch)
		for _, j := range e.Jobs[i:min(i+batch, len(e.Jobs))] {
			body, err := json.Marshal(j)
			if err != nil {
				return err
			}
			docs = append(docs, store.Doc{Kind: store.KindJobDoc, Index: Index, ID: j.DocID, Body: body})
		}
		fails, err := c.Bulk(ctx, docs)
		if err != nil {
			return fmt.Errorf("bulk indexing: %w", err)
		}
		if len(fails) > 0 {
			return fmt.Errorf("bulk indexing: %d documents refused, first: %v", len(fails), fails[0].Err)
		}
	}
	// ZincSearch makes writes searchable after about a second: wait until
	// every job is found.
	want := len(e.Jobs)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		raw, err := c.Search(ctx, Index, []byte(`{"size":0,"track_total_hits":true,"query":{"match_all":{}}}`))
		if err == nil {
			var ans struct {
				Hits struct {
					Total struct {
						Value int `json:"value"`
					} `json:"total"`
				} `json:"hits"`
			}
			if json.Unmarshal(raw, &ans) == nil && ans.Hits.Total.Value >= want {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the job index does not answer all %d jobs after 3 minutes (last error %v)", want, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// seriesGen is one series: its name, labels and value as a function of
// time (counters grow from the job's start).
type seriesGen struct {
	name   string
	labels []promremote.Label
	value  func(t time.Time) float64
}

func noise(key string, t int64) float64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	var b [8]byte
	for i := range b {
		b[i] = byte(t >> (8 * i)) // #nosec G115 -- keeps the low 8 bits on purpose: t's bytes, for hashing
	}
	h.Write(b[:])
	return float64(h.Sum64()%1000)/1000 - 0.5 // -0.5 … 0.5
}

// gens builds the series of the running jobs and of the partitions.
func (e *Env) buildGens() {
	r := rand.New(rand.NewPCG(7, 7)) // #nosec G404 -- benchmark series, reproducible on purpose
	var gens []seriesGen
	for ji := range e.Jobs {
		j := &e.Jobs[ji]
		if j.Final {
			continue
		}
		start := j.StartTime.Time
		cpus := *j.Requested.CPUs
		perNodeCPUs := float64(cpus) / float64(j.NodeCount)
		idle := r.IntN(7) == 0
		eff := 0.3 + 0.7*r.Float64()
		gpuUtil := 0.2 + 0.8*r.Float64()
		if idle {
			eff, gpuUtil = 0.002, 0
		}
		memLimit := float64(*j.Requested.MemoryPerNodeBytes)
		memFrac := 0.1 + 0.7*r.Float64()
		if idle {
			memFrac = 0.01
		}
		for _, node := range j.Nodes {
			lab := func(extra ...promremote.Label) []promremote.Label {
				ls := []promremote.Label{{Name: "cluster", Value: j.Cluster}, {Name: "job_id", Value: j.JobID}, {Name: "node", Value: node}}
				if run := jobmodel.RunOf(j.SubmitTime); run != "" {
					ls = append(ls, promremote.Label{Name: jobmodel.RunLabel, Value: run})
				}
				return append(ls, extra...)
			}
			key := j.JobID + node
			cores := eff * perNodeCPUs
			gens = append(gens,
				seriesGen{"jobsight_job_cpu_usage_seconds_total", lab(), func(t time.Time) float64 {
					// ±2.5 s of jitter on a 15 s step: still monotonic.
					return cores * (t.Sub(start).Seconds() + 5*noise(key, t.Unix()))
				}},
				seriesGen{"jobsight_job_memory_used_bytes", lab(), func(t time.Time) float64 {
					return math.Round(memLimit * memFrac * (1 + 0.1*noise(key+"m", t.Unix())))
				}},
				seriesGen{"jobsight_job_memory_rss_bytes", lab(), func(t time.Time) float64 {
					return math.Round(memLimit * memFrac * 0.8 * (1 + 0.1*noise(key+"r", t.Unix())))
				}},
				seriesGen{"jobsight_job_memory_limit_bytes", lab(), func(time.Time) float64 { return memLimit }},
				seriesGen{"jobsight_job_allocated_cpus", lab(), func(time.Time) float64 { return perNodeCPUs }},
				seriesGen{"jobsight_job_processes", lab(), func(time.Time) float64 { return math.Ceil(perNodeCPUs/2) + 1 }},
				seriesGen{"jobsight_job_threads", lab(), func(time.Time) float64 { return perNodeCPUs*2 + 3 }},
				seriesGen{"jobsight_job_io_read_bytes_total", lab(), func(t time.Time) float64 {
					return math.Round(2e6 * eff * t.Sub(start).Seconds())
				}},
				seriesGen{"jobsight_job_io_written_bytes_total", lab(), func(t time.Time) float64 {
					return math.Round(5e5 * eff * t.Sub(start).Seconds())
				}},
			)
			if j.Requested.GPUs == nil {
				continue
			}
			ng := min(*j.Requested.GPUs, GPUsPerNode)
			for g := int64(0); g < ng; g++ {
				gl := lab(promremote.Label{Name: "gpu", Value: strconv.FormatInt(g, 10)})
				gk := key + "g" + strconv.FormatInt(g, 10)
				u := gpuUtil
				if !idle && g == ng-1 && r.IntN(4) == 0 {
					u = 0 // one held GPU never used
				}
				gens = append(gens,
					seriesGen{"jobsight_job_gpu_utilization_ratio", gl, func(t time.Time) float64 {
						if u == 0 {
							return 0
						}
						return math.Max(0, math.Min(1, u+0.2*noise(gk, t.Unix())))
					}},
					seriesGen{"jobsight_job_gpu_memory_used_bytes", gl, func(t time.Time) float64 { return math.Round(80e9 * (0.05 + 0.8*u)) }},
					seriesGen{"jobsight_job_gpu_memory_total_bytes", gl, func(time.Time) float64 { return 80e9 }},
					seriesGen{"jobsight_job_gpu_energy_joules_total", gl, func(t time.Time) float64 {
						return 1e9 + (60+300*u)*t.Sub(start).Seconds()
					}},
					seriesGen{"jobsight_job_gpu_processes", gl, func(time.Time) float64 {
						if u == 0 {
							return 0
						}
						return 1
					}},
				)
			}
		}
	}
	// The cluster-state collector's partition series (contention).
	alloc := map[string][2]float64{}
	for ji := range e.Jobs {
		j := &e.Jobs[ji]
		if j.Final {
			continue
		}
		a := alloc[j.Partition]
		a[0] += float64(*j.Requested.CPUs)
		if j.Requested.GPUs != nil {
			a[1] += float64(*j.Requested.GPUs)
		}
		alloc[j.Partition] = a
	}
	for _, p := range partitions {
		n := float64(len(nodesOf(p)))
		totalC, totalG := n*CoresPerNode, 0.0
		if p == "gpu" {
			totalG = n * GPUsPerNode
		}
		a := alloc[p]
		aC, aG := math.Min(a[0], totalC), math.Min(a[1], totalG)
		pl := func(extra ...promremote.Label) []promremote.Label {
			return append([]promremote.Label{{Name: "cluster", Value: Cluster}, {Name: "partition", Value: p}}, extra...)
		}
		st := func(s string) promremote.Label { return promremote.Label{Name: "state", Value: s} }
		konst := func(v float64) func(time.Time) float64 { return func(time.Time) float64 { return v } }
		pendC, pendG := 0.0, 0.0
		if p == "gpu" {
			pendC, pendG = 256, 24
		}
		gens = append(gens,
			seriesGen{"jobsight_partition_cpus", pl(st("total")), konst(totalC)},
			seriesGen{"jobsight_partition_cpus", pl(st("allocated")), konst(aC)},
			seriesGen{"jobsight_partition_cpus", pl(st("idle")), konst(totalC - aC)},
			seriesGen{"jobsight_partition_cpus", pl(st("unavailable")), konst(0)},
			seriesGen{"jobsight_partition_gpus", pl(st("total")), konst(totalG)},
			seriesGen{"jobsight_partition_gpus", pl(st("allocated")), konst(aG)},
			seriesGen{"jobsight_partition_gpus", pl(st("idle")), konst(totalG - aG)},
			seriesGen{"jobsight_partition_gpus", pl(st("unavailable")), konst(0)},
			seriesGen{"jobsight_partition_pending_cpus", pl(), konst(pendC)},
			seriesGen{"jobsight_partition_pending_gpus", pl(), konst(pendG)},
		)
	}
	e.gens = gens
	e.Series = len(gens)
}

// writeSeries writes every series' history (in order, each series whole in
// one request), then Feed keeps them current.
func (e *Env) writeSeries(ctx context.Context, until time.Time) error {
	c, err := promremote.New(promremote.Config{URL: e.Stack.Prometheus.URL + "/api/v1/write", Timeout: 2 * time.Minute})
	if err != nil {
		return err
	}
	e.prw = c
	e.buildGens()
	first := until.Add(-SeriesHistory)
	const perBatch = 500
	for i := 0; i < len(e.gens); i += perBatch {
		var batch []promremote.Series
		for _, g := range e.gens[i:min(i+perBatch, len(e.gens))] {
			s := promremote.Series{Name: g.name, Labels: g.labels}
			for t := first; !t.After(until); t = t.Add(SampleEvery) {
				s.Samples = append(s.Samples, promremote.Sample{TimestampMs: t.UnixMilli(), Value: g.value(t)})
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
		batch = append(batch, promremote.Series{Name: g.name, Labels: g.labels,
			Samples: []promremote.Sample{{TimestampMs: ts, Value: g.value(now)}}})
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
		if j.Requested.GPUs != nil {
			gpuJobs++
		}
		if j.NodeCount > 1 {
			multi++
		}
	}
	return fmt.Sprintf("%d jobs (%d finished, %d running; %d with GPUs, %d multi-node) on %d nodes, indexed in %s; %d series, %d samples written in %s; timeline job %s",
		len(e.Jobs), FinishedJobs, RunningJobs, gpuJobs, multi, Nodes, e.IndexTook.Round(time.Millisecond),
		e.Series, e.Samples, e.SeriesTook.Round(time.Millisecond), e.TimelineJob)
}
