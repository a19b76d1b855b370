package feedback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
)

// Indices names the indices the site command reads and writes.
type Indices struct {
	Job, Result, History string
}

// Store reads job documents and results from Elasticsearch and writes
// analyses and history back, with the same portable subset of the API as
// the agent (ids and range queries, bulk writes with explicit ids).
type Store struct {
	ES      *elasticsearch.Client
	Indices Indices
	// Cluster, when set, limits range queries to one cluster's jobs (an
	// index may hold several clusters').
	Cluster string
}

// MaxRange is the most jobs one range query returns; a larger range is
// refused with an error asking for a smaller one (never silently cut).
const MaxRange = 10000

// ErrNotFound says that no document has the id asked for.
var ErrNotFound = errors.New("no such job document")

// Job returns the job document with id docID.
func (s *Store) Job(ctx context.Context, docID string) (jobmodel.Job, error) {
	got, err := s.ES.GetByIDs(ctx, s.Indices.Job, []string{docID})
	if err != nil {
		return jobmodel.Job{}, err
	}
	raw, ok := got[docID]
	if !ok {
		return jobmodel.Job{}, fmt.Errorf("%s in %s: %w", docID, s.Indices.Job, ErrNotFound)
	}
	var job jobmodel.Job
	if err := json.Unmarshal(raw, &job); err != nil {
		return jobmodel.Job{}, fmt.Errorf("job document %s: %w", docID, err)
	}
	return job, nil
}

// Time fields a range of jobs can be selected by.
const (
	ByEndTime   = "end_time"
	ByUpdatedAt = "updated_at"
)

// FinalJobs returns the final job documents whose field (ByEndTime,
// ByUpdatedAt) is in [from, to).
func (s *Store) FinalJobs(ctx context.Context, field string, from, to time.Time) ([]jobmodel.Job, error) {
	var out []jobmodel.Job
	err := s.rangeSearch(ctx, s.Indices.Job, field, from, to, []any{map[string]any{"term": map[string]any{"final": true}}}, func(raw json.RawMessage) error {
		var j jobmodel.Job
		if err := json.Unmarshal(raw, &j); err != nil {
			return err
		}
		out = append(out, j)
		return nil
	})
	return out, err
}

// Results returns the analyses of jobs that ended in [from, to).
func (s *Store) Results(ctx context.Context, from, to time.Time) ([]jobmodel.Result, error) {
	var out []jobmodel.Result
	err := s.rangeSearch(ctx, s.Indices.Result, ByEndTime, from, to, nil, func(raw json.RawMessage) error {
		var r jobmodel.Result
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// rangeSearch calls each with the source of every document of index whose
// field is in [from, to) and that matches filters.
func (s *Store) rangeSearch(ctx context.Context, index, field string, from, to time.Time, filters []any, each func(json.RawMessage) error) error {
	filters = append(filters, map[string]any{"range": map[string]any{field: map[string]any{
		"gte": from.UTC().Format(time.RFC3339Nano), "lt": to.UTC().Format(time.RFC3339Nano)}}})
	if s.Cluster != "" {
		filters = append(filters, map[string]any{"term": map[string]any{"cluster": s.Cluster}})
	}
	// size stays within Elasticsearch's default index.max_result_window
	// (10,000); the exact total tells a range that is too large from one
	// that fits (a number for track_total_hits would be cheaper on
	// Elasticsearch, but not every compatible server takes one).
	q, err := json.Marshal(map[string]any{
		"size":             MaxRange,
		"track_total_hits": true,
		"query":            map[string]any{"bool": map[string]any{"filter": filters}},
		"sort":             []any{map[string]any{field: "asc"}},
	})
	if err != nil {
		return err
	}
	raw, err := s.ES.Search(ctx, index, q)
	if err != nil {
		return err
	}
	var ans store.SearchAnswer[json.RawMessage]
	if err := json.Unmarshal(raw, &ans); err != nil {
		return fmt.Errorf("searching %s: %w", index, err)
	}
	if ans.Hits.Total.Value > MaxRange || len(ans.Hits.Hits) > MaxRange {
		return fmt.Errorf("more than %d documents in %s have %s between %s and %s: ask for a shorter range", MaxRange, index, field,
			from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	for _, h := range ans.Hits.Hits {
		if err := each(h.Source); err != nil {
			return fmt.Errorf("document %s in %s: %w", h.ID, index, err)
		}
	}
	return nil
}

// PutAnalysis stores a job's analysis in its job document and in the
// results index, in one bulk request.
func (s *Store) PutAnalysis(ctx context.Context, job jobmodel.Job, a jobmodel.Analysis, now time.Time) error {
	job.Analysis = &a
	jb, err := json.Marshal(job)
	if err != nil {
		return err
	}
	rb, err := json.Marshal(jobmodel.NewResult(job, a, *jobmodel.At(now)))
	if err != nil {
		return err
	}
	return s.bulk(ctx, []store.Doc{
		{Kind: store.KindJobDoc, Index: s.Indices.Job, ID: job.DocID, Body: jb},
		{Kind: store.KindJobDoc, Index: s.Indices.Result, ID: job.DocID, Body: rb},
	})
}

// PutHistory stores history entries.
func (s *Store) PutHistory(ctx context.Context, hs []jobmodel.History) error {
	docs := make([]store.Doc, 0, len(hs))
	for _, h := range hs {
		b, err := json.Marshal(h)
		if err != nil {
			return err
		}
		docs = append(docs, store.Doc{Kind: store.KindJobDoc, Index: s.Indices.History, ID: h.DocID, Body: b})
	}
	return s.bulk(ctx, docs)
}

func (s *Store) bulk(ctx context.Context, docs []store.Doc) error {
	if len(docs) == 0 {
		return nil
	}
	failures, err := s.ES.Bulk(ctx, docs)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range failures {
		errs = append(errs, f.Err)
	}
	return errors.Join(errs...)
}

// EnsureIndices creates (or extends) the results and history indices.
func (s *Store) EnsureIndices(ctx context.Context) error {
	if err := s.ES.EnsureIndex(ctx, s.Indices.Job, jobmodel.JobMapping()); err != nil {
		return err
	}
	if err := s.ES.EnsureIndex(ctx, s.Indices.Result, jobmodel.ResultMapping()); err != nil {
		return err
	}
	return s.ES.EnsureIndex(ctx, s.Indices.History, jobmodel.HistoryMapping())
}
