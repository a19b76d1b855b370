package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/pkg/plugin"
	"github.com/jobsight/jobsight/test/stack"
)

// TestAggregates: the panels that aggregate finished jobs' totals, on a
// seeded index of a real ZincSearch, checked against the same figures
// computed from the documents one by one.
func TestAggregates(t *testing.T) {
	f := newAggFixture(t)
	t.Run("grouped reservation", func(t *testing.T) { testAggregatesMatch(t, f) })
	t.Run("per-job reservation", func(t *testing.T) { testReservationPerJobTopWaste(t, f) })
	t.Run("usage history", func(t *testing.T) { testUsageHistoryMatches(t, f) })
	t.Run("usage history edges", func(t *testing.T) { testUsageHistoryEdges(t, f) })
	t.Run("allocation", func(t *testing.T) { testAllocationMatches(t, f) })
}

// stackWithJobIndex starts ZincSearch and Prometheus (test/stack, no
// Slurm) and creates a job index with the agents' mapping; both stop with
// the test.
func stackWithJobIndex(t *testing.T, ctx context.Context, index string) (*stack.Stack, *elasticsearch.Client) {
	t.Helper()
	stack.Require(t, stack.PrometheusBin)
	st, err := stack.Up(ctx, t.TempDir(), stack.Options{NoSlurm: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Down() })
	es := st.Elasticsearch
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{es.URL}, Username: es.User, Password: es.Password, CACertFile: es.CACertFile})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureIndex(ctx, index, jobmodel.JobMapping()); err != nil {
		t.Fatal(err)
	}
	return st, c
}

// bulkJobs writes job documents to index as the agents do (a bulk
// request of their JSON by document id).
func bulkJobs(t *testing.T, ctx context.Context, c *elasticsearch.Client, index string, jobs ...jobmodel.Job) {
	t.Helper()
	var batch []store.Doc
	for _, j := range jobs {
		body, _ := json.Marshal(j)
		batch = append(batch, store.Doc{Kind: store.KindJobDoc, Index: index, ID: j.DocID, Body: body})
	}
	if fails, err := c.Bulk(ctx, batch); err != nil || len(fails) > 0 {
		t.Fatalf("indexing: %v %v", err, fails)
	}
}

// aggFixture is a seeded job index on a real ZincSearch and a datasource
// on it: finished jobs with totals (some lacking figures), three
// documents of an older agent without totals, and running jobs.
type aggFixture struct {
	ds       *plugin.Datasource
	docs     []jobmodel.Job
	from, to time.Time
	now      time.Time
}

const aggIndex = "jobsight-jobs-agg"

