package plugin

// Finished jobs in grouped panels: Elasticsearch aggregations over the
// totals stored in each final job document (jobmodel.Totals), so that a
// panel over a year of a site's jobs costs about what it costs over a day.
// Running jobs (and jobs whose agents went silent) still come from their
// documents and series (scopeJobs with unfinished), as they have no totals
// yet. A figure a job lacks is counted as missing, never as 0: each group
// says how many of its jobs lack each figure.

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/pkg/models"
)

// sums are the summed figures of a group of jobs (or of one job). A nil
// figure is one no job of the group has.
type sums struct {
	key                           string
	jobs, running                 int64
	cpuRes, cpuUsed, cpuUnused    *float64
	gpuRes, gpuUsed, gpuUnused    *float64
	memRes, memUsed, memUnused    *float64
	wallRes, wallUsed, wallUnused *float64
	// missing counts, per figure (jobmodel.TotalsFigures), the jobs that
	// lack it.
	missing map[string]int64
	// One job's identity (per-job rows).
	cluster, jobID, docID, user, state string
}

func (s *sums) miss(fig string, n int64) {
	if n <= 0 {
		return
	}
	if s.missing == nil {
		s.missing = map[string]int64{}
	}
	s.missing[fig] += n
}

func addTo(dst **float64, v *float64) {
	if v == nil {
		return
	}
	if *dst == nil {
		*dst = ptr(0.0)
	}
	**dst += *v
}

// addFigures adds one job's figures (a running job's, from its document
// and series).
func (s *sums) addFigures(f figures) {
	s.jobs++
	if f.running {
		s.running++
	}
	t := &jobmodel.Totals{ElapsedHours: f.elapsedH, TimeLimitHours: f.limitH,
		CoreHoursReserved: f.cpuResH, CoreHoursUsed: f.cpuUsedH,
		GPUHoursReserved: f.gpuResH, GPUHoursUsed: f.gpuUsedH,
		MemoryGiBHoursReserved: f.memResH, MemoryGiBHoursUsed: f.memUsedH}
	t.CoreHoursUnused = jobmodel.Unused(f.cpuResH, f.cpuUsedH)
	t.GPUHoursUnused = jobmodel.Unused(f.gpuResH, f.gpuUsedH)
	t.MemoryGiBHoursUnused = jobmodel.Unused(f.memResH, f.memUsedH)
	t.WalltimeHoursUnused = jobmodel.Unused(f.limitH, f.elapsedH)
	s.addTotals(t)
}

// addTotals adds the figures of one job's totals (jobs counted by the
// caller); a nil figure is counted as missing.
func (s *sums) addTotals(t *jobmodel.Totals) {
	for _, tf := range totalsFields {
		v := tf.get(t)
		if v == nil {
			if tf.fig != "" {
				s.miss(tf.fig, 1)
			}
			continue
		}
		addTo(tf.slot(s), v)
	}
}

// merge adds another group's sums.
func (s *sums) merge(o *sums) {
	s.jobs += o.jobs
	s.running += o.running
	for _, tf := range totalsFields {
		addTo(tf.slot(s), *tf.slot(o))
	}
	for k, n := range o.missing {
		s.miss(k, n)
	}
}

// totalsField is one summed figure: its field under "totals", the figure
// whose absence makes it missing (none for the derived unused amounts,
// whose absence follows from theirs), and where it goes in sums.
type totalsField struct {
	name string
	fig  string
	get  func(*jobmodel.Totals) *float64
	slot func(*sums) **float64
}

