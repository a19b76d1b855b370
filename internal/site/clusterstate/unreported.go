package clusterstate

// unreported.go: running jobs that no agent reports on. The SPANK plugin
// must be rebuilt for every Slurm release (its plugin_version is the
// release); with `optional` in plugstack.conf slurmd refuses a stale one
// and runs every job on the node unwatched, saying so only in its own log.
// A node without plugstack.conf (configless sites), without the agent
// binary, or whose agent's `node` setting is not Slurm's name for it looks
// the same. The collector, one per cluster and the one place that sees
// both what Slurm runs and what the agents wrote, asks the node index once
// a poll which (job, node) pairs of the running jobs have a node document.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/slurm"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
)

// DefaultUnmonitoredAfter, MinUnmonitoredAfter and MaxUnmonitoredAfter
// bound elasticsearch.unmonitored_after: how long a job runs before a
// node without its node document counts. An agent writes a job's first
// node document one flush_interval (default 30s, at most 10m) after the
// job starts.
const (
	DefaultUnmonitoredAfter = 5 * time.Minute
	MinUnmonitoredAfter     = time.Minute
	MaxUnmonitoredAfter     = 24 * time.Hour
)

// maxCheckedPairs bounds the (job, node) pairs one check asks about, and
// maxReportHits the documents it reads: Elasticsearch answers at most
// 10,000 hits a search (index.max_result_window), and each pair has one
// node document, so the difference leaves room for the documents of jobs
// that held the same id before. With more pairs, the jobs that started
// first are checked and the rest counted as unchecked.
const (
	maxCheckedPairs = 9000
	maxReportHits   = 10000
)

// maxUnreportedNodes bounds the nodes a cluster document lists, and
// maxUnreportedKeys the job keys it lists per node.
const (
	maxUnreportedNodes = 100
	maxUnreportedKeys  = 10
)

// reportSkew: a node document is the running job's report when it was
// updated no earlier than this before the job's start as Slurm gives it
// (node and controller clocks differ a little). An older document with
// the same key belongs to a job that held the id before (Slurm reuses
// ids) and does not count.
const reportSkew = 5 * time.Minute

// RunningJob is a job Slurm runs: its document key (jobmodel.Identity.Key),
// its nodes as a Slurm host list, and its start (Unix seconds; 0 unknown).
type RunningJob struct {
	Key   string
	Nodes string
	Start int64
}

// Unreported is what one check found: the running jobs, started at least
// unmonitored_after ago, that lack a node document from one or more of
// their nodes. A job that opted out (`--jobsight=off`) writes nothing
// either and is counted the same: the store cannot tell the two apart.
type Unreported struct {
	// Jobs counts the jobs missing a report from at least one node.
	Jobs int64
	// Nodes are the nodes running such jobs, by name, each with the
	// number of its jobs without its report.
	Nodes []UnreportedNode
	// Checked counts the jobs asked about; Unchecked those past the grace
	// left out by maxCheckedPairs (jobs are taken first started first;
	// those left out are checked once earlier ones end).
	Checked, Unchecked int64
}

// UnreportedNode is one node running jobs without its agent's report.
type UnreportedNode struct {
	Node string
	Jobs int64
	// Keys are the first job keys (sorted), at most maxUnreportedKeys.
	Keys []string
}

// reportHit is the part of a node document the check reads.
type reportHit struct {
	JobID     string          `json:"job_id"`
	Node      string          `json:"node"`
	UpdatedAt json.RawMessage `json:"updated_at"`
}

// checkUnreported fills snap.Unreported, or logs why it could not: with
// the store unreadable the series and fields are left out for this poll
// (absent, never a made-up 0).
func (c *Collector) checkUnreported(ctx context.Context, snap *Snapshot) {
	grace := c.cfg.Elasticsearch.UnmonitoredAfter
	if c.es == nil || grace <= 0 {
		return
	}
	// A store that hangs must not hold the poll past its interval.
	ctx, cancel := context.WithTimeout(ctx, min(c.cfg.Elasticsearch.Timeout, c.cfg.Interval/2))
	defer cancel()
	u, err := c.unreported(ctx, snap, grace)
	if err != nil {
		c.metrics.errors.WithLabelValues("elasticsearch").Inc()
		c.log.Warn("unreported jobs: not checked; their series are left out of this poll", "err", err)
		return
	}
	snap.Unreported = u
	if u.Unchecked > 0 && !c.warnedUnchecked {
		c.warnedUnchecked = true
		c.log.Warn("unreported jobs: more running jobs than one check covers; the first started are checked",
			"checked", u.Checked, "unchecked", u.Unchecked)
	}
	names := make([]string, 0, len(u.Nodes))
	for _, n := range u.Nodes {
		names = append(names, n.Node)
	}
	if !slices.Equal(names, c.lastUnreported) {
		c.lastUnreported = names
		if len(names) > 0 {
			c.log.Warn("nodes run jobs without an agent report (SPANK plugin not loaded, agent missing, or jobs opted out)",
				"nodes", len(names), "first", names[:min(len(names), 20)], "jobs", u.Jobs)
		}
	}
}

