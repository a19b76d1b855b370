package clusterstate

// lost.go: closing the job documents that no agent will finalize. Only the
// node holding a job's checkpoint finalizes it; a node that died with its
// state (diskless, reimaged) or a first node that never runs another job
// leaves its job document non-final for ever, and the datasource would
// count the job as running to now. The collector, one per cluster and the
// one place that sees what Slurm still lists, closes such jobs.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
)

// DefaultLostAfter and MinLostAfter bound elasticsearch.lost_after.
const (
	DefaultLostAfter = 30 * time.Minute
	MinLostAfter     = 15 * time.Minute
)

// maxLostPerCheck bounds the job documents one check reads (and closes);
// more wait for the next check.
const maxLostPerCheck = 500

// maxListedTerms bounds the listed job keys sent to the store to exclude
// (Elasticsearch's default index.max_terms_count is 65536); with more,
// they are excluded here instead.
const maxListedTerms = 60000

// closeLost writes final, as lost, the non-final job documents of the
// cluster whose job Slurm no longer lists (snap.Listed) and whose
// documents (the job's and its nodes') nobody updated for lost_after. It
// returns how many it closed. Each closed document has state UNKNOWN,
// end_reason "lost", end_time at the last update seen, the usage its
// node documents held by then (jobmodel.Assemble), and missing_metrics
// naming the final state and, per node, the samples after the agent was
// lost. It is written with the external version last update + 1µs
// (updated_at is the last update, to the millisecond): above
// every version an agent wrote before, below any later write of an agent
// that was only late (a spooled final document wins where the store
// honours versions, as Elasticsearch does).
func (c *Collector) closeLost(ctx context.Context, snap *Snapshot) (int, error) {
	es := c.cfg.Elasticsearch
	cutoff := snap.Time.Add(-es.LostAfter)
	filters := []any{
		map[string]any{"term": map[string]any{"cluster": c.cfg.Cluster}},
		map[string]any{"term": map[string]any{"final": false}},
		map[string]any{"range": map[string]any{"updated_at": map[string]any{"lt": cutoff.UTC().Format(time.RFC3339Nano)}}},
	}
	boolQ := map[string]any{"filter": filters}
	listed := make([]string, 0, len(snap.Listed))
	for k := range snap.Listed {
		listed = append(listed, k)
	}
	if len(listed) > 0 && len(listed) <= maxListedTerms {
		slices.Sort(listed)
		boolQ["must_not"] = []any{map[string]any{"terms": map[string]any{"job_id": listed}}}
	}
	body, err := json.Marshal(map[string]any{"size": maxLostPerCheck, "query": map[string]any{"bool": boolQ},
		"sort": []any{map[string]any{"updated_at": map[string]any{"order": "asc"}}}})
	if err != nil {
		return 0, err
	}
	raw, err := c.es.Search(ctx, jobmodel.SearchIndices(es.JobIndex), body)
	if errors.Is(err, elasticsearch.ErrNotFound) {
		return 0, nil // no job index yet: no agent has written
	}
	if err != nil {
		return 0, fmt.Errorf("lost jobs: reading non-final jobs: %w", err)
	}
	var jobs store.SearchAnswer[jobmodel.Job]
	if err := json.Unmarshal(raw, &jobs); err != nil {
		return 0, fmt.Errorf("lost jobs: decoding the job search: %w", err)
	}
	var cands []jobmodel.Job
	// where is the index each candidate is stored in: its final document
	// replaces it there (a monthly index, or the pre-0.2 single index).
	where := map[string]string{}
	for _, h := range jobs.Hits.Hits {
		j := h.Source
		// The store filtered already; this holds where it could not
		// (too many listed jobs) and against a store that ignores a
		// clause.
		if j.Final || j.Cluster != c.cfg.Cluster || snap.Listed[j.JobID] || j.UpdatedAt == nil || !j.UpdatedAt.Before(cutoff) {
			continue
		}
		if j.DocID == "" {
			j.DocID = h.ID
		}
		where[j.DocID] = h.Index
		cands = append(cands, j)
	}
	if len(cands) == 0 {
		return 0, nil
	}
	nodes, err := c.nodeDocs(ctx, cands)
	if err != nil {
		return 0, err
	}
	var docs []store.Doc
	for _, j := range cands {
		last := j.UpdatedAt.Time
		ns := nodes[j.DocID]
		for _, n := range ns {
			if n.UpdatedAt != nil && n.UpdatedAt.After(last) {
				last = n.UpdatedAt.Time
			}
		}
		if !last.Before(cutoff) {
			continue // an agent wrote within lost_after: it may still finalize the job
		}
		lost := closeAsLost(j, ns, last)
		b, err := json.Marshal(lost)
		if err != nil {
			return 0, err
		}
		index := where[j.DocID]
		if index == "" { // a server that does not say: where the agent would write it
			index = j.IndexOf(es.JobIndex, c.now())
		}
		docs = append(docs, store.Doc{Kind: store.KindJobDoc, Index: index, ID: j.DocID, Body: b, Version: last.UnixMicro() + 1})
		c.log.Warn("closing a job no agent finalized: Slurm no longer lists it", "doc_id", j.DocID,
			"last_update", last.UTC().Format(time.RFC3339), "missing", lost.MissingMetrics)
	}
	if len(docs) == 0 {
		return 0, nil
	}
	failures, err := c.es.Bulk(ctx, docs)
	if err != nil {
		return 0, fmt.Errorf("lost jobs: writing: %w", err)
	}
	for _, f := range failures {
		c.log.Error("lost jobs: the store refused a closed job", "doc_id", f.Doc.ID, "err", f.Err)
	}
	return len(docs) - len(failures), nil
}

