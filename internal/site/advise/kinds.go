package advise

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jobsight/jobsight/internal/analysis"
	"github.com/jobsight/jobsight/internal/textfmt"
)

// Kind is one kind of a user's finished jobs, as a dashboard shows the
// advice: what the newest job of the kind asked for, what the comparable
// jobs typically and at most used, and the advice a new job asking the
// same would get from `jobsight advise` (the same selection of comparable
// jobs, the same figures).
type Kind struct {
	// Label is the job name, or for unnamed jobs the request ("16 CPUs,
	// 64 GiB, 1 GPU"); Name is the job name ("" for unnamed jobs).
	Label, Name        string
	Account, Partition string
	Nodes              int64
	// Last is when the newest job of the kind ended.
	Last time.Time
	// Request is the newest job's request, the one the advice is for.
	Request Request
	// CPUs, Memory (per node, bytes), GPUs and Time (seconds) are each
	// figure over the comparable jobs; a figure no job measured is zero
	// with Jobs 0.
	CPUs, Memory, GPUs, Time Typical
	Advice                   Advice
}

// Typical is one figure over a kind's comparable jobs: the median
// request, the median and the largest use, and how many jobs gave both.
type Typical struct {
	Jobs                  int
	Requested, Used, Most float64
}

// MaxKinds bounds the kinds Kinds returns.
const MaxKinds = 200

// Kinds groups one user's finished jobs (any order) into kinds, newest
// kind first, at most limit (1 to MaxKinds). A kind is the job name with
// its account, partition and number of nodes; unnamed jobs (names are
// stored only where the agents run with store_job_name) are kinds by
// their request, compared with unnamed jobs of a similar request. Each
// kind is advised as `jobsight advise` would advise a new job asking what
// its newest job asked (a named one on its name's runs alone); kinds with
// fewer than MinJobs comparable jobs are left out.
func Kinds(history []Past, cfg Config, limit int) []Kind {
	limit = min(max(limit, 1), MaxKinds)
	newest := slices.Clone(history)
	slices.SortStableFunc(newest, func(a, b Past) int { return b.End.Compare(a.End) })
	// Unnamed kinds are compared with unnamed jobs only (names missing
	// from some documents: the agents' store_job_name was changed).
	var unnamed []Past
	for _, p := range history {
		if p.Name == "" {
			unnamed = append(unnamed, p)
		}
	}
	seen := map[string]bool{}
	var out []Kind
	for _, p := range newest {
		if len(out) == limit {
			break
		}
		if !counts(p, cfg) {
			continue
		}
		req := p.request()
		key := kindKey(req, p.Nodes)
		if seen[key] {
			continue
		}
		seen[key] = true
		pool := history
		if p.Name == "" {
			pool = unnamed
		}
		a, jobs := advise(req, pool, cfg)
		// A name with too few runs of its own is no kind: the command
		// would compare it with similar requests of any name.
		if len(jobs) < cfg.MinJobs || (p.Name != "" && a.Basis != "name") {
			continue
		}
		k := Kind{Label: p.Name, Name: p.Name, Account: p.Account, Partition: p.Partition, Nodes: p.Nodes,
			Last: p.End, Request: req, Advice: a}
		if p.Name == "" {
			k.Label = requestLabel(req)
		}
		k.CPUs = typical(jobs, func(n analysis.Need) (*int64, *float64) { return n.CPUsRequested, n.CPUsUsed })
		k.Memory = typical(jobs, func(n analysis.Need) (*int64, *float64) {
			return n.MemoryRequestedPerNodeBytes, n.MemoryPeakPerNodeBytes
		})
		k.GPUs = typical(jobs, func(n analysis.Need) (*int64, *float64) {
			if n.GPUsRequested == nil {
				return nil, nil
			}
			used := 0.0
			if n.GPUs != nil {
				used = float64(*n.GPUs)
			}
			return n.GPUsRequested, &used
		})
		k.Time = typical(jobs, func(n analysis.Need) (*int64, *float64) { return n.TimeLimitRequestedSeconds, n.ElapsedSeconds })
		out = append(out, k)
	}
	return out
}

// request is the request a past job made, as sbatch would hold it again.
func (p Past) request() Request {
	n := p.Need
	r := Request{Nodes: p.Nodes, Partition: p.Partition, Account: p.Account, Name: p.Name,
		MemPerNodeBytes: p.MemPerNode, GPUs: deref(n.GPUsRequested),
		TimeLimitSeconds: deref(n.TimeLimitRequestedSeconds)}
	cpus := max(1, deref(n.CPUsRequested))
	r.CPUsPerTask, r.Tasks = cpus, 1
	if t := p.Tasks; t > 1 && cpus%t == 0 {
		r.CPUsPerTask, r.Tasks = cpus/t, t
	}
	return r
}

// kindKey is what makes two requests one kind: the name, else the
// request's figures; with the account, partition and nodes either way.
func kindKey(r Request, nodes int64) string {
	if r.Name != "" {
		return fmt.Sprintf("n\x00%s\x00%s\x00%s\x00%d", r.Name, r.Account, r.Partition, nodes)
	}
	return fmt.Sprintf("r\x00%s\x00%s\x00%d\x00%d\x00%d\x00%d", r.Account, r.Partition, nodes, r.CPUs(), r.MemPerNode(), r.GPUs)
}

// requestLabel names an unnamed kind by its request: "16 CPUs, 64 GiB,
// 1 GPU, 2 nodes".
func requestLabel(r Request) string {
	parts := []string{textfmt.Plural(r.CPUs(), "CPU")}
	if m := r.MemPerNode(); m > 0 {
		parts = append(parts, analysis.Size(float64(m))+" per node")
	}
	if r.GPUs > 0 {
		parts = append(parts, textfmt.Plural(r.GPUs, "GPU"))
	}
	if r.Nodes > 1 {
		parts = append(parts, textfmt.Plural(r.Nodes, "node"))
	}
	return strings.Join(parts, ", ")
}

// typical is one figure over jobs: the median request, the median and
// the largest use, over the jobs that give both.
func typical(jobs []Past, of func(analysis.Need) (*int64, *float64)) Typical {
	var reqs, used []float64
	for _, p := range jobs {
		if r, u := of(p.Need); r != nil && u != nil {
			reqs, used = append(reqs, float64(*r)), append(used, *u)
		}
	}
	if len(reqs) == 0 {
		return Typical{}
	}
	return Typical{Jobs: len(reqs), Requested: median(reqs), Used: median(used), Most: slices.Max(used)}
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + m) / 2
	}
	return m
}