func newAggFixture(t *testing.T) *aggFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	st, c := stackWithJobIndex(t, ctx, aggIndex)

	now := time.Now()
	to := now.Truncate(time.Hour)
	from := to.Add(-10 * 24 * time.Hour)
	rng := rand.New(rand.NewPCG(23, 1))
	pick := func(p float64) bool { return rng.Float64() < p }
	classes := []string{jobmodel.ClassEfficient, jobmodel.ClassAcceptable, jobmodel.ClassInefficient, jobmodel.ClassWasted, jobmodel.ClassShort}
	var docs []jobmodel.Job
	mk := func(i int, start time.Time, d time.Duration, final bool) jobmodel.Job {
		u := i % 6
		j := jobmodel.Job{DocID: fmt.Sprintf("c:%d", 1000+i), SchemaVersion: jobmodel.SchemaVersion, Cluster: "c",
			JobID: fmt.Sprint(1000 + i), SlurmJobID: uint64(1000 + i), User: fmt.Sprintf("u%d", u), Account: fmt.Sprintf("a%d", u%3),
			Partition: fmt.Sprintf("p%d", i%2), State: jobmodel.StateCompleted, NodeCount: 1, Final: final,
			SubmitTime: jobmodel.At(start), StartTime: jobmodel.At(start), UpdatedAt: jobmodel.At(now)}
		cpus, gpus := int64(1+rng.IntN(32)), int64(0)
		if pick(0.4) {
			gpus = int64(1 + rng.IntN(4))
		}
		mem := int64(1+rng.IntN(64)) * jobmodel.GiB
		j.Requested = jobmodel.Request{CPUs: &cpus, GPUs: &gpus, MemoryBytes: &mem}
		el := d.Seconds()
		if !pick(0.1) {
			j.TimeLimitSeconds = jobmodel.Ptr(int64(el) * int64(1+rng.IntN(3)))
		}
		if !final {
			j.State = jobmodel.StateRunning
			return j
		}
		j.EndTime = jobmodel.At(start.Add(d))
		j.ElapsedSeconds = &el
		if !pick(0.08) {
			j.CPU = &jobmodel.CPUUsage{CoreSeconds: jobmodel.Ptr(float64(cpus) * el * (0.05 + 1.15*rng.Float64()))}
		}
		if gpus > 0 {
			j.GPU = &jobmodel.GPUUsage{GPUSeconds: jobmodel.Ptr(float64(gpus) * el)}
			if !pick(0.05) {
				j.GPU.UtilizationAvg = jobmodel.Ptr(rng.Float64())
			}
		}
		if !pick(0.07) {
			j.Memory = &jobmodel.MemoryUsage{AvgBytes: jobmodel.Ptr(int64(float64(mem) * rng.Float64()))}
		}
		j.Analysis = &jobmodel.Analysis{Class: classes[rng.IntN(len(classes))]}
		j.Totals = jobmodel.TotalsOf(&j)
		return j
	}
	// Finished jobs start anywhere and run from minutes to days: a third
	// start and end within one hour, some within one minute.
	for i := 0; i < 400; i++ {
		d := time.Duration(1+rng.IntN(60)) * time.Hour
		if i%3 == 0 {
			d = time.Duration(20+rng.IntN(3000)) * time.Second
		}
		latest := to.Sub(from) - d - time.Hour
		start := from.Add(time.Duration(rng.Int64N(int64(latest+72*time.Hour))) - 72*time.Hour).Truncate(time.Second)
		docs = append(docs, mk(i, start, d, true))
	}
	docs[5].Analysis = nil       // not analysed: no class
	for i := 400; i < 403; i++ { // an older agent's documents: no totals
		j := mk(i, from.Add(time.Duration(i-390)*time.Hour+30*time.Minute), 5*time.Hour, true)
		j.Totals = nil
		docs = append(docs, j)
	}
	for i := 403; i < 409; i++ { // running, no series yet
		docs = append(docs, mk(i, to.Add(-time.Duration(i-400)*time.Hour-30*time.Minute), 0, false))
	}

	es := st.Elasticsearch
	bulkJobs(t, ctx, c, aggIndex, docs...)
	ps := from.Add(-5 * 24 * time.Hour).UTC().Format("2006-01-02")
	ds := newDatasource(t, servers{es: es, prom: st.Prometheus}, aggIndex, map[string]any{
		"timeoutSeconds": 30, "identitySource": "unverifiedLogin", "fullAccessRoles": []string{"Admin"},
		"allocations": []map[string]any{
			{"cluster": "c", "account": "a0", "resource": "cpu", "hours": 100000, "periodDays": 365, "start": ps},
			{"cluster": "c", "resource": "cpu", "hours": 1000000, "periodDays": 365, "start": ps}}})
	f := &aggFixture{ds: ds, docs: docs, from: from, to: to, now: now}
	// ZincSearch makes writes searchable after about a second.
	deadline := time.Now().Add(time.Minute)
	want := f.reference("", func(*jobmodel.Job) string { return "c" })["c"].jobs
	for {
		fr := f.query(t, "admin", `{"queryType":"reservation","groupBy":"cluster"}`)[0]
		jobs, _ := fr.FieldByName("jobs")
		if jobs != nil && jobs.Len() == 1 && jobs.At(0).(int64) == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %d documents in the range never became searchable (last answer: %v)", want, jobs)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return f
}

