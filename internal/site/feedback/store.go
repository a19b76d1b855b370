package feedback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/site/advise"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
)

// Indices names the indices the site command reads and writes. Job and
// Result are the bases of monthly indices (jobmodel's indices.go);
// History is one index.
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

	mu sync.Mutex
	// where is the index each job document read was found in, by id:
	// a rewrite of it (PutAnalysis) replaces it there, also when it is
	// in the pre-0.2 single index.
	where map[string]string
}

// found records the index a job document was read from.
func (s *Store) found(id, index string) {
	if index == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.where == nil {
		s.where = map[string]string{}
	}
	s.where[id] = index
}

// jobIndex is where a job document goes: where it was read from, else
// its monthly index.
func (s *Store) jobIndex(job jobmodel.Job, now time.Time) string {
	s.mu.Lock()
	index := s.where[job.DocID]
	s.mu.Unlock()
	if index != "" {
		return index
	}
	return job.IndexOf(s.Indices.Job, now)
}

// MaxRange is the most jobs one range query returns; a larger range is
// refused with an error asking for a smaller one (never silently cut).
const MaxRange = 10000

// ErrNotFound says that no document has the id asked for.
var ErrNotFound = errors.New("no such job document")

// Job returns the job document with id docID.
func (s *Store) Job(ctx context.Context, docID string) (jobmodel.Job, error) {
	index := jobmodel.SearchIndices(s.Indices.Job)
	q, err := json.Marshal(map[string]any{"size": 10,
		"query": map[string]any{"ids": map[string]any{"values": []string{docID}}}})
	if err != nil {
		return jobmodel.Job{}, err
	}
	raw, err := s.ES.Search(ctx, index, q)
	if err != nil {
		return jobmodel.Job{}, err
	}
	var ans store.SearchAnswer[json.RawMessage]
	if err := json.Unmarshal(raw, &ans); err != nil {
		return jobmodel.Job{}, fmt.Errorf("searching %s: %w", index, err)
	}
	hits := newest(ans.Hits.Hits)
	if len(hits) == 0 || hits[0].ID != docID {
		return jobmodel.Job{}, fmt.Errorf("%s in %s: %w", docID, index, ErrNotFound)
	}
	var job jobmodel.Job
	if err := json.Unmarshal(hits[0].Source, &job); err != nil {
		return jobmodel.Job{}, fmt.Errorf("job document %s: %w", docID, err)
	}
	s.found(docID, hits[0].Index)
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
	err := s.rangeSearch(ctx, s.Indices.Job, field, from, to, []any{map[string]any{"term": map[string]any{"final": true}}}, func(h store.Hit[json.RawMessage]) error {
		var j jobmodel.Job
		if err := json.Unmarshal(h.Source, &j); err != nil {
			return err
		}
		s.found(h.ID, h.Index)
		out = append(out, j)
		return nil
	})
	return out, err
}