// nodeDocs reads the node documents of jobs, by job document id (one
// search).
func (c *Collector) nodeDocs(ctx context.Context, jobs []jobmodel.Job) (map[string][]jobmodel.Node, error) {
	ids := make([]string, len(jobs))
	size := 0
	for i, j := range jobs {
		ids[i] = j.DocID
		size += max(j.NodeCount, len(j.Nodes), 1)
	}
	body, err := json.Marshal(map[string]any{"size": min(size+len(jobs), 10000),
		"query": map[string]any{"bool": map[string]any{"filter": []any{map[string]any{"terms": map[string]any{"job_doc_id": ids}}}}}})
	if err != nil {
		return nil, err
	}
	raw, err := c.es.Search(ctx, jobmodel.SearchIndices(c.cfg.Elasticsearch.NodeIndex), body)
	if err != nil {
		return nil, fmt.Errorf("lost jobs: reading their node documents: %w", err)
	}
	var ans store.SearchAnswer[jobmodel.Node]
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("lost jobs: decoding the node search: %w", err)
	}
	out := map[string][]jobmodel.Node{}
	for _, h := range ans.Hits.Hits {
		out[h.Source.JobDocID] = append(out[h.Source.JobDocID], h.Source)
	}
	return out, nil
}

// closeAsLost is job's final document as the collector writes it: ended at
// last (the last update of any of its documents), state UNKNOWN,
// end_reason lost, the usage its node documents held, and what is
// missing named.
func closeAsLost(job jobmodel.Job, nodes []jobmodel.Node, last time.Time) jobmodel.Job {
	ns := slices.Clone(nodes)
	for i := range ns {
		if !ns[i].Final {
			// The node's agent never stopped: its samples after its last
			// update are lost (Assemble names them).
			ns[i].AgentState = jobmodel.AgentLost
		}
	}
	job.State, job.EndReason, job.Final = jobmodel.StateUnknown, jobmodel.EndLost, true
	if job.StartTime != nil && last.Before(job.StartTime.Time) {
		last = job.StartTime.Time
	}
	job.EndTime = jobmodel.At(last)
	job.ElapsedSeconds = nil // Assemble: end - start
	if !slices.Contains(job.MissingMetrics, jobmodel.MissingFinalState) {
		job.MissingMetrics = append(job.MissingMetrics, jobmodel.MissingFinalState)
	}
	jobmodel.Assemble(&job, ns)
	job.Analysis = nil
	job.Totals = jobmodel.TotalsOf(&job)
	job.UpdatedAt = jobmodel.At(last)
	return job
}