// query runs one query as login (Admin for "admin", else a Viewer) over
// the fixture's range.
func (f *aggFixture) query(t *testing.T, login, q string) data.Frames {
	t.Helper()
	return f.queryRange(t, login, q, f.from, f.to, 240)
}

// queryRange is query over [from, to) for a panel of points.
func (f *aggFixture) queryRange(t *testing.T, login, q string, from, to time.Time, points int64) data.Frames {
	t.Helper()
	role := "Viewer"
	if login == "admin" {
		role = "Admin"
	}
	var model map[string]any
	if err := json.Unmarshal([]byte(q), &model); err != nil {
		t.Fatal(err)
	}
	dr := askRange(t, f.ds, &backend.User{Login: login, Role: role}, model, from, to, points)
	if dr.Error != nil {
		t.Fatalf("%s: %v", q, dr.Error)
	}
	for _, fr := range dr.Frames {
		m, _ := fr.Meta.Custom.(map[string]any)
		if n := m["elasticsearchRequests"].(int64) + m["prometheusRequests"].(int64); n > 5 {
			t.Errorf("%s: %d store requests, more than 5", q, n)
		}
	}
	return dr.Frames
}

// refRow is a group's figures computed from the documents one by one.
type refRow struct {
	jobs, running                       int64
	vals                                map[string]float64
	has                                 map[string]bool
	missCPU, missGPU, missMem, missNone int64
}

// reference sums the jobs the viewer (user, "" for all) sees in the
// range by group, from each document's own fields: TotalsOf for a
// finished job with totals, nothing for a document without (its figures
// are missing: the aggregation cannot see them), the held amounts so far
// for a running one (its use is missing: it has no series here).
func (f *aggFixture) reference(user string, group func(j *jobmodel.Job) string) map[string]*refRow {
	out := map[string]*refRow{}
	for i := range f.docs {
		j := &f.docs[i]
		if user != "" && j.User != user {
			continue
		}
		if j.StartTime.After(f.to) || j.Final && j.EndTime.Before(f.from) {
			continue
		}
		k := group(j)
		r := out[k]
		if r == nil {
			r = &refRow{vals: map[string]float64{}, has: map[string]bool{}}
			out[k] = r
		}
		r.jobs++
		var tt *jobmodel.Totals
		switch {
		case !j.Final:
			r.running++
			el := f.now.Sub(j.StartTime.Time).Hours()
			a := jobmodel.AmountsOf(j, &el)
			tt = &jobmodel.Totals{ElapsedHours: a.ElapsedH, TimeLimitHours: a.LimitH, CoreHoursReserved: a.CPUResH,
				GPUHoursReserved: a.GPUResH, GPUHoursUsed: a.GPUUsedH, MemoryGiBHoursReserved: a.MemResH}
			tt.GPUHoursUnused = a.GPUUsedH // 0 for a job without GPUs, else unknown
			if a.LimitH != nil {
				tt.WalltimeHoursUnused = jobmodel.Ptr(max(*a.LimitH-el, 0))
			}
		case j.Totals != nil:
			tt = j.Totals
		default:
			tt = &jobmodel.Totals{}
		}
		add := func(name string, v *float64) {
			if v != nil {
				r.vals[name] += *v
				r.has[name] = true
			}
		}
		add("cpu_hours_reserved", tt.CoreHoursReserved)
		add("cpu_hours_used", tt.CoreHoursUsed)
		add("cpu_hours_wasted", tt.CoreHoursUnused)
		add("gpu_hours_reserved", tt.GPUHoursReserved)
		add("gpu_hours_used", tt.GPUHoursUsed)
		add("gpu_hours_wasted", tt.GPUHoursUnused)
		add("memory_gib_hours_reserved", tt.MemoryGiBHoursReserved)
		add("memory_gib_hours_used", tt.MemoryGiBHoursUsed)
		add("memory_gib_hours_wasted", tt.MemoryGiBHoursUnused)
		add("walltime_hours_reserved", tt.TimeLimitHours)
		add("walltime_hours_used", tt.ElapsedHours)
		add("walltime_hours_wasted", tt.WalltimeHoursUnused)
		if tt.CoreHoursUsed == nil {
			r.missCPU++
		}
		if tt.GPUHoursUsed == nil {
			r.missGPU++
		}
		if tt.MemoryGiBHoursUsed == nil {
			r.missMem++
		}
	}
	return out
}

