package plugin

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/analysis"
	"github.com/jobsight/jobsight/internal/site/advise"
)

// typicalFields are the job document fields the typical-request query
// reads: what analysis.Needs and advise.PastOf read.
var typicalFields = append(append([]string{}, compactFields...), "gpus", "nodes")

// typicalFetch bounds the finished jobs one typical-request query reads,
// the newest of the range (`jobsight advise` reads 500 of one user's).
const typicalFetch = 2000

// queryTypicalRequest answers "my typical request against my typical
// use, by kind of job": the finished jobs of the range the viewer may
// see, newest first, grouped by user and kind (advise.Kinds: the job
// name with its account, partition and nodes, else the request), each
// kind with its median request, median and largest use per resource, and
// the #SBATCH lines `jobsight advise` would print for a new job asking
// what the kind's newest job asked. One request. The site's analysis
// settings are not known to the datasource: the defaults' headroom and
// rounding apply (the command uses the site's).
func (d *Datasource) queryTypicalRequest(qc *queryCtx) (data.Frames, error) {
	q := qc.q
	size := min(typicalFetch, d.settings.MaxJobs)
	sort := []any{map[string]any{"end_time": map[string]any{"order": "desc"}}}
	jobs, total, err := d.fetchJobs(*qc, jobScope{q: q, v: qc.v, from: qc.from, to: qc.to, finished: true}, sort, 0, size, typicalFields)
	if err != nil {
		return nil, err
	}
	cfg, acfg := advise.Default(), analysis.Default()
	byUser := map[string][]advise.Past{}
	var users []string
	for i := range jobs {
		j := &jobs[i]
		if !j.Final {
			continue
		}
		if byUser[j.User] == nil {
			users = append(users, j.User)
		}
		byUser[j.User] = append(byUser[j.User], advise.PastOf(*j, acfg))
	}
	type row struct {
		user string
		k    advise.Kind
	}
	var rows []row
	for _, u := range users {
		for _, k := range advise.Kinds(byUser[u], cfg, min(q.Limit, advise.MaxKinds)) {
			rows = append(rows, row{u, k})
		}
	}
	// The newest kinds first, whoever's.
	slices.SortStableFunc(rows, func(a, b row) int { return b.k.Last.Compare(a.k.Last) })
	rows = rows[:min(len(rows), q.Limit)]

	n := len(rows)
	strs := func(get func(row) string) []string {
		out := make([]string, n)
		for i, r := range rows {
			out[i] = get(r)
		}
		return out
	}
	num := func(name, display, unit string, get func(advise.Kind) (float64, bool)) *data.Field {
		out := make([]*float64, n)
		for i, r := range rows {
			if v, ok := get(r.k); ok {
				out[i] = ptr(v)
			}
		}
		f := data.NewField(name, nil, out)
		f.Config = &data.FieldConfig{DisplayName: display, Unit: unit}
		return f
	}
	fig := func(t func(advise.Kind) advise.Typical, v func(advise.Typical) float64) func(advise.Kind) (float64, bool) {
		return func(k advise.Kind) (float64, bool) {
			x := t(k)
			return v(x), x.Jobs > 0
		}
	}
	asked := func(t advise.Typical) float64 { return t.Requested }
	used := func(t advise.Typical) float64 { return t.Used }
	most := func(t advise.Typical) float64 { return t.Most }
	cpus := func(k advise.Kind) advise.Typical { return k.CPUs }
	mem := func(k advise.Kind) advise.Typical { return k.Memory }
	gpus := func(k advise.Kind) advise.Typical { return k.GPUs }
	tim := func(k advise.Kind) advise.Typical { return k.Time }
	jobsN, nodes := make([]int64, n), make([]int64, n)
	last := make([]time.Time, n)
	for i, r := range rows {
		jobsN[i], nodes[i], last[i] = int64(r.k.Advice.Jobs), r.k.Nodes, r.k.Last
	}
	withName := func(f *data.Field, display string) *data.Field {
		f.Config = &data.FieldConfig{DisplayName: display}
		return f
	}
	frame := data.NewFrame("typical_request",
		withName(data.NewField("user", nil, strs(func(r row) string { return r.user })), "User"),
		withName(data.NewField("kind", nil, strs(func(r row) string { return r.k.Label })), "Kind of job"),
		withName(data.NewField("name", nil, strs(func(r row) string { return r.k.Name })), "Job name"),
		withName(data.NewField("account", nil, strs(func(r row) string { return r.k.Account })), "Account"),
		withName(data.NewField("partition", nil, strs(func(r row) string { return r.k.Partition })), "Partition"),
		withName(data.NewField("nodes", nil, nodes), "Nodes"),
		withName(data.NewField("jobs", nil, jobsN), "Jobs compared"),
		withName(data.NewField("last_end", nil, last), "Last ended"),
		num("cpus_requested", "CPUs asked (median)", "none", fig(cpus, asked)),
		num("cpus_used", "Cores used (median)", "none", fig(cpus, used)),
		num("cpus_used_max", "Cores used (most)", "none", fig(cpus, most)),
		num("memory_requested", "Memory per node asked (median)", "bytes", fig(mem, asked)),
		num("memory_used", "Memory peak (median)", "bytes", fig(mem, used)),
		num("memory_used_max", "Memory peak (most)", "bytes", fig(mem, most)),
		num("gpus_requested", "GPUs asked (median)", "none", fig(gpus, asked)),
		num("gpus_used", "GPUs with work (median)", "none", fig(gpus, used)),
		num("gpus_used_max", "GPUs with work (most)", "none", fig(gpus, most)),
		num("time_limit", "Time limit (median)", "s", fig(tim, asked)),
		num("elapsed", "Run time (median)", "s", fig(tim, used)),
		num("elapsed_max", "Run time (longest)", "s", fig(tim, most)),
		withName(data.NewField("advice", nil, strs(func(r row) string { return strings.Join(r.k.Advice.SBATCH(), "  ") })), "Next time ask for"),
		withName(data.NewField("quiet", nil, strs(func(r row) string { return r.k.Advice.Quiet })), "Why no advice"),
	)
	frame.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable,
		Custom: map[string]any{"finished": total, "read": len(jobs), "kinds": n}}
	if total > int64(len(jobs)) {
		frame.AppendNotices(data.Notice{Severity: data.NoticeSeverityInfo,
			Text: fmt.Sprintf("Based on the newest %d of the %d finished jobs in the range", len(jobs), total)})
	}
	if n == 0 && len(jobs) > 0 {
		frame.AppendNotices(data.Notice{Severity: data.NoticeSeverityInfo,
			Text: fmt.Sprintf("No kind of job has %d comparable finished runs (completed, out of memory or out of time, of at least %s) in the range", cfg.MinJobs, cfg.MinElapsed)})
	}
	return data.Frames{frame}, nil
}
