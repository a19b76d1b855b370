package plugin

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/pkg/models"
)

// jobScope is what limits a query's jobs: its filters, the viewer's
// visibility and the time range.
type jobScope struct {
	q        *models.Query
	v        Viewer
	from, to time.Time
	// running: only jobs still running; finished: only finished ones.
	running, finished bool
	// unfinished: only jobs whose documents are not final (running, or
	// silent: settleSilent ends those), overlapping the range.
	unfinished bool
	// noTime: no time-range restriction (a job looked up by id).
	noTime bool
	// exclude: documents left out by id (counted by another read).
	exclude []string
}

// clusters returns the clusters a query is limited to: the datasource's
// clusterFilter wins over the query's list.
func (d *Datasource) clusters(q *models.Query) []string {
	if d.settings.ClusterFilter != "" {
		return []string{d.settings.ClusterFilter}
	}
	return q.Cluster
}

// esQuery builds the bool query of a scope. Values are Go strings in
// term/terms clauses, JSON-encoded: never spliced into text; the name
// filter's text is escaped into a regexp (nameContains).
func (d *Datasource) esQuery(sc jobScope) (map[string]any, error) {
	q := sc.q
	var f []any
	if cl := d.clusters(q); len(cl) > 0 {
		f = append(f, esTerms("cluster", cl))
		if d.settings.ClusterFilter != "" && len(q.Cluster) > 0 && !containsAll([]string{d.settings.ClusterFilter}, q.Cluster) {
			return nil, fmt.Errorf("this datasource shows cluster %q only (clusterFilter); the query asks for %q", d.settings.ClusterFilter, q.Cluster)
		}
	}
	for _, t := range []struct {
		field string
		vals  []string
	}{{"user", q.User}, {"account", q.Account}, {"partition", q.Partition}, {"state", q.State}, {"analysis.class", q.Class}} {
		if len(t.vals) > 0 {
			f = append(f, esTerms(t.field, t.vals))
		}
	}
	if q.Name != "" {
		f = append(f, nameContains(q.Name))
	}
	if q.JobID != "" {
		cluster, id, _, err := models.ParseJobRef(q.JobID)
		if err != nil {
			return nil, err
		}
		f = append(f, esTerm("job_id", id))
		if cluster != "" {
			// A reference with its cluster is a document id: exactly that
			// document. Slurm reuses ids, so "<cluster>:<id>" is the first
			// job that had the id and "<cluster>:<id>@<submit>" a later
			// one (jobmodel.ReuseDocID); matching the id alone would mix
			// them, and the newest would win on a job page.
			f = append(f, esTerm("cluster", cluster), esTerm("doc_id", q.JobID))
		}
	}
	if !sc.noTime {
		f = append(f, esRange("start_time", map[string]any{"lte": sc.to.UTC().Format(time.RFC3339Nano)}))
		if !sc.running {
			f = append(f, esShould(esTerm("final", false), esRange("end_time", map[string]any{"gte": sc.from.UTC().Format(time.RFC3339Nano)})))
		}
	}
	if sc.running {
		f = append(f, esTerm("final", false))
	}
	if sc.finished {
		f = append(f, esTerm("final", true))
	}
	if sc.unfinished {
		f = append(f, esTerm("final", false))
	}
	if vis := sc.v.esVisibility(); vis != nil {
		f = append(f, vis)
	}
	if len(sc.exclude) > 0 {
		f = append(f, map[string]any{"bool": map[string]any{"must_not": []any{esTerms("doc_id", sc.exclude)}}})
	}
	return esFilter(f), nil
}