var figureColumns = []string{"cpu_hours_reserved", "cpu_hours_used", "cpu_hours_wasted", "gpu_hours_reserved", "gpu_hours_used",
	"gpu_hours_wasted", "memory_gib_hours_reserved", "memory_gib_hours_used", "memory_gib_hours_wasted",
	"walltime_hours_reserved", "walltime_hours_used", "walltime_hours_wasted"}

// checkGroups compares a grouped reservation frame with the reference.
func checkGroups(t *testing.T, what string, fr *data.Frame, by string, ref map[string]*refRow) {
	t.Helper()
	keys, _ := fr.FieldByName(by)
	if keys == nil {
		t.Fatalf("%s: no %s column", what, by)
	}
	if keys.Len() != len(ref) {
		var got []string
		for i := 0; i < keys.Len(); i++ {
			got = append(got, keys.At(i).(string))
		}
		t.Errorf("%s: groups %v, want %d groups", what, got, len(ref))
	}
	col := func(name string, i int) *float64 {
		f, _ := fr.FieldByName(name)
		if f == nil {
			t.Fatalf("%s: no column %s", what, name)
		}
		v, _ := f.NullableFloatAt(i)
		return v
	}
	count := func(name string, i int) int64 {
		f, _ := fr.FieldByName(name)
		return f.At(i).(int64)
	}
	for i := 0; i < keys.Len(); i++ {
		k := keys.At(i).(string)
		r := ref[k]
		if r == nil {
			t.Errorf("%s: group %q is not in the reference (another user's jobs?)", what, k)
			continue
		}
		if got := count("jobs", i); got != r.jobs {
			t.Errorf("%s %s: %d jobs, want %d", what, k, got, r.jobs)
		}
		if got := count("running", i); got != r.running {
			t.Errorf("%s %s: %d running, want %d", what, k, got, r.running)
		}
		// A running job's figures grow by the second: the plugin's clock
		// is a moment after the reference's.
		tol := 1e-6
		if r.running > 0 {
			tol = 1e-3
		}
		for _, c := range figureColumns {
			got := col(c, i)
			switch {
			case !r.has[c] && got != nil:
				t.Errorf("%s %s: %s = %g, want missing (no job has it)", what, k, c, *got)
			case r.has[c] && got == nil:
				t.Errorf("%s %s: %s missing, want %g", what, k, c, r.vals[c])
			case got != nil && math.Abs(*got-r.vals[c]) > tol*math.Max(1, math.Abs(r.vals[c])):
				t.Errorf("%s %s: %s = %.6f, want %.6f (from the documents one by one)", what, k, c, *got, r.vals[c])
			}
		}
		for _, m := range []struct {
			col  string
			want int64
		}{{"jobs_missing_cpu_used", r.missCPU}, {"jobs_missing_gpu_used", r.missGPU}, {"jobs_missing_memory_used", r.missMem}} {
			if got := count(m.col, i); got != m.want {
				t.Errorf("%s %s: %s = %d, want %d", what, k, m.col, got, m.want)
			}
		}
	}
}