var totalsFields = []totalsField{
	{"core_hours_reserved", jobmodel.FigCoreReserved, func(t *jobmodel.Totals) *float64 { return t.CoreHoursReserved }, func(s *sums) **float64 { return &s.cpuRes }},
	{"core_hours_used", jobmodel.FigCoreUsed, func(t *jobmodel.Totals) *float64 { return t.CoreHoursUsed }, func(s *sums) **float64 { return &s.cpuUsed }},
	{"core_hours_unused", "", func(t *jobmodel.Totals) *float64 { return t.CoreHoursUnused }, func(s *sums) **float64 { return &s.cpuUnused }},
	{"gpu_hours_reserved", jobmodel.FigGPUReserved, func(t *jobmodel.Totals) *float64 { return t.GPUHoursReserved }, func(s *sums) **float64 { return &s.gpuRes }},
	{"gpu_hours_used", jobmodel.FigGPUUsed, func(t *jobmodel.Totals) *float64 { return t.GPUHoursUsed }, func(s *sums) **float64 { return &s.gpuUsed }},
	{"gpu_hours_unused", "", func(t *jobmodel.Totals) *float64 { return t.GPUHoursUnused }, func(s *sums) **float64 { return &s.gpuUnused }},
	{"memory_gib_hours_reserved", jobmodel.FigMemoryReserved, func(t *jobmodel.Totals) *float64 { return t.MemoryGiBHoursReserved }, func(s *sums) **float64 { return &s.memRes }},
	{"memory_gib_hours_used", jobmodel.FigMemoryUsed, func(t *jobmodel.Totals) *float64 { return t.MemoryGiBHoursUsed }, func(s *sums) **float64 { return &s.memUsed }},
	{"memory_gib_hours_unused", "", func(t *jobmodel.Totals) *float64 { return t.MemoryGiBHoursUnused }, func(s *sums) **float64 { return &s.memUnused }},
	{"time_limit_hours", jobmodel.FigTimeLimit, func(t *jobmodel.Totals) *float64 { return t.TimeLimitHours }, func(s *sums) **float64 { return &s.wallRes }},
	{"elapsed_hours", jobmodel.FigElapsed, func(t *jobmodel.Totals) *float64 { return t.ElapsedHours }, func(s *sums) **float64 { return &s.wallUsed }},
	{"walltime_hours_unused", "", func(t *jobmodel.Totals) *float64 { return t.WalltimeHoursUnused }, func(s *sums) **float64 { return &s.wallUnused }},
}

// derivedFrom names the figures an unused amount is computed from.
var derivedFrom = map[string][2]string{
	"core_hours_unused":       {jobmodel.FigCoreReserved, jobmodel.FigCoreUsed},
	"gpu_hours_unused":        {jobmodel.FigGPUReserved, jobmodel.FigGPUUsed},
	"memory_gib_hours_unused": {jobmodel.FigMemoryReserved, jobmodel.FigMemoryUsed},
	"walltime_hours_unused":   {jobmodel.FigTimeLimit, jobmodel.FigElapsed},
}

// Aggregation names of the totals sums and of the two counts that tell
// how many jobs lack each figure.
const (
	aggMissing  = "missing" // terms on totals.missing_set
	aggVersions = "with"    // terms on totals.version: jobs that have totals
)

// totalsAggs are the sub-aggregations that sum a group's totals.
func totalsAggs() map[string]any {
	aggs := map[string]any{
		aggMissing:  map[string]any{"terms": map[string]any{"field": "totals.missing_set", "size": 256}},
		aggVersions: map[string]any{"terms": map[string]any{"field": "totals.version", "size": 20}},
	}
	for _, tf := range totalsFields {
		aggs[tf.name] = map[string]any{"sum": map[string]any{"field": "totals." + tf.name}}
	}
	return aggs
}

// valueAgg is a metric aggregation's answer.
type valueAgg struct {
	Value *float64 `json:"value"`
}

// totalsBucket is one group's answer to totalsAggs.
type totalsBucket struct {
	Key         any         `json:"key"`
	KeyAsString *string     `json:"key_as_string"`
	DocCount    int64       `json:"doc_count"`
	Missing     termsCounts `json:"missing"`
	With        termsCounts `json:"with"`
	values      map[string]valueAgg
}

// termsCounts is a terms aggregation's answer: each key's count.
type termsCounts struct {
	Buckets []termCount `json:"buckets"`
}

// termCount is one key of a terms aggregation and its count.
type termCount struct {
	Key      any   `json:"key"`
	DocCount int64 `json:"doc_count"`
}

func (b *totalsBucket) UnmarshalJSON(raw []byte) error {
	type plain totalsBucket
	if err := json.Unmarshal(raw, (*plain)(b)); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return err
	}
	b.values = map[string]valueAgg{}
	for _, tf := range totalsFields {
		var v valueAgg
		if r, ok := all[tf.name]; ok {
			if err := json.Unmarshal(r, &v); err != nil {
				return fmt.Errorf("aggregation %s: %w", tf.name, err)
			}
		}
		b.values[tf.name] = v
	}
	return nil
}

// keyString is a bucket key as text.
func keyString(k any) string {
	switch v := k.(type) {
	case string:
		return v
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return fmt.Sprint(v)
	}
	return fmt.Sprint(k)
}

