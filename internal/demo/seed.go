package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/store/promremote"
)

// IndexOptions tunes IndexJobs.
type IndexOptions struct {
	// Batch is the documents per bulk request (default 2,000); Workers
	// the requests in flight at once (default 3).
	Batch, Workers int
	// Keep, when set, is called with every document indexed (in
	// submission order per batch), e.g. to remember a few.
	Keep func(j *jobmodel.Job)
	// Progress, when set, is called after each batch with the documents
	// indexed so far.
	Progress func(done int)
}

// IndexStats says what IndexJobs did.
type IndexStats struct {
	Docs  int
	Bytes int64
	Took  time.Duration
}

// Rate is documents per second.
func (s IndexStats) Rate() float64 {
	if s.Took <= 0 {
		return 0
	}
	return float64(s.Docs) / s.Took.Seconds()
}

func (s IndexStats) String() string {
	return fmt.Sprintf("%d documents (%.1f MB of JSON, %d bytes each on average) in %s: %.0f documents/s",
		s.Docs, float64(s.Bytes)/1e6, s.Bytes/int64(max(s.Docs, 1)), s.Took.Round(time.Millisecond), s.Rate())
}

// IndexJobs creates the job index (its mapping, jobmodel.JobMapping) and
// bulk-indexes every finished job of g and then extra (running jobs), a
// batch at a time: memory stays at a few batches whatever the number of
// jobs. It does not wait for the documents to be searchable (WaitCount).
func IndexJobs(ctx context.Context, c *elasticsearch.Client, index string, g *Generator, extra []jobmodel.Job, opt IndexOptions) (IndexStats, error) {
	if opt.Batch <= 0 {
		opt.Batch = 2000
	}
	if opt.Workers <= 0 {
		opt.Workers = 3
	}
	if err := c.EnsureIndex(ctx, index, jobmodel.JobMapping()); err != nil {
		return IndexStats{}, fmt.Errorf("creating the job index %s: %w", index, err)
	}
	t0 := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan []store.Doc, opt.Workers)
	var (
		mu       sync.Mutex
		stats    IndexStats
		firstErr error
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
		mu.Unlock()
	}
	for range opt.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for docs := range batches {
				fails, err := c.Bulk(ctx, docs)
				if err != nil {
					fail(fmt.Errorf("bulk indexing: %w", err))
					continue
				}
				if len(fails) > 0 {
					fail(fmt.Errorf("bulk indexing: %d of %d documents refused, first %s: %v", len(fails), len(docs), fails[0].Doc.ID, fails[0].Err))
					continue
				}
				mu.Lock()
				stats.Docs += len(docs)
				for _, d := range docs {
					stats.Bytes += int64(len(d.Body))
				}
				done := stats.Docs
				mu.Unlock()
				if opt.Progress != nil {
					opt.Progress(done)
				}
			}
		}()
	}
	encode := func(jobs []jobmodel.Job) error {
		docs := make([]store.Doc, 0, len(jobs))
		for i := range jobs {
			if opt.Keep != nil {
				opt.Keep(&jobs[i])
			}
			body, err := json.Marshal(&jobs[i])
			if err != nil {
				return err
			}
			docs = append(docs, store.Doc{Kind: store.KindJobDoc, Index: index, ID: jobs[i].DocID, Body: body})
		}
		select {
		case batches <- docs:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var err error
	for !g.Done() && err == nil {
		err = encode(g.Next(opt.Batch))
	}
	for i := 0; i < len(extra) && err == nil; i += opt.Batch {
		err = encode(extra[i:min(i+opt.Batch, len(extra))])
	}
	close(batches)
	wg.Wait()
	stats.Took = time.Since(t0)
	if firstErr != nil {
		return stats, firstErr
	}
	return stats, err
}

// CountDocs returns how many documents the index answers for query (a JSON
// query object; "" for all), or -1 when the index does not exist.
func CountDocs(ctx context.Context, c *elasticsearch.Client, index, query string) (int, error) {
	if query == "" {
		query = `{"match_all":{}}`
	}
	raw, err := c.Search(ctx, index, []byte(`{"size":0,"track_total_hits":true,"query":`+query+`}`))
	if err != nil {
		if errors.Is(err, elasticsearch.ErrNotFound) {
			return -1, nil
		}
		return 0, err
	}
	var ans store.SearchAnswer[json.RawMessage]
	if err := json.Unmarshal(raw, &ans); err != nil {
		return 0, fmt.Errorf("counting %s: %w", index, err)
	}
	return int(ans.Hits.Total.Value), nil
}

// WaitCount waits until the index answers at least want documents (an
// Elasticsearch-API server makes writes searchable after a refresh:
// ZincSearch after about a second), for at most timeout.
func WaitCount(ctx context.Context, c *elasticsearch.Client, index string, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n, err := CountDocs(ctx, c, index, "")
		if err == nil && n >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the index %s answers %d of %d documents after %s (last error: %v)", index, n, want, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// HistoryStats says what WriteHistory wrote.
type HistoryStats struct {
	Series, Samples, Requests int
	Took                      time.Duration
}

func (s HistoryStats) String() string {
	return fmt.Sprintf("%d series, %d samples in %d requests, %s", s.Series, s.Samples, s.Requests, s.Took.Round(time.Millisecond))
}

// historySlice is how much time one pass of WriteHistory writes. Prometheus
// without an out-of-order window takes a sample only when it is at most an
// hour older than the newest it holds; written a slice at a time, oldest
// first, every sample is.
const historySlice = 30 * time.Minute

// maxSamplesPerRequest bounds a remote-write request.
const maxSamplesPerRequest = 60_000

// partitionStep is the cluster-state series' sample interval in the
// history (the collector polls every 15 s; a month at that step is more
// than the charts need).
const partitionStep = 5 * time.Minute

// WriteHistory writes the series of jobs (SeriesOf; each job at its
// sampling interval, running jobs up to until) and the site's partition
// series from the earliest start to until, by remote write, oldest first
// in 30-minute slices: a Prometheus that holds nothing newer than the
// first sample takes them all without an out-of-order window. It returns
// an error naming the way out when Prometheus refuses old samples (it
// already holds newer ones).
func WriteHistory(ctx context.Context, c *promremote.Client, site *Site, jobs []jobmodel.Job, until time.Time) (HistoryStats, error) {
	t0 := time.Now()
	var st HistoryStats
	order := make([]int, 0, len(jobs))
	for i := range jobs {
		if jobs[i].StartTime != nil {
			order = append(order, i)
		}
	}
	sort.Slice(order, func(a, b int) bool { return jobs[order[a]].StartTime.Before(jobs[order[b]].StartTime.Time) })
	if len(order) == 0 {
		return st, nil
	}
	endOf := func(j *jobmodel.Job) time.Time {
		if j.Final && j.EndTime != nil {
			return j.EndTime.Time
		}
		return until
	}
	stepOf := func(j *jobmodel.Job) time.Duration {
		if iv := time.Duration(j.Sampling.IntervalSeconds * float64(time.Second)); iv >= time.Second {
			return iv
		}
		return RunningStep
	}
	// Allocated CPUs and GPUs per partition at a time, from the jobs
	// active then (recomputed once per slice: the series step is coarser).
	type active struct {
		j    *jobmodel.Job
		gens []Gen
	}
	var act []active
	alloc := map[string][2]float64{}
	partGens := PartitionSeries(site, func(time.Time) map[string][2]float64 { return alloc })
	st.Series += len(partGens)
	first := jobs[order[0]].StartTime.Time.Truncate(historySlice)
	next := 0
	var batch []promremote.Series
	var inBatch int
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := c.Write(ctx, batch); err != nil {
			var we *promremote.WriteError
			if errors.As(err, &we) && we.Status == 400 {
				return fmt.Errorf("Prometheus refused the history's samples (%w): it holds newer samples than the history's oldest; seed into a fresh Prometheus (a new --dir)", err)
			}
			return fmt.Errorf("remote write: %w", err)
		}
		st.Requests++
		batch, inBatch = batch[:0], 0
		return nil
	}
	add := func(s promremote.Series) error {
		if len(s.Samples) == 0 {
			return nil
		}
		batch = append(batch, s)
		inBatch += len(s.Samples)
		st.Samples += len(s.Samples)
		if inBatch >= maxSamplesPerRequest {
			return flush()
		}
		return nil
	}
	for from := first; !from.After(until); from = from.Add(historySlice) {
		to := from.Add(historySlice) // samples in [from, to), and until itself in the last slice
		for next < len(order) && jobs[order[next]].StartTime.Before(to) {
			j := &jobs[order[next]]
			gens := SeriesOf(j, until)
			st.Series += len(gens)
			act = append(act, active{j: j, gens: gens})
			next++
		}
		clear(alloc)
		keep := act[:0]
		for _, a := range act {
			j := a.j
			start, end, step := j.StartTime.Time, endOf(j), stepOf(j)
			if start.Before(to) && !end.Before(from) {
				k := j.Partition
				for _, p := range site.Partitions {
					if p.Name == j.Partition {
						k = p.Cluster + "/" + p.Name
					}
				}
				v := alloc[k]
				v[0] += float64(*j.Requested.CPUs)
				if j.Requested.GPUs != nil {
					v[1] += float64(*j.Requested.GPUs)
				}
				alloc[k] = v
			}
			// The job's grid: start, start+step, ... up to its end.
			t := start
			if t.Before(from) {
				t = start.Add((from.Sub(start) + step - 1) / step * step)
			}
			var stamps []time.Time
			for ; t.Before(to) && !t.After(end); t = t.Add(step) {
				stamps = append(stamps, t)
			}
			for _, g := range a.gens {
				s := promremote.Series{Name: g.Name, Labels: g.Labels, Samples: make([]promremote.Sample, 0, len(stamps))}
				for _, t := range stamps {
					s.Samples = append(s.Samples, promremote.Sample{TimestampMs: t.UnixMilli(), Value: g.Value(t)})
				}
				if err := add(s); err != nil {
					return st, err
				}
			}
			if !end.Before(to) {
				keep = append(keep, a)
			}
		}
		act = keep
		for _, g := range partGens {
			s := promremote.Series{Name: g.Name, Labels: g.Labels}
			for t := from; t.Before(to) && !t.After(until); t = t.Add(partitionStep) {
				s.Samples = append(s.Samples, promremote.Sample{TimestampMs: t.UnixMilli(), Value: g.Value(t)})
			}
			if err := add(s); err != nil {
				return st, err
			}
		}
		// Every slice goes out before the next begins: Prometheus then
		// never sees a sample more than a slice older than its newest.
		if err := flush(); err != nil {
			return st, err
		}
	}
	st.Took = time.Since(t0)
	return st, nil
}

func jsonMarshal(j *jobmodel.Job) ([]byte, error) { return json.Marshal(j) }