// Every grouped reservation, by every grouping, equals the figures
// computed from the documents one by one; what a job lacks is counted as
// missing; a Viewer's groups hold only their own jobs.
func testAggregatesMatch(t *testing.T, f *aggFixture) {
	groupings := map[string]func(j *jobmodel.Job) string{
		"user": func(j *jobmodel.Job) string { return j.User }, "account": func(j *jobmodel.Job) string { return j.Account },
		"partition": func(j *jobmodel.Job) string { return j.Partition }, "cluster": func(j *jobmodel.Job) string { return j.Cluster },
		"class": func(j *jobmodel.Job) string {
			if !j.Final {
				return "running"
			}
			if j.Analysis == nil {
				return ""
			}
			return j.Analysis.Class
		},
	}
	for by, g := range groupings {
		fr := f.query(t, "admin", `{"queryType":"reservation","groupBy":"`+by+`"}`)[0]
		checkGroups(t, "admin by "+by, fr, by, f.reference("", g))
	}
	// A Viewer: only their own jobs in every aggregate.
	fr := f.query(t, "u1", `{"queryType":"reservation","groupBy":"account"}`)[0]
	checkGroups(t, "u1 by account", fr, "account", f.reference("u1", groupings["account"]))
	fr = f.query(t, "u1", `{"queryType":"reservation","groupBy":"user"}`)[0]
	checkGroups(t, "u1 by user", fr, "user", f.reference("u1", groupings["user"]))
	// The missing counts are said in the frame.
	m, _ := fr.Meta.Custom.(map[string]any)
	if miss, _ := m["missing"].(map[string]int64); miss[jobmodel.FigCoreUsed] == 0 {
		t.Errorf("no jobs lacking CPU use reported: %v", m["missing"])
	}
}

// The per-job reservation lists the finished jobs with most unused GPU-
// and core-hours first, with each job's own figures, and every running
// job; a Viewer's rows are their own jobs.
func testReservationPerJobTopWaste(t *testing.T, f *aggFixture) {
	for _, login := range []string{"admin", "u2"} {
		fr := f.query(t, login, `{"queryType":"reservation","limit":20}`)[0]
		ids, _ := fr.FieldByName("doc_id")
		byID := map[string]*jobmodel.Job{}
		var finished []*jobmodel.Job
		running := 0
		for i := range f.docs {
			j := &f.docs[i]
			if login != "admin" && j.User != login || j.StartTime.After(f.to) || j.Final && j.EndTime.Before(f.from) {
				continue
			}
			byID[j.DocID] = j
			if !j.Final {
				running++
			} else {
				finished = append(finished, j)
			}
		}
		if want := min(20, len(finished)) + running; ids.Len() != want {
			t.Errorf("%s: %d rows, want %d", login, ids.Len(), want)
		}
		// The 20 with most unused GPU-hours (then core-hours) are there.
		sort.SliceStable(finished, func(a, b int) bool {
			ga, gb := unusedOf(finished[a].Totals, true), unusedOf(finished[b].Totals, true)
			if ga != gb {
				return ga > gb
			}
			return unusedOf(finished[a].Totals, false) > unusedOf(finished[b].Totals, false)
		})
		shown := map[string]bool{}
		for i := 0; i < ids.Len(); i++ {
			id := ids.At(i).(string)
			shown[id] = true
			j := byID[id]
			if j == nil {
				t.Errorf("%s: row %s is not a job the viewer may see in the range", login, id)
				continue
			}
			if j.Final && j.Totals != nil && j.Totals.CoreHoursReserved != nil {
				c, _ := fr.FieldByName("cpu_hours_reserved")
				if v, _ := c.NullableFloatAt(i); v == nil || math.Abs(*v-*j.Totals.CoreHoursReserved) > 1e-9 {
					t.Errorf("%s: %s reserved %v, want %g", login, id, v, *j.Totals.CoreHoursReserved)
				}
			}
		}
		for _, j := range finished[:min(5, len(finished))] {
			if !shown[j.DocID] {
				t.Errorf("%s: %s (%.1f unused GPU-hours) is not among the rows", login, j.DocID, unusedOf(j.Totals, true))
			}
		}
	}
}

func unusedOf(t *jobmodel.Totals, gpu bool) float64 {
	if t == nil {
		return -1
	}
	v := t.CoreHoursUnused
	if gpu {
		v = t.GPUHoursUnused
	}
	if v == nil {
		return -1
	}
	return *v
}