// unreported runs the check: one search of the node index for the node
// documents of the running jobs started at least grace ago (a terms query
// on their keys, only job_id, node and updated_at returned).
func (c *Collector) unreported(ctx context.Context, snap *Snapshot, grace time.Duration) (*Unreported, error) {
	cutoff := snap.Time.Add(-grace)
	due := make([]RunningJob, 0, len(snap.Running))
	for _, j := range snap.Running {
		if j.Start > 0 && !time.Unix(j.Start, 0).After(cutoff) {
			due = append(due, j)
		}
	}
	slices.SortFunc(due, func(a, b RunningJob) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Key, b.Key))
	})
	u := &Unreported{}
	type job struct {
		start time.Time
		nodes []string
	}
	jobs := make(map[string]job, len(due))
	keys := make([]string, 0, len(due))
	pairs := 0
	for _, j := range due {
		nodes, err := slurm.ExpandHostlist(j.Nodes)
		if err != nil {
			snap.Problems = append(snap.Problems, fmt.Sprintf("job %s: nodes: %v", j.Key, err))
			continue
		}
		slices.Sort(nodes)
		nodes = slices.Compact(nodes)
		if len(nodes) == 0 {
			continue
		}
		if pairs+len(nodes) > maxCheckedPairs {
			u.Unchecked++
			continue
		}
		if _, dup := jobs[j.Key]; dup {
			continue
		}
		pairs += len(nodes)
		jobs[j.Key] = job{start: time.Unix(j.Start, 0), nodes: nodes}
		keys = append(keys, j.Key)
	}
	u.Checked = int64(len(keys))
	if len(keys) == 0 {
		return u, nil
	}
	oldest := jobs[keys[0]].start
	slices.Sort(keys)
	size := min(pairs+(maxReportHits-maxCheckedPairs), maxReportHits)
	body, err := json.Marshal(map[string]any{
		"size":    size,
		"_source": []string{"job_id", "node", "updated_at"},
		"query": map[string]any{"bool": map[string]any{"filter": []any{
			map[string]any{"term": map[string]any{"cluster": c.cfg.Cluster}},
			map[string]any{"terms": map[string]any{"job_id": keys}},
			map[string]any{"range": map[string]any{"updated_at": map[string]any{
				"gte": oldest.Add(-reportSkew).UTC().Format(time.RFC3339Nano)}}},
		}}},
	})
	if err != nil {
		return nil, err
	}
	reported := map[string]map[string]bool{}
	raw, err := c.es.Search(ctx, jobmodel.SearchIndices(c.cfg.Elasticsearch.NodeIndex), body)
	switch {
	case errors.Is(err, elasticsearch.ErrNotFound):
		// No node index: no agent has written a node document yet.
		if !c.warnedNoNodeIndex {
			c.warnedNoNodeIndex = true
			c.log.Warn("unreported jobs: the node index does not exist: no agent has written to it",
				"node_index", c.cfg.Elasticsearch.NodeIndex)
		}
	case err != nil:
		return nil, fmt.Errorf("reading the node documents of %d running jobs: %w", len(keys), err)
	default:
		var ans store.SearchAnswer[reportHit]
		if err := json.Unmarshal(raw, &ans); err != nil {
			return nil, fmt.Errorf("decoding the node document search: %w", err)
		}
		if len(ans.Hits.Hits) >= size {
			// More documents than asked for: some reports may be
			// missing from the answer, and counting their jobs would
			// accuse nodes that report.
			return nil, fmt.Errorf("the node document search returned its limit of %d documents: the answer may be incomplete", size)
		}
		for _, h := range ans.Hits.Hits {
			r := h.Source
			j, ok := jobs[r.JobID]
			if !ok {
				continue
			}
			// The store filtered by time already; this holds where it
			// did not, per job. A document whose time cannot be read
			// counts as a report: nothing is accused on a guess.
			var at jobmodel.Time
			if json.Unmarshal(r.UpdatedAt, &at) == nil && at.Before(j.start.Add(-reportSkew)) {
				continue // an older job that held the id
			}
			if reported[r.JobID] == nil {
				reported[r.JobID] = map[string]bool{}
			}
			reported[r.JobID][r.Node] = true
		}
	}
	byNode := map[string]*UnreportedNode{}
	for _, k := range keys {
		missing := false
		for _, n := range jobs[k].nodes {
			if reported[k][n] {
				continue
			}
			missing = true
			un := byNode[n]
			if un == nil {
				un = &UnreportedNode{Node: n}
				byNode[n] = un
			}
			un.Jobs++
			if len(un.Keys) < maxUnreportedKeys {
				un.Keys = append(un.Keys, k) // keys are sorted
			}
		}
		if missing {
			u.Jobs++
		}
	}
	for _, n := range byNode {
		u.Nodes = append(u.Nodes, *n)
	}
	slices.SortFunc(u.Nodes, func(a, b UnreportedNode) int { return cmp.Compare(a.Node, b.Node) })
	return u, nil
}