// groupKeyOf is a terms bucket's key as text: key_as_string where the
// server gives one (the groups are keyword fields: ZincSearch answers the
// documents without the field as key 0 with key_as_string "").
func groupKeyOf(key any, asString *string) string {
	if asString != nil {
		return *asString
	}
	return keyString(key)
}

// sumsOf turns a group's aggregation answer into sums: a figure is nil
// when no job of the group has it (Elasticsearch sums nothing to 0), and
// the jobs lacking it are counted. Jobs without totals (documents written
// before totals existed) lack every figure.
func sumsOf(b *totalsBucket) *sums {
	s := &sums{key: groupKeyOf(b.Key, b.KeyAsString), jobs: b.DocCount}
	with := int64(0)
	for _, v := range b.With.Buckets {
		// Versions start at 1. (ZincSearch also answers a bucket for the
		// documents without the field, keyed 0 or NaN.)
		if ver, err := strconv.ParseFloat(keyString(v.Key), 64); err == nil && ver >= 1 {
			with += v.DocCount
		}
	}
	without := max(b.DocCount-with, 0)
	// Each combination of missing figures (a key of figures,
	// comma-separated), as its figures, with its jobs.
	type combo struct {
		figs []string
		jobs int64
	}
	combos := make([]combo, 0, len(b.Missing.Buckets))
	for _, m := range b.Missing.Buckets {
		combos = append(combos, combo{strings.Split(keyString(m.Key), ","), m.DocCount})
	}
	// lacking counts the jobs lacking any of figs: for a figure derived
	// from two, those without either cannot give it.
	lacking := func(figs ...string) int64 {
		n := int64(0)
		for _, c := range combos {
			if slices.ContainsFunc(figs, func(f string) bool { return slices.Contains(c.figs, f) }) {
				n += c.jobs
			}
		}
		return n
	}
	for _, f := range jobmodel.TotalsFigures {
		s.miss(f, lacking(f)+without)
	}
	for _, tf := range totalsFields {
		v := b.values[tf.name].Value
		if v == nil {
			continue
		}
		var short int64
		if tf.fig != "" {
			short = lacking(tf.fig)
		} else {
			d := derivedFrom[tf.name]
			short = lacking(d[0], d[1])
		}
		if b.DocCount-without-short <= 0 {
			continue
		}
		*tf.slot(s) = ptr(*v)
	}
	return s
}

// gridScope is the scope of the finished jobs of a level grid: those
// overlapping its buckets, which reach beyond the range (each bucket's
// level is its mean over the whole bucket).
func gridScope(qc *queryCtx, q *models.Query, g grid) jobScope {
	return finishedScope(qc, q, g.first(), g.last())
}

// finishedScope is the scope of the finished jobs of a query's range.
func finishedScope(qc *queryCtx, q *models.Query, from, to time.Time) jobScope {
	sc := jobScope{q: q, v: qc.v, from: from, to: to, finished: true}
	if len(qc.counted) <= maxExcluded {
		sc.exclude = qc.counted
	}
	return sc
}

// unfinishedJobs reads the jobs of the range whose documents are not
// final (running, or silent: settleSilent ends those), with their
// figures from their documents and series.
// Their documents are left out of the query's finished aggregations
// (qc.counted).
func (d *Datasource) unfinishedJobs(qc *queryCtx, q *models.Query, from, to time.Time) ([]jobmodel.Job, []figures, []data.Notice, error) {
	jobs, figs, notices, err := d.scopeJobs(qc, jobScope{q: q, v: qc.v, from: from, to: to, unfinished: true})
	for i := range jobs {
		qc.counted = append(qc.counted, jobs[i].DocID)
	}
	return jobs, figs, notices, err
}

// maxExcluded bounds the document ids a finished aggregation leaves out
// by id (a terms clause of that many); past it, none are (a job that
// ends between the two reads may then count twice, for one refresh).
const maxExcluded = 10000

// groupField is the job-index field a group is keyed by.
func groupField(by string) string {
	switch by {
	case models.GroupClass:
		return "analysis.class"
	case models.GroupNone:
		return "doc_id"
	}
	return by
}

// maxGroups bounds the groups one aggregation returns (users of a site):
// each brings up to 10 more buckets (missing combinations, versions),
// and Elasticsearch refuses an answer of more than 65,536.
const maxGroups = 5000