// levelRef is the mean amount in use in each hour of [from, to) from the
// documents one by one: finished jobs with totals, and with heldCores the
// cores the running ones hold since their start (their use is not known
// here: no series; what they hold is).
func (f *aggFixture) levelRef(user string, get func(*jobmodel.Totals) *float64, heldCores bool) []float64 {
	n := int(f.to.Sub(f.from).Hours())
	out := make([]float64, n)
	for i := range f.docs {
		j := &f.docs[i]
		if user != "" && j.User != user {
			continue
		}
		var v *float64
		end := f.now
		switch {
		case !j.Final && heldCores:
			el := f.now.Sub(j.StartTime.Time).Hours()
			if a := jobmodel.AmountsOf(j, &el); a.CPUResH != nil {
				v = jobmodel.Ptr(*a.CPUResH / el)
			}
		case j.Final && j.Totals != nil:
			v, end = get(j.Totals), j.EndTime.Time
		}
		if v == nil {
			continue
		}
		for h := 0; h < n; h++ {
			bs := f.from.Add(time.Duration(h) * time.Hour)
			o := minTime(bs.Add(time.Hour), end).Sub(maxTime(bs, j.StartTime.Time))
			if o > 0 {
				out[h] += *v * o.Hours()
			}
		}
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Usage history and hour-of-week from the histograms equal the hourly
// use computed from the documents one by one, in UTC and in the
// dashboard's time zone; a Viewer's history is their jobs' only.
func testUsageHistoryMatches(t *testing.T, f *aggFixture) {
	cores := func(t *jobmodel.Totals) *float64 { return t.CoresUsed }
	held := func(t *jobmodel.Totals) *float64 { return t.CoresReserved }
	for _, login := range []string{"admin", "u3"} {
		user := ""
		if login != "admin" {
			user = login
		}
		frames := f.query(t, login, `{"queryType":"usageHistory","resources":["cpu"]}`)
		for _, fr := range frames {
			kind := fr.Fields[1].Labels["kind"]
			ref := f.levelRef(user, cores, false)
			if kind == "reserved" {
				ref = f.levelRef(user, held, true)
			}
			if fr.Fields[0].Len() != len(ref) {
				t.Fatalf("%s %s: %d buckets, want %d hourly ones", login, kind, fr.Fields[0].Len(), len(ref))
			}
			for h := range ref {
				if at := fr.Fields[0].At(h).(time.Time); !at.Equal(f.from.Add(time.Duration(h) * time.Hour)) {
					t.Fatalf("%s: bucket %d starts %s", login, h, at)
				}
				got, _ := fr.Fields[1].ConcreteAt(h)
				if math.Abs(got.(float64)-ref[h]) > 1e-6*math.Max(1, ref[h]) {
					t.Errorf("%s %s: hour %d (%s) %.6f cores, want %.6f", login, kind, h, f.from.Add(time.Duration(h)*time.Hour), got, ref[h])
				}
			}
		}
	}
	// The jobs left out of "used" are said.
	frames := f.query(t, "admin", `{"queryType":"usageHistory","resources":["cpu"]}`)
	said := false
	for _, n := range frames[0].Meta.Notices {
		said = said || strings.Contains(n.Text, "core hours used")
	}
	if !said {
		t.Errorf("usage history does not say that some jobs lack their CPU use: %v", frames[0].Meta.Notices)
	}
	// Hour of week, UTC and Berlin.
	ref := f.levelRef("", cores, false)
	for _, tz := range []string{"UTC", "Europe/Berlin", "America/New_York"} {
		loc, _ := time.LoadLocation(tz)
		var used, seen [7][24]float64
		for h, v := range ref {
			lt := f.from.Add(time.Duration(h) * time.Hour).In(loc)
			d := (int(lt.Weekday()) + 6) % 7
			used[d][lt.Hour()] += v
			seen[d][lt.Hour()]++
		}
		fr := f.query(t, "admin", `{"queryType":"usageHistory","groupBy":"hourOfWeek","resources":["cpu"],"timezone":"`+tz+`"}`)[0]
		if m, _ := fr.Meta.Custom.(map[string]any); m["timezone"] != tz {
			t.Errorf("hour of week says time zone %v, want %s", m["timezone"], tz)
		}
		for d, name := range []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"} {
			col, _ := fr.FieldByName(name)
			for h := 0; h < 24; h++ {
				v, _ := col.NullableFloatAt(h)
				if seen[d][h] == 0 {
					if v != nil {
						t.Errorf("%s %s %02d:00: %g, want empty (the range has no such hour)", tz, name, h, *v)
					}
					continue
				}
				want := used[d][h] / seen[d][h]
				if v == nil || math.Abs(*v-want) > 1e-6*math.Max(1, want) {
					t.Errorf("%s %s %02d:00: %v cores, want %.6f", tz, name, h, v, want)
				}
			}
		}
	}
	// A time zone that does not exist is refused, naming it.
	resp, _ := f.ds.QueryData(context.Background(), &backend.QueryDataRequest{
		PluginContext: backend.PluginContext{User: &backend.User{Login: "admin", Role: "Admin"}, DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: "agg"}},
		Queries:       []backend.DataQuery{{RefID: "A", JSON: json.RawMessage(`{"queryType":"usageHistory","groupBy":"hourOfWeek","timezone":"Mars/Olympus"}`), TimeRange: backend.TimeRange{From: f.from, To: f.to}}},
	})
	if e := resp.Responses["A"].Error; e == nil || !strings.Contains(e.Error(), "Mars/Olympus") {
		t.Errorf("an unknown time zone: %v", e)
	}
}