// Results returns the analyses of jobs that ended in [from, to).
func (s *Store) Results(ctx context.Context, from, to time.Time) ([]jobmodel.Result, error) {
	var out []jobmodel.Result
	err := s.rangeSearch(ctx, s.Indices.Result, ByEndTime, from, to, nil, func(h store.Hit[json.RawMessage]) error {
		var r jobmodel.Result
		if err := json.Unmarshal(h.Source, &r); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// rangeSearch calls each with every document of base's indices (every
// month, and the pre-0.2 single index) whose field is in [from, to) and
// that matches filters; of a document stored twice (in the single index
// and in a monthly one, by a rewrite after the upgrade) only the newest.
func (s *Store) rangeSearch(ctx context.Context, base, field string, from, to time.Time, filters []any, each func(store.Hit[json.RawMessage]) error) error {
	index := jobmodel.SearchIndices(base)
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
	for _, h := range newest(ans.Hits.Hits) {
		if err := each(h); err != nil {
			return fmt.Errorf("document %s in %s: %w", h.ID, h.Index, err)
		}
	}
	return nil
}

// newest keeps, of hits with one id, the one updated last (by its
// updated_at), in the order of the hits.
func newest(hits []store.Hit[json.RawMessage]) []store.Hit[json.RawMessage] {
	updated := func(h store.Hit[json.RawMessage]) time.Time {
		var d struct {
			UpdatedAt *jobmodel.Time `json:"updated_at"`
		}
		if json.Unmarshal(h.Source, &d) != nil || d.UpdatedAt == nil {
			return time.Time{}
		}
		return d.UpdatedAt.Time
	}
	best := map[string]int{}
	out := make([]store.Hit[json.RawMessage], 0, len(hits))
	for _, h := range hits {
		i, seen := best[h.ID]
		switch {
		case !seen:
			best[h.ID] = len(out)
			out = append(out, h)
		case updated(h).After(updated(out[i])):
			out[i] = h
		}
	}
	return out
}

// PutAnalysis stores a job's analysis in its job document and in the
// results index, in one bulk request. The document gets its totals too
// (jobmodel.TotalsOf): `jobsight analyze` over a past range gives the
// documents of agents before 0.2, which wrote none, what the grouped
// panels aggregate.
func (s *Store) PutAnalysis(ctx context.Context, job jobmodel.Job, a jobmodel.Analysis, now time.Time) error {
	job.Analysis = &a
	if job.Final {
		job.Totals = jobmodel.TotalsOf(&job)
	}
	jb, err := json.Marshal(job)
	if err != nil {
		return err
	}
	r := jobmodel.NewResult(job, a, *jobmodel.At(now))
	rb, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.bulk(ctx, []store.Doc{
		{Kind: store.KindJobDoc, Index: s.jobIndex(job, now), ID: job.DocID, Body: jb},
		{Kind: store.KindJobDoc, Index: r.IndexOf(s.Indices.Result, now), ID: job.DocID, Body: rb},
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

// EnsureIndices creates (or extends) this month's job and results indices
// (and has the client do the same for another month's before its first
// write there) and the history index.
func (s *Store) EnsureIndices(ctx context.Context) error {
	now := time.Now()
	if err := s.ES.EnsurePartitioned(ctx, s.Indices.Job, jobmodel.JobMapping(), now); err != nil {
		return err
	}
	if err := s.ES.EnsurePartitioned(ctx, s.Indices.Result, jobmodel.ResultMapping(), now); err != nil {
		return err
	}
	return s.ES.EnsureIndex(ctx, s.Indices.History, jobmodel.HistoryMapping())
}

// PutTemplates puts the index templates of the job and results indices
// (for "<base>-*", with the mapping). It needs the manage_index_templates
// cluster privilege: `jobsight setup` run by an administrator.
func (s *Store) PutTemplates(ctx context.Context) error {
	if err := s.ES.PutTemplate(ctx, s.Indices.Job, jobmodel.JobMapping()); err != nil {
		return err
	}
	return s.ES.PutTemplate(ctx, s.Indices.Result, jobmodel.ResultMapping())
}

// UserJobs selects the final job documents of one user that UserFinalJobs
// reads: the uid's, ended since Since, in Account and one of Partitions
// when they are given; the newest Size of them.
type UserJobs struct {
	UID        uint32
	Account    string
	Partitions []string
	Since      time.Time
	Size       int
	// AccountWide reads every user's jobs of Account (which must be
	// given), not only UID's: for a PI of the account.
	AccountWide bool
	// Like, when set, has the store select the jobs that may compare with
	// one request, so that a search reads tens of documents, not the
	// caller's whole history: see Like.
	Like *Like
}

// Like is what a compared job may be: the store returns the jobs in one
// of States, on Nodes nodes, that ran at least MinElapsed seconds, and
// either have the name Name (ranked first, newest first) or a similar
// request (CPUs, memory per node and GPUs), newest first. The selection
// is wider than the advice's own, never narrower: a condition leaves out
// only the documents whose field is there and says no (a job without its
// memory request is kept, for the caller to judge), except that a job
// with GPUs must name their count (held or requested).
type Like struct {
	States []string
	Name   string
	// Nodes is the job's node count (0: any); MinElapsed its shortest run
	// in seconds (0: any).
	Nodes      int64
	MinElapsed float64
	// CPUsMin–CPUsMax is the CPU request (total) of a similar job; 0 as
	// CPUsMax: any. MemMin–MemMax its memory request per node; 0 as
	// MemMax: any.
	CPUsMin, CPUsMax int64
	MemMin, MemMax   int64
	// GPUs, when set, is the GPU count a similar request has (0: none).
	GPUs *int64
}

// userJobFields are the fields of a job document `jobsight advise` reads:
// what analysis.Needs needs, and no more.
var userJobFields = []string{"doc_id", "job_id", "cluster", "name", "user", "uid", "account", "partition", "state", "final",
	"start_time", "end_time", "elapsed_seconds", "time_limit_seconds", "requested", "node_count", "nodes",
	"cpu", "memory", "gpu", "gpus", "updated_at"}

// UserFinalJobs returns the final job documents q selects, newest first,
// in one search. Only documents whose uid is q.UID (AccountWide: whose
// account is q.Account) are returned, however the store answers.
func (s *Store) UserFinalJobs(ctx context.Context, q UserJobs) ([]jobmodel.Job, error) {
	if q.Size < 1 || q.Size > MaxRange {
		return nil, fmt.Errorf("UserFinalJobs: size %d, want 1 to %d", q.Size, MaxRange)
	}
	index := jobmodel.SearchIndices(s.Indices.Job)
	if q.AccountWide && q.Account == "" {
		return nil, errors.New("UserFinalJobs: account-wide without an account")
	}
	filters := []any{term("final", true),
		rng(ByEndTime, map[string]any{"gte": q.Since.UTC().Format(time.RFC3339Nano)})}
	if !q.AccountWide {
		filters = append(filters, term("uid", q.UID))
	}
	if s.Cluster != "" {
		filters = append(filters, term("cluster", s.Cluster))
	}
	if q.Account != "" {
		filters = append(filters, term("account", q.Account))
	}
	if len(q.Partitions) > 0 {
		filters = append(filters, map[string]any{"terms": map[string]any{"partition": q.Partitions}})
	}
	query := map[string]any{"filter": filters}
	sort := []any{map[string]any{ByEndTime: "desc"}}
	if l := q.Like; l != nil {
		var rank any
		filters, rank = l.filters(filters)
		query["filter"] = filters
		if rank != nil {
			query["should"] = rank
		}
		if l.Name != "" {
			sort = append([]any{"_score"}, sort...)
		}
	}
	body, err := json.Marshal(map[string]any{
		"size":    q.Size,
		"query":   map[string]any{"bool": query},
		"sort":    sort,
		"_source": userJobFields,
	})
	if err != nil {
		return nil, err
	}
	raw, err := s.ES.Search(ctx, index, body)
	if err != nil {
		return nil, err
	}
	var ans store.SearchAnswer[json.RawMessage]
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("searching %s: %w", index, err)
	}
	out := make([]jobmodel.Job, 0, len(ans.Hits.Hits))
	for _, h := range newest(ans.Hits.Hits) {
		var j jobmodel.Job
		if err := json.Unmarshal(h.Source, &j); err != nil {
			return nil, fmt.Errorf("document %s in %s: %w", h.ID, h.Index, err)
		}
		mine := j.UID != nil && *j.UID == q.UID
		if !j.Final || (!mine && !q.AccountWide) || (q.Account != "" && j.Account != q.Account) {
			continue
		}
		out = append(out, j)
	}
	return out, nil
}

// LikeRequest is what a job compared with req may be (advise's rules:
// comparable, counts, similarRequest).
func LikeRequest(req advise.Request, cfg advise.Config) *Like {
	l := &Like{States: advise.CountingStates, Name: req.JobName(), Nodes: max(1, req.Nodes), MinElapsed: cfg.MinElapsed.Seconds(), GPUs: &req.GPUs}
	l.CPUsMin, l.CPUsMax = advise.SimilarCPUs(req)
	l.MemMin, l.MemMax = advise.SimilarMemory(req)
	return l
}

// Key is l as a cache key: equal for equal conditions, in any process.
func (l *Like) Key() string {
	gpus := "any"
	if l.GPUs != nil {
		gpus = strconv.FormatInt(*l.GPUs, 10)
	}
	return fmt.Sprintf("states=%s name=%q nodes=%d elapsed>=%g cpus=%d-%d mem=%d-%d gpus=%s",
		strings.Join(l.States, ","), l.Name, l.Nodes, l.MinElapsed, l.CPUsMin, l.CPUsMax, l.MemMin, l.MemMax, gpus)
}

// filters adds l's conditions to filters, with the should clause that
// ranks the jobs of l's name first (nil without a name).
func (l *Like) filters(filters []any) ([]any, any) {
	// outside leaves out the documents whose field is known (> 0) and
	// outside [lo, hi].
	outside := func(field string, lo, hi int64) []any {
		out := []any{rng(field, map[string]any{"gt": hi})}
		if lo > 1 {
			out = append(out, rng(field, map[string]any{"gt": 0, "lt": lo}))
		}
		return out
	}
	var not []any
	if len(l.States) > 0 {
		filters = append(filters, map[string]any{"terms": map[string]any{"state": l.States}})
	}
	if l.Nodes > 0 {
		not = append(not, outside("requested.nodes", l.Nodes, l.Nodes)...)
	}
	if l.MinElapsed > 0 {
		not = append(not, rng("elapsed_seconds", map[string]any{"lt": l.MinElapsed}))
	}
	if len(not) > 0 {
		filters = append(filters, map[string]any{"bool": map[string]any{"must_not": not}})
	}
	var similar, notSimilar []any
	if l.CPUsMax > 0 {
		similar = append(similar, rng("requested.cpus", map[string]any{"gte": l.CPUsMin, "lte": l.CPUsMax}))
	}
	if l.MemMax > 0 {
		notSimilar = append(notSimilar, outside("requested.memory_per_node_bytes", l.MemMin, l.MemMax)...)
	}
	switch g := l.GPUs; {
	case g == nil:
	case *g > 0:
		similar = append(similar, map[string]any{"bool": map[string]any{"should": []any{term("gpu.held", *g), term("requested.gpus", *g)}, "minimum_should_match": 1}})
	default:
		notSimilar = append(notSimilar, rng("gpu.held", map[string]any{"gte": 1}), rng("requested.gpus", map[string]any{"gte": 1}))
	}
	var like []any
	var rank any
	if l.Name != "" {
		like = append(like, term("name", l.Name))
		// The same name ranks first: it is the advice's first choice,
		// and a long history of similar requests must not crowd it out.
		rank = []any{map[string]any{"term": map[string]any{"name": map[string]any{"value": l.Name, "boost": 10}}}}
	}
	if len(similar)+len(notSimilar) > 0 {
		b := map[string]any{}
		if len(similar) > 0 {
			b["filter"] = similar
		}
		if len(notSimilar) > 0 {
			b["must_not"] = notSimilar
		}
		like = append(like, map[string]any{"bool": b})
	}
	if len(like) > 0 {
		filters = append(filters, map[string]any{"bool": map[string]any{"should": like, "minimum_should_match": 1}})
	}
	return filters, rank
}

// term is a term query on field.
func term(field string, v any) any { return map[string]any{"term": map[string]any{field: v}} }

// rng is a range query on field.
func rng(field string, bounds map[string]any) any {
	return map[string]any{"range": map[string]any{field: bounds}}
}