// finishedGroups sums the finished jobs of a scope by group (by "" gives
// one group, the whole scope) in one aggregation request. The second
// value is the whole scope's sums.
func (d *Datasource) finishedGroups(qc *queryCtx, sc jobScope, by string) (map[string]*sums, *sums, error) {
	query, err := d.esQuery(sc)
	if err != nil {
		return nil, nil, err
	}
	aggs := totalsAggs()
	if by != models.GroupNone {
		aggs["g"] = map[string]any{"terms": map[string]any{"field": groupField(by), "size": maxGroups}, "aggs": totalsAggs()}
	}
	body := map[string]any{"size": 0, "track_total_hits": true, "query": query, "aggs": aggs}
	ans, err := d.search(qc.ctx, qc.st, d.settings.ElasticsearchJobIndex, body)
	if err != nil {
		return nil, nil, err
	}
	// The top level: the whole scope.
	topRaw, err := json.Marshal(ans.Aggregations)
	if err != nil {
		return nil, nil, err
	}
	var top totalsBucket
	if err := json.Unmarshal(topRaw, &top); err != nil {
		return nil, nil, fmt.Errorf("decoding the totals aggregation: %w", err)
	}
	top.DocCount = ans.Hits.Total.Value
	all := sumsOf(&top)
	groups := map[string]*sums{}
	if raw, ok := ans.Aggregations["g"]; ok {
		var g struct {
			Buckets []totalsBucket `json:"buckets"`
		}
		if err := json.Unmarshal(raw, &g); err != nil {
			return nil, nil, fmt.Errorf("decoding the grouped totals: %w", err)
		}
		for i := range g.Buckets {
			s := sumsOf(&g.Buckets[i])
			groups[s.key] = s
		}
		// Jobs without the group's field (no class yet, say), or in
		// groups past maxGroups: the whole scope less the groups.
		rest := subtract(all, groups)
		if rest.jobs > 0 {
			rest.key = ""
			if len(g.Buckets) >= maxGroups {
				rest.key = "other"
			}
			// A group may have that key itself (an empty account, an
			// account named "other"): the rest is added to it, not put
			// in its place.
			if same := groups[rest.key]; same != nil {
				same.merge(rest)
			} else {
				groups[rest.key] = rest
			}
		}
	}
	return groups, all, nil
}

// subtract is all less the groups: the jobs none of them holds.
func subtract(all *sums, groups map[string]*sums) *sums {
	rest := &sums{jobs: all.jobs, running: all.running}
	for _, g := range groups {
		rest.jobs -= g.jobs
		rest.running -= g.running
	}
	if rest.jobs <= 0 {
		return &sums{}
	}
	for _, tf := range totalsFields {
		v := *tf.slot(all)
		if v == nil {
			continue
		}
		left := *v
		for _, g := range groups {
			if gv := *tf.slot(g); gv != nil {
				left -= *gv
			}
		}
		// Sums of the groups can differ from the whole's in the last
		// bits: a remainder that small is nothing.
		if math.Abs(left) > 1e-9*math.Max(1, math.Abs(*v)) {
			*tf.slot(rest) = ptr(left)
		}
	}
	for k, n := range all.missing {
		for _, g := range groups {
			n -= g.missing[k]
		}
		rest.miss(k, n)
	}
	return rest
}

// missingNotice says how many jobs lack each figure a panel shows.
func missingNotice(all *sums, figs ...string) []data.Notice {
	var parts []string
	for _, f := range figs {
		if n := all.missing[f]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", strings.ReplaceAll(f, "_", " "), n))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return []data.Notice{{Severity: data.NoticeSeverityInfo,
		Text: fmt.Sprintf("Of %d jobs, some lack a figure and are counted as missing, not as 0 (%s)", all.jobs, strings.Join(parts, "; "))}}
}

// missingMeta is the missing counts for a frame's metadata.
func missingMeta(all *sums) map[string]int64 {
	out := map[string]int64{}
	for _, f := range jobmodel.TotalsFigures {
		out[f] = all.missing[f]
	}
	return out
}

// sortedKeys returns a map's keys ordered by less.
func sortedKeys(m map[string]*sums, less func(a, b *sums) bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.SliceStable(keys, func(i, j int) bool {
		a, b := m[keys[i]], m[keys[j]]
		if less(a, b) != less(b, a) {
			return less(a, b)
		}
		return keys[i] < keys[j]
	})
	return keys
}