// hoursIn is the resource-hours the finished jobs with totals accrue in
// [a, b), from the documents one by one.
func (f *aggFixture) hoursIn(get func(*jobmodel.Totals) *float64, a, b time.Time) float64 {
	h := 0.0
	for i := range f.docs {
		j := &f.docs[i]
		if !j.Final || j.Totals == nil {
			continue
		}
		if v := get(j.Totals); v != nil {
			if o := minTime(b, j.EndTime.Time).Sub(maxTime(a, j.StartTime.Time)); o > 0 {
				h += *v * o.Hours()
			}
		}
	}
	return h
}

// A range that starts and ends inside buckets: every bucket is the mean
// over the whole bucket, the first one with the jobs that ended in it
// before the range's start and the last one with those that started in
// it after the range's end; the bucket holding now is the mean up to now
// (what is still to come is not 0).
func testUsageHistoryEdges(t *testing.T, f *aggFixture) {
	cores := func(t *jobmodel.Totals) *float64 { return t.CoresUsed }
	check := func(what string, fr *data.Frame, end func(bs time.Time) time.Time) int {
		t.Helper()
		nonzero := 0
		for k := 0; k < fr.Fields[0].Len(); k++ {
			bs := fr.Fields[0].At(k).(time.Time)
			be := end(bs)
			want := f.hoursIn(cores, bs, be) / be.Sub(bs).Hours()
			got, _ := fr.Fields[1].ConcreteAt(k)
			if math.Abs(got.(float64)-want) > 1e-4*math.Max(1, want) {
				t.Errorf("%s: bucket %s–%s %.6f cores, want %.6f", what, bs, be, got, want)
			}
			if want > 0 {
				nonzero++
			}
		}
		return nonzero
	}
	// Hourly buckets over 24 hours from just after a job's end: the
	// range's first bucket holds that job's last minutes.
	var from time.Time
	for i := range f.docs {
		j := &f.docs[i]
		if !j.Final || j.Totals == nil || j.Totals.CoresUsed == nil || *j.Totals.CoresUsed == 0 {
			continue
		}
		e := j.EndTime.Time
		if off := e.Sub(e.Truncate(time.Hour)); off > 0 && off < 50*time.Minute && e.After(f.from) && e.Before(f.to.Add(-48*time.Hour)) {
			from = e.Add(time.Minute)
			break
		}
	}
	if from.IsZero() {
		t.Fatal("no finished job ends inside an hour of the range")
	}
	for _, fr := range f.queryRange(t, "admin", `{"queryType":"usageHistory","resources":["cpu"]}`, from, from.Add(24*time.Hour), 24) {
		if fr.Fields[1].Labels["kind"] != "used" {
			continue
		}
		if n := fr.Fields[0].Len(); n != 25 {
			t.Fatalf("hourly from %s: %d buckets, want 25", from, n)
		}
		check("hourly from "+from.Format(time.TimeOnly), fr, func(bs time.Time) time.Time { return bs.Add(time.Hour) })
	}
	// Daily buckets (UTC) up to now: the last one is the mean up to now.
	now := time.Now()
	for _, fr := range f.queryRange(t, "admin", `{"queryType":"usageHistory","resources":["cpu"]}`, f.from, now, 10) {
		if fr.Fields[1].Labels["kind"] != "used" {
			continue
		}
		if n := check("daily to now", fr, func(bs time.Time) time.Time { return minTime(bs.Add(24*time.Hour), time.Now()) }); n == 0 {
			t.Errorf("daily to now: every bucket is empty")
		}
	}
}