func containsAll(set, vals []string) bool {
	for _, v := range vals {
		found := false
		for _, s := range set {
			if s == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// compactFields are the job document fields the aggregating queries read.
// They are top-level names only: source filtering by dotted paths
// ("requested.cpus") is not served alike by every Elasticsearch-API
// server, whole top-level objects are. The per-GPU list (gpus), the
// analysis and the job's node list are left out.
var compactFields = []string{"doc_id", "cluster", "job_id", "name", "user", "account", "partition", "state",
	"start_time", "end_time", "submit_time", "time_limit_seconds", "elapsed_seconds", "final", "node_count", "sampling",
	"requested", "cpu", "memory", "gpu", "updated_at", "end_reason"}

// fetchJobs reads the jobs of a scope (compact sources), at most
// maxJobs; the total tells whether the answer was truncated.
func (d *Datasource) fetchJobs(ctxQ queryCtx, sc jobScope, sort []any, from, size int, fields []string) ([]jobmodel.Job, int64, error) {
	jobs, total, _, err := d.fetchJobsRaw(ctxQ, sc, sort, from, size, fields)
	return jobs, total, err
}

// fetchJobsRaw is fetchJobs that also returns how many hits the store
// answered before the documents were checked (truncation is judged on it).
func (d *Datasource) fetchJobsRaw(ctxQ queryCtx, sc jobScope, sort []any, from, size int, fields []string) ([]jobmodel.Job, int64, int, error) {
	query, err := d.esQuery(sc)
	if err != nil {
		return nil, 0, 0, err
	}
	if fields != nil {
		// settleSilent needs them.
		fields = append(slices.Clone(fields), "updated_at", "end_reason")
	}
	body := map[string]any{"query": query, "size": size, "from": from, "track_total_hits": true, "_source": fields}
	if sort != nil {
		body["sort"] = sort
	}
	var pages [][]byte
	if sort != nil && from+size > resultWindow {
		// Deeper than one search reaches: pages (paging.go).
		delete(body, "from")
		var note string
		pages, note, err = d.pagedSearch(ctxQ, d.settings.ElasticsearchJobIndex, body, slices.Clone(sort), from+size)
		if note != "" {
			ctxQ.st.note.Store(&note)
		}
	} else {
		var raw []byte
		raw, err = d.searchRaw(ctxQ.ctx, ctxQ.st, d.settings.ElasticsearchJobIndex, body)
		pages = [][]byte{raw}
	}
	if err != nil {
		return nil, 0, 0, err
	}
	var docs []jobmodel.Job
	var total int64
	skipped := 0
	for i, raw := range pages {
		pd, pt, ps, err := decodeJobs(raw)
		if err != nil {
			return nil, 0, 0, &backendError{backend: "Elasticsearch", msg: fmt.Sprintf("Elasticsearch: the search answer is not JSON: %v", err)}
		}
		if i == 0 {
			total = pt
		}
		docs = append(docs, pd...)
		skipped += ps
	}
	if len(pages) > 1 || sort != nil && from+size > resultWindow {
		// The pages start at the first row: keep those from the offset.
		docs = docs[min(from, len(docs)):]
	}
	hits := len(docs) + skipped
	ctxQ.st.skipped.Add(int64(skipped))
	jobs := docs[:0]
	for _, j := range docs {
		// The index holds what the agents wrote; the access rule is
		// checked again on what came back.
		if !sc.v.canSee(j.User, j.Account) {
			continue
		}
		// The store matched the name filter as an escaped regular
		// expression; a server that read it more loosely must not widen
		// the rows.
		if sc.q.Name != "" && !strings.Contains(j.Name, sc.q.Name) {
			continue
		}
		jobs = append(jobs, j)
	}
	if err := d.settleSilent(ctxQ, jobs); err != nil {
		// Not knowing leaves the jobs as their documents say.
		d.logger.Warn("could not tell silent jobs from running ones", "err", err)
	}
	kept := jobs[:0]
	for _, j := range jobs {
		if j.EndReason == endSilent && (sc.running || !sc.noTime && j.EndTime.Before(sc.from)) {
			continue // not running, or ended before the range
		}
		kept = append(kept, j)
	}
	return kept, total, hits, nil
}

// nodeUpdate is what settleSilent reads of a node document.
type nodeUpdate struct {
	JobDocID  string         `json:"job_doc_id"`
	UpdatedAt *jobmodel.Time `json:"updated_at"`
}

// endSilent marks, in memory only, a job settleSilent ended.
const endSilent = "silent"

// settleSilent ends the jobs whose document is not final but whose agents
// have gone silent: no update of the job document or of any of its node
// documents (which a running job's agents rewrite every flush_interval)
// for silentAfterMinutes. Such a job is not running: it ends at its last
// update, with state UNKNOWN (its agent, or the node holding its
// checkpoint, is gone; the cluster-state collector closes it in the store
// as lost). One aggregation on the node index, for the non-final jobs
// whose job document alone is old (their node documents, newest first).
func (d *Datasource) settleSilent(qc queryCtx, jobs []jobmodel.Job) error {
	cutoff := qc.now.Add(-time.Duration(d.settings.SilentAfterMinutes) * time.Minute)
	idx := map[string]int{}
	var ids []string
	for i := range jobs {
		j := &jobs[i]
		if j.Final || j.UpdatedAt == nil || !j.UpdatedAt.Before(cutoff) || j.DocID == "" {
			continue
		}
		idx[j.DocID] = i
		ids = append(ids, j.DocID)
	}
	if len(ids) == 0 {
		return nil
	}
	// The node documents of these jobs, newest first: the first of each
	// job is its last update. (A max aggregation would be smaller, but
	// not every Elasticsearch-API server answers one on a date.)
	size := 0
	for _, id := range ids {
		size += max(jobs[idx[id]].NodeCount, 1)
	}
	size = min(size, 10000)
	body := map[string]any{"size": size, "query": esFilter([]any{esTerms("job_doc_id", ids)}),
		"_source": []string{"job_doc_id", "updated_at"},
		"sort":    []any{map[string]any{"updated_at": map[string]any{"order": "desc"}}}}
	raw, err := d.searchRaw(qc.ctx, qc.st, d.settings.ElasticsearchNodeIndex, body)
	if err != nil {
		return err
	}
	var ans store.SearchAnswer[nodeUpdate]
	if err := gojson.Unmarshal(raw, &ans); err != nil {
		return fmt.Errorf("the node index's last updates: %w", err)
	}
	last := make(map[string]time.Time, len(ids))
	for _, id := range ids {
		last[id] = jobs[idx[id]].UpdatedAt.Time
	}
	var oldest time.Time
	seen := map[string]bool{}
	for _, h := range ans.Hits.Hits {
		n := h.Source
		seen[n.JobDocID] = true
		if n.UpdatedAt == nil {
			continue
		}
		oldest = n.UpdatedAt.Time
		if _, ok := idx[n.JobDocID]; ok && n.UpdatedAt.After(last[n.JobDocID]) {
			last[n.JobDocID] = n.UpdatedAt.Time
		}
	}
	if len(ans.Hits.Hits) >= size && !oldest.Before(cutoff) {
		// Cut off while still among recent updates: a job not seen
		// here may have one too. Only those seen silent are ended.
		for id := range last {
			if !seen[id] {
				delete(last, id)
			}
		}
	}
	for id, t := range last {
		if !t.Before(cutoff) {
			continue
		}
		j := &jobs[idx[id]]
		j.Final, j.State, j.EndReason = true, jobmodel.StateUnknown, endSilent
		if j.StartTime != nil && t.Before(j.StartTime.Time) {
			t = j.StartTime.Time
		}
		j.EndTime = jobmodel.At(t)
	}
	return nil
}

// jobHits is a search answer whose sources are job documents.
type jobHits = store.SearchAnswer[jobmodel.Job]

// decodeJobs decodes a search answer's job documents in one pass (with
// goccy/go-json: decoding is most of the plugin's own time on large
// answers, see docs/performance.md). When a document does not decode, the
// answer is decoded again document by document and the bad ones are
// skipped and counted: one bad document must not blank a panel.
func decodeJobs(raw []byte) ([]jobmodel.Job, int64, int, error) {
	var ans jobHits
	if err := gojson.Unmarshal(raw, &ans); err == nil {
		jobs := make([]jobmodel.Job, len(ans.Hits.Hits))
		for i := range ans.Hits.Hits {
			jobs[i] = ans.Hits.Hits[i].Source
		}
		return jobs, ans.Hits.Total.Value, 0, nil
	}
	var loose esSearch
	if err := gojson.Unmarshal(raw, &loose); err != nil {
		return nil, 0, 0, err
	}
	jobs := make([]jobmodel.Job, 0, len(loose.Hits.Hits))
	skipped := 0
	for _, h := range loose.Hits.Hits {
		var j jobmodel.Job
		if err := gojson.Unmarshal(h.Source, &j); err != nil {
			skipped++
			continue
		}
		jobs = append(jobs, j)
	}
	return jobs, loose.Hits.Total.Value, skipped, nil
}

// findJob reads one job's document by reference, as the viewer may see
// it: a document id ("<cluster>:<id>", or "<cluster>:<id>@<submit>" for a
// reused Slurm id) names exactly that document; a bare Slurm id with the
// query's one cluster gives the most recent job with that id. One request.
func (d *Datasource) findJob(qc *queryCtx, ref string, fields []string) (*jobmodel.Job, error) {
	cluster, id, _, err := models.ParseJobRef(ref)
	if err != nil {
		return nil, err
	}
	q := models.Query{JobID: id}
	switch {
	case cluster != "":
		q.JobID = ref // the document id itself
		q.Cluster = []string{cluster}
	case len(qc.q.Cluster) == 1:
		q.Cluster = qc.q.Cluster
	case len(d.clusters(qc.q)) != 1:
		return nil, fmt.Errorf("jobId %q names no cluster: write it as \"<cluster>:%s\" or choose one cluster", ref, id)
	}
	sc := jobScope{q: &q, v: qc.v, noTime: true}
	sortNewest := []any{map[string]any{"start_time": map[string]any{"order": "desc"}}}
	jobs, _, err := d.fetchJobs(*qc, sc, sortNewest, 0, 1, fields)
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%w: %s (or it is not one of yours)", errNotFound, ref)
	}
	return &jobs[0], nil
}

// errNotFound: the job asked for does not exist or is not visible to the
// viewer (the two are not told apart, so ids cannot be probed).
var errNotFound = errors.New("job not found")
