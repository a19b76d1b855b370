package demo

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/store/promremote"
)

// Defaults of the demo history (`jobsight-stack up --history`).
const (
	DefaultPerDay  = 200
	DefaultRunning = 24
	// MaxHistoryJobs bounds the demo history: its jobs are held in memory
	// while their series are written, and ZincSearch indexes some 50–150
	// of them a second.
	MaxHistoryJobs = 50_000
	// DemoSeed is the demo's generator seed.
	DemoSeed = 1
)

// DemoClusters are the demo history's clusters: made-up names that no
// Slurm cluster of the stack has.
var DemoClusters = []string{"demo-hpc", "demo-ai"}

// HistoryOptions says where and what SeedHistory seeds.
type HistoryOptions struct {
	// ES is the Elasticsearch-API server, Index its job index (default
	// jobmodel.DefaultJobIndex).
	ES    *elasticsearch.Client
	Index string
	// PromWrite is Prometheus' remote-write endpoint.
	PromWrite *promremote.Client
	// Span is the history's length; PerDay the finished jobs a day
	// (default DefaultPerDay); Running the running jobs (default
	// DefaultRunning; -1 for none).
	Span    time.Duration
	PerDay  float64
	Running int
	// End is the history's end (default now).
	End time.Time
	Log *slog.Logger
}

// Seeded is a seeded history.
type Seeded struct {
	Gen *Generator
	// Jobs are every job seeded: the finished ones in submission order,
	// then the running ones.
	Jobs    []jobmodel.Job
	Running []jobmodel.Job
	Indexed IndexStats
	History HistoryStats

	opts HistoryOptions
	gens []Gen
}

// HistoryJobs checks a demo history's size: the number of finished jobs
// of perDay over span, at most MaxHistoryJobs.
func HistoryJobs(span time.Duration, perDay float64) (int, error) {
	if !(perDay > 0) || perDay > 20000 {
		return 0, fmt.Errorf("jobs per day %v: want more than 0 and at most 20,000", perDay)
	}
	n := PerDay(perDay, span)
	if n > MaxHistoryJobs {
		return 0, fmt.Errorf("%.0f jobs a day over %.0f days are %d jobs; the demo history holds at most %d: ask for fewer jobs a day or a shorter history",
			perDay, span.Hours()/24, n, MaxHistoryJobs)
	}
	return max(n, 1), nil
}

// SeedHistory generates a history of finished jobs over Span ending at
// End and the running jobs at End, indexes their documents and writes
// their series (WriteHistory: a Prometheus that holds no newer samples).
// The documents become searchable as the server indexes them (ZincSearch:
// in the background, minutes for some thousands); WaitCount waits.
func SeedHistory(ctx context.Context, o HistoryOptions) (*Seeded, error) {
	if o.Index == "" {
		o.Index = jobmodel.DefaultJobIndex
	}
	if o.PerDay == 0 {
		o.PerDay = DefaultPerDay
	}
	switch {
	case o.Running == 0:
		o.Running = DefaultRunning
	case o.Running < 0:
		o.Running = 0
	}
	if o.End.IsZero() {
		o.End = time.Now()
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	n, err := HistoryJobs(o.Span, o.PerDay)
	if err != nil {
		return nil, err
	}
	g, err := New(Config{Seed: DemoSeed, End: o.End, Span: o.Span, Jobs: n, Running: o.Running, Clusters: DemoClusters})
	if err != nil {
		return nil, err
	}
	s := &Seeded{Gen: g, opts: o}
	s.Running = g.Running()
	s.Jobs = make([]jobmodel.Job, 0, n+len(s.Running))
	o.Log.Info("seeding the generated history", "finished_jobs", n, "running_jobs", len(s.Running), "span", o.Span, "clusters", DemoClusters)
	if s.Indexed, err = IndexJobs(ctx, o.ES, o.Index, g, s.Running, IndexOptions{Keep: func(j *jobmodel.Job) { s.Jobs = append(s.Jobs, *j) }}); err != nil {
		return nil, err
	}
	o.Log.Info("generated job documents sent", "stats", s.Indexed.String())
	if s.History, err = WriteHistory(ctx, o.PromWrite, g.Site(), s.Jobs, g.Config().End); err != nil {
		return nil, err
	}
	o.Log.Info("generated series written", "stats", s.History.String())
	return s, nil
}

// Feed keeps the running jobs alive until ctx ends, as their agents
// would: a sample of each of their series (and of the partitions') every
// RunningStep, and their documents' updated_at renewed every five
// minutes, so that the datasource never takes them for silent.
func (s *Seeded) Feed(ctx context.Context) {
	if len(s.Running) == 0 {
		return
	}
	alloc := map[string][2]float64{}
	var gens []Gen
	for i := range s.Running {
		j := &s.Running[i]
		gens = append(gens, SeriesOf(j, s.opts.End)...)
		k := j.Cluster + "/" + j.Partition
		a := alloc[k]
		a[0] += float64(*j.Requested.CPUs)
		a[1] += float64(*j.Requested.GPUs)
		alloc[k] = a
	}
	gens = append(gens, PartitionSeries(s.Gen.Site(), func(time.Time) map[string][2]float64 { return alloc })...)
	tick := time.NewTicker(RunningStep)
	defer tick.Stop()
	lastDocs := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			batch := make([]promremote.Series, 0, len(gens))
			for _, g := range gens {
				batch = append(batch, promremote.Series{Name: g.Name, Labels: g.Labels,
					Samples: []promremote.Sample{{TimestampMs: now.UnixMilli(), Value: g.Value(now)}}})
			}
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := s.opts.PromWrite.Write(wctx, batch); err != nil && ctx.Err() == nil {
				s.opts.Log.Warn("writing the generated running jobs' samples", "err", err)
			}
			cancel()
			if now.Sub(lastDocs) >= 5*time.Minute {
				lastDocs = now
				docs := make([]store.Doc, 0, len(s.Running))
				for i := range s.Running {
					j := s.Running[i]
					j.UpdatedAt = jobmodel.At(now)
					if body, err := jsonMarshal(&j); err == nil {
						docs = append(docs, store.Doc{Kind: store.KindJobDoc, Index: s.opts.Index, ID: j.DocID, Body: body})
					}
				}
				wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				if _, err := s.opts.ES.Bulk(wctx, docs); err != nil && ctx.Err() == nil {
					s.opts.Log.Warn("renewing the generated running jobs' documents", "err", err)
				}
				cancel()
			}
		}
	}
}