// An allocation's cumulative reserved and used CPU-hours since its
// period's start equal the hours the documents accrue one by one: the
// finished jobs' mean amounts over their runs in the period, and the
// running jobs' held cores so far.
func testAllocationMatches(t *testing.T, f *aggFixture) {
	// Hourly buckets to the fixture's whole hour, and daily ones (UTC) to
	// now: the last point inside today's bucket, whose finished hours
	// are all before now.
	testAllocationTo(t, f, f.to, 240)
	testAllocationTo(t, f, time.Now(), 10)
}

func testAllocationTo(t *testing.T, f *aggFixture, to time.Time, points int64) {
	ps := time.Date(f.from.Year(), f.from.Month(), f.from.Day()-5, 0, 0, 0, 0, time.UTC)
	// 240 hours: whole buckets of an hour or a day, one starting at ps.
	frames := f.queryRange(t, "admin", `{"queryType":"allocation","resources":["cpu"]}`, to.Add(-240*time.Hour), to, points)
	found := 0
	for _, fr := range frames {
		labels := fr.Fields[1].Labels
		kind := labels["kind"]
		if kind != "reserved" && kind != "used" {
			continue
		}
		found++
		ref := 0.0
		for i := range f.docs {
			j := &f.docs[i]
			if acc := labels["account"]; acc != "" && j.Account != acc {
				continue
			}
			start, end := maxTime(j.StartTime.Time, ps), to
			var rate *float64
			switch {
			case !j.Final:
				if kind == "reserved" {
					rate = jobmodel.Ptr(float64(*j.Requested.CPUs))
				}
			case j.Totals != nil:
				end = minTime(j.EndTime.Time, to)
				rate = j.Totals.CoresReserved
				if kind == "used" {
					rate = j.Totals.CoresUsed
				}
			}
			if rate != nil && end.After(start) {
				ref += *rate * end.Sub(start).Hours()
			}
		}
		last, _ := fr.Fields[1].ConcreteAt(fr.Fields[1].Len() - 1)
		if at := fr.Fields[0].At(fr.Fields[0].Len() - 1).(time.Time); !at.Equal(to) {
			t.Errorf("%v: the last point is at %s, want the range's end %s", labels, at, to)
		}
		if math.Abs(last.(float64)-ref) > 1e-3*math.Max(1, ref) {
			t.Errorf("%v: %.3f CPU-hours at the range's end %s, want %.3f (from the documents one by one)", labels, last, to, ref)
		}
	}
	if found != 4 {
		t.Errorf("%d reserved/used allocation series, want 4 (a0 and the cluster)", found)
	}
}
