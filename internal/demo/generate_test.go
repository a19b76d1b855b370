package demo

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/analysis"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

var testEnd = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC) // a Monday

func generate(t testing.TB, cfg Config) (*Generator, []jobmodel.Job) {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []jobmodel.Job
	for !g.Done() {
		b := g.Next(777)
		if len(b) == 0 {
			t.Fatal("Next returned nothing before Done")
		}
		jobs = append(jobs, b...)
	}
	return g, jobs
}

func monthCfg(seed uint64) Config {
	return Config{Seed: seed, End: testEnd, Span: 28 * 24 * time.Hour, Jobs: 12000, Running: 40, Clusters: []string{"alpha", "beta"}}
}

func TestDeterministic(t *testing.T) {
	enc := func(seed uint64) []byte {
		g, jobs := generate(t, Config{Seed: seed, End: testEnd, Span: 7 * 24 * time.Hour, Jobs: 1500, Running: 20})
		b, err := json.Marshal(append(jobs, g.Running()...))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := enc(5), enc(5)
	if !bytes.Equal(a, b) {
		t.Fatal("the same seed gave different documents")
	}
	if bytes.Equal(a, enc(6)) {
		t.Fatal("another seed gave the same documents")
	}
}

// checkJob checks a finished generated document as a reader of the job
// index would: it decodes strictly, holds what every agent-written final
// document holds, and its totals and analysis are the ones the agent
// would compute from it.
func checkJob(t *testing.T, j *jobmodel.Job, end time.Time) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: "+format, append([]any{j.DocID}, args...)...)
	}
	raw, err := json.Marshal(j)
	if err != nil {
		fail("%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var back jobmodel.Job
	if err := dec.Decode(&back); err != nil {
		fail("does not decode strictly: %v", err)
	}
	if !reflect.DeepEqual(&back, j) {
		fail("does not survive a JSON round trip")
	}
	id := jobmodel.Identity{Cluster: j.Cluster, JobID: j.SlurmJobID}
	if j.ArrayJobID != nil {
		id.ArrayJobID, id.ArrayTaskID = *j.ArrayJobID, *j.ArrayTaskID
	}
	if err := id.Validate(); err != nil || id.DocID() != j.DocID || id.Key() != j.JobID {
		fail("identity: %v, doc id %q job id %q", err, id.DocID(), id.Key())
	}
	switch {
	case j.Source != jobmodel.SourceGenerated || j.AgentVersion != AgentVersion:
		fail("source %q agent %q: not labelled as generated", j.Source, j.AgentVersion)
	case !j.Final || j.SchemaVersion != jobmodel.SchemaVersion:
		fail("final %v schema %d", j.Final, j.SchemaVersion)
	case j.User == "" || j.Account == "" || j.Partition == "" || j.UID == nil || j.Name == "":
		fail("owner or partition missing")
	case len(j.Nodes) != j.NodeCount || j.NodeCount < 1 || *j.Requested.Nodes != int64(j.NodeCount):
		fail("nodes %v, node_count %d", j.Nodes, j.NodeCount)
	case j.SubmitTime == nil || j.StartTime == nil || j.EndTime == nil || j.UpdatedAt == nil:
		fail("times missing")
	case j.StartTime.Before(j.SubmitTime.Time) || !j.EndTime.After(j.StartTime.Time) || !j.EndTime.Before(end):
		fail("times out of order: submit %s start %s end %s (history end %s)", j.SubmitTime, j.StartTime, j.EndTime, end)
	case math.Abs(j.EndTime.Sub(j.StartTime.Time).Seconds()-*j.ElapsedSeconds) > 0.001:
		fail("elapsed %v is not end - start", *j.ElapsedSeconds)
	case *j.ElapsedSeconds > float64(*j.TimeLimitSeconds):
		fail("ran %v s over its limit %d s", *j.ElapsedSeconds, *j.TimeLimitSeconds)
	case j.State == jobmodel.StateTimeout && *j.ElapsedSeconds != float64(*j.TimeLimitSeconds):
		fail("TIMEOUT before its limit")
	case !slices.Contains([]string{jobmodel.StateCompleted, jobmodel.StateFailed, jobmodel.StateCancelled, jobmodel.StateTimeout, jobmodel.StateOutOfMemory, jobmodel.StateNodeFail}, j.State):
		fail("state %q", j.State)
	case j.Sampling.IntervalSeconds <= 0 || j.Sampling.Count < 1:
		fail("sampling %+v", j.Sampling)
	}
	if want := jobmodel.TotalsOf(j); !reflect.DeepEqual(j.Totals, want) {
		fail("totals %+v, TotalsOf gives %+v", j.Totals, want)
	}
	if j.Analysis == nil || j.Analysis.Version != analysis.Version {
		fail("no analysis of the current version")
	}
	a := analysis.AnalyzeJob(*j, j.EndTime.Time, analysis.Default())
	if !reflect.DeepEqual(&a, j.Analysis) {
		fail("stored analysis is not AnalyzeJob's")
	}
	gpus := *j.Requested.GPUs
	if (gpus > 0) != (j.GPU != nil) || int64(len(j.GPUs)) != gpus {
		fail("%d GPUs requested, summary %v, %d entries", gpus, j.GPU != nil, len(j.GPUs))
	}
	// What is missing is absent and named, never zero.
	has := func(m string) bool { return slices.Contains(j.MissingMetrics, m) }
	if has("memory") != (j.Memory == nil) || has("cpu") != (j.CPU == nil) {
		fail("missing_metrics %v disagrees with the cpu/memory fields", j.MissingMetrics)
	}
	if gpus > 0 && has("gpu_utilization") != (j.GPU.UtilizationAvg == nil) {
		fail("missing_metrics %v disagrees with gpu.utilization_avg", j.MissingMetrics)
	}
	if j.Memory == nil && !slices.Contains(j.Totals.Missing, jobmodel.FigMemoryUsed) {
		fail("memory missing but totals do not say so")
	}
}

func TestDocumentsValidate(t *testing.T) {
	cfg := monthCfg(11)
	g, jobs := generate(t, cfg)
	if len(jobs) != cfg.Jobs {
		t.Fatalf("%d jobs, want exactly %d", len(jobs), cfg.Jobs)
	}
	ids := map[string]bool{}
	last := map[string]uint64{}
	for i := range jobs {
		j := &jobs[i]
		checkJob(t, j, cfg.End)
		if ids[j.DocID] {
			t.Fatalf("doc id %s twice", j.DocID)
		}
		ids[j.DocID] = true
		if j.SlurmJobID <= last[j.Cluster] {
			t.Fatalf("%s: job ids do not grow in submission order", j.DocID)
		}
		last[j.Cluster] = j.SlurmJobID
	}
	run := g.Running()
	if len(run) != cfg.Running {
		t.Fatalf("%d running jobs, want %d", len(run), cfg.Running)
	}
	first := run[0]
	if first.NodeCount != 2 || *first.Requested.GPUs != 8 || first.Partition != "gpu" {
		t.Errorf("the first running job is not the 2-node 8-GPU job: %+v", first.Requested)
	}
	for _, j := range run {
		switch {
		case j.Final || j.State != jobmodel.StateRunning || j.EndTime != nil || j.Totals != nil || j.Analysis != nil:
			t.Fatalf("%s: not a running document", j.DocID)
		case ids[j.DocID]:
			t.Fatalf("running %s has a finished job's id", j.DocID)
		case !j.UpdatedAt.Equal(cfg.End) || j.StartTime.After(cfg.End.Add(-time.Minute)):
			t.Fatalf("%s: updated %s, started %s", j.DocID, j.UpdatedAt, j.StartTime)
		case j.Source != jobmodel.SourceGenerated:
			t.Fatalf("%s: source %q", j.DocID, j.Source)
		}
	}
	// The running jobs do not depend on the finished ones having been
	// generated (a reused benchmark index).
	g2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g2.Running(), run) {
		t.Error("the running jobs differ when the finished ones were not generated")
	}
}

func TestDistributions(t *testing.T) {
	cfg := monthCfg(12)
	g, jobs := generate(t, cfg)
	n := float64(len(jobs))
	count := map[string]int{}
	users, accts := map[string]int{}, map[string]map[string]bool{}
	var missing, arrays, long, short, gpuJobs, multiGPU, timeouts int
	var walltime []float64
	for _, j := range jobs {
		count["class:"+j.Analysis.Class]++
		count["state:"+j.State]++
		count["part:"+j.Partition]++
		count["cluster:"+j.Cluster]++
		users[j.User]++
		if accts[j.User] == nil {
			accts[j.User] = map[string]bool{}
		}
		accts[j.User][j.Account] = true
		// What an A100 cannot give (its activity figures) is missing on
		// every A100 job, as the agent names it: not a figure lost.
		if slices.ContainsFunc(j.MissingMetrics, func(m string) bool { return !slices.Contains(activityMissing, m) }) {
			missing++
		}
		if j.ArrayJobID != nil {
			arrays++
		}
		if *j.ElapsedSeconds > 24*3600 {
			long++
		}
		if *j.ElapsedSeconds < 600 {
			short++
		}
		if *j.Requested.GPUs > 0 {
			gpuJobs++
			if j.NodeCount > 1 {
				multiGPU++
			}
		}
		if j.State == jobmodel.StateTimeout {
			timeouts++
		}
		walltime = append(walltime, *j.ElapsedSeconds/float64(*j.TimeLimitSeconds))
	}
	t.Logf("%v; %d users; missing %.1f%%, arrays %d, >1 day %d, <10 min %d, GPU jobs %d (%d multi-node)", count, len(users), 100*float64(missing)/n, arrays, long, short, gpuJobs, multiGPU)
	for _, c := range []string{jobmodel.ClassEfficient, jobmodel.ClassAcceptable, jobmodel.ClassInefficient, jobmodel.ClassWasted, jobmodel.ClassShort, jobmodel.ClassUnknown} {
		if share := float64(count["class:"+c]) / n; share < 0.005 || share > 0.6 {
			t.Errorf("class %s: %.1f%% of the jobs", c, 100*share)
		}
	}
	if share := float64(missing) / n; share < 0.02 || share > 0.1 {
		t.Errorf("%.1f%% of the jobs lack a figure, want a few percent", 100*share)
	}
	for _, p := range []string{"cpu", "gpu", "gpu-h100", "bigmem", "debug"} {
		if count["part:"+p] < 100 {
			t.Errorf("partition %s: %d jobs", p, count["part:"+p])
		}
	}
	if count["cluster:beta"] == 0 || count["cluster:alpha"] == 0 {
		t.Errorf("clusters: %v", count)
	}
	switch {
	case arrays == 0 || long == 0 || short == 0 || multiGPU == 0 || timeouts == 0:
		t.Errorf("arrays %d, runs over a day %d, under 10 minutes %d, multi-node GPU jobs %d, timeouts %d: want some of each", arrays, long, short, multiGPU, timeouts)
	case count["state:"+jobmodel.StateFailed] == 0 || count["state:"+jobmodel.StateOutOfMemory] == 0:
		t.Errorf("states: %v", count)
	}
	sort.Float64s(walltime)
	if med := walltime[len(walltime)/2]; med > 0.5 {
		t.Errorf("median run/limit %.2f: time limits are not over-requested", med)
	}
	// Users: ~150, skewed activity, stable accounts (at most two each).
	if len(users) < 120 || len(users) > numUsers {
		t.Errorf("%d users", len(users))
	}
	counts := make([]int, 0, len(users))
	for _, c := range users {
		counts = append(counts, c)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(counts)))
	if top := float64(counts[0]) / n; top < 0.05 {
		t.Errorf("the busiest user submitted %.1f%%: activity is not skewed", 100*top)
	}
	if counts[0] < 20*counts[len(counts)/2] && counts[len(counts)/2] > 0 {
		t.Logf("busiest %d, median %d", counts[0], counts[len(counts)/2])
	}
	for u, as := range accts {
		var site *User
		for i := range g.Site().Users {
			if g.Site().Users[i].Name == u {
				site = &g.Site().Users[i]
			}
		}
		for a := range as {
			if site == nil || !slices.Contains(site.Accounts, a) {
				t.Fatalf("user %s ran in account %s, not one of theirs", u, a)
			}
		}
	}
}

// TestTimeOfWeek: more submissions on weekday working hours in the site's
// time zone than at night and at the weekend.
func TestTimeOfWeek(t *testing.T) {
	cfg := monthCfg(13)
	g, jobs := generate(t, cfg)
	loc := g.Config().Location
	if loc.String() != "Europe/Berlin" {
		t.Fatalf("default time zone %s", loc)
	}
	var work, night, weekend int
	for _, j := range jobs {
		lt := j.SubmitTime.In(loc)
		wd, h := lt.Weekday(), lt.Hour()
		switch {
		case wd == time.Saturday || wd == time.Sunday:
			weekend++
		case h >= 9 && h < 17:
			work++
		case h < 6:
			night++
		}
	}
	// Per hour: 4 weeks × 5 days × 8 h of work, × 6 h of night, and 4 × 2 × 24 h of weekend.
	workRate, nightRate, weekendRate := float64(work)/(20*8), float64(night)/(20*6), float64(weekend)/(8*24)
	t.Logf("submissions per hour: working hours %.1f, weekday nights %.1f, weekends %.1f", workRate, nightRate, weekendRate)
	if workRate < 4*nightRate || workRate < 3*weekendRate {
		t.Errorf("no weekly cycle: working hours %.1f/h, nights %.1f/h, weekends %.1f/h", workRate, nightRate, weekendRate)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no end":          {Span: time.Hour, Jobs: 1},
		"three clusters":  {End: testEnd, Span: time.Hour, Jobs: 1, Clusters: []string{"a", "b", "c"}},
		"bad cluster":     {End: testEnd, Span: time.Hour, Jobs: 1, Clusters: []string{"a b"}},
		"same clusters":   {End: testEnd, Span: time.Hour, Jobs: 1, Clusters: []string{"a", "a"}},
		"short span":      {End: testEnd, Span: time.Minute, Jobs: 1},
		"negative counts": {End: testEnd, Span: time.Hour, Jobs: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseSpan(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30d": 30 * 24 * time.Hour, "12h": 12 * time.Hour, "2w": 14 * 24 * time.Hour, " 7d ": 7 * 24 * time.Hour,
		"1.5d": 36 * time.Hour, "400d": MaxSpan, "36h30m": 36*time.Hour + 30*time.Minute,
	} {
		if got, err := ParseSpan(in); err != nil || got != want {
			t.Errorf("ParseSpan(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "0d", "-3d", "-1h", "401d", "58w", "30", "d", "30x", "abc", "10m", "1e9d"} {
		if got, err := ParseSpan(in); err == nil {
			t.Errorf("ParseSpan(%q) = %s, want an error", in, got)
		} else if !bytes.Contains([]byte(err.Error()), []byte(`"`+in+`"`)) {
			t.Errorf("ParseSpan(%q): the error does not name the value: %v", in, err)
		}
	}
}

func TestHistoryJobs(t *testing.T) {
	if n, err := HistoryJobs(30*24*time.Hour, 200); err != nil || n != 6000 {
		t.Errorf("30d at 200/day: %d, %v", n, err)
	}
	for _, perDay := range []float64{0, -5, math.NaN(), 1e6} {
		if _, err := HistoryJobs(30*24*time.Hour, perDay); err == nil {
			t.Errorf("%v jobs a day: no error", perDay)
		}
	}
	if _, err := HistoryJobs(MaxSpan, 500); err == nil {
		t.Error("400 days at 500 a day: no error (200,000 jobs)")
	}
}

// TestSeries: a finished GPU job's series follow its document: per GPU
// the utilisation averages the stored one, counters never fall, and a
// GPU whose utilisation was unreadable has no utilisation series. An
// H100 job's GPUs have the activity series too: SM activity under the
// utilisation at every point, averaging the document's, and PCIe traffic
// at its rate; an A100 job's have none. Running H100 jobs have them too.
func TestSeries(t *testing.T) {
	_, jobs := generate(t, monthCfg(14))
	var checked, unreadable, withActivity int
	for i := range jobs {
		j := &jobs[i]
		if j.GPU == nil || *j.ElapsedSeconds < 3600 {
			continue
		}
		gens := SeriesOf(j, testEnd)
		var util []Gen
		act := map[string][]Gen{}
		for _, g := range gens {
			if g.Name == "jobsight_job_gpu_utilization_ratio" {
				util = append(util, g)
			}
			for _, s := range activitySeries {
				if g.Name == s.name {
					act[g.Name] = append(act[g.Name], g)
				}
			}
			if g.Name == "jobsight_job_cpu_usage_seconds_total" {
				prev := -1.0
				for t0 := j.StartTime.Time; !t0.After(j.EndTime.Time); t0 = t0.Add(StepFor(j.EndTime.Sub(j.StartTime.Time))) {
					if v := g.Value(t0); v < prev {
						t.Fatalf("%s: CPU counter falls at %s", j.DocID, t0)
					} else {
						prev = v
					}
				}
			}
		}
		if j.GPU.UtilizationAvg == nil || j.GPU.Activity == nil {
			if len(act) != 0 {
				t.Fatalf("%s (%s): no activity figures but %d activity series", j.DocID, j.Partition, len(act))
			}
		} else {
			for _, s := range activitySeries {
				if int64(len(act[s.name])) != *j.Requested.GPUs {
					t.Fatalf("%s: %d %s series for %d GPUs", j.DocID, len(act[s.name]), s.name, *j.Requested.GPUs)
				}
			}
		}
		if j.GPU.UtilizationAvg == nil {
			unreadable++
			if len(util) != 0 {
				t.Fatalf("%s: utilisation unreadable but %d series", j.DocID, len(util))
			}
			continue
		}
		if int64(len(util)) != *j.Requested.GPUs {
			t.Fatalf("%s: %d utilisation series for %d GPUs", j.DocID, len(util), *j.Requested.GPUs)
		}
		var sum float64
		var k int
		for _, g := range util {
			for t0 := j.StartTime.Time; t0.Before(j.EndTime.Time); t0 = t0.Add(time.Duration(*j.ElapsedSeconds/100) * time.Second) {
				sum += g.Value(t0)
				k++
			}
		}
		if mean := sum / float64(k); math.Abs(mean-*j.GPU.UtilizationAvg) > 0.08 {
			t.Errorf("%s: series mean %.3f, document %.3f", j.DocID, mean, *j.GPU.UtilizationAvg)
		}
		checked++
		if j.GPU.Activity == nil {
			continue
		}
		withActivity++
		var smSum, rxSum float64
		for gi, sm := range act["jobsight_job_gpu_sm_activity_ratio"] {
			if !reflect.DeepEqual(sm.Labels, util[gi].Labels) {
				t.Fatalf("%s: SM activity series %v beside utilisation %v", j.DocID, sm.Labels, util[gi].Labels)
			}
			rx := act["jobsight_job_gpu_pcie_receive_bytes_per_second"][gi]
			for t0 := j.StartTime.Time; t0.Before(j.EndTime.Time); t0 = t0.Add(time.Duration(*j.ElapsedSeconds/100) * time.Second) {
				v, u := sm.Value(t0), util[gi].Value(t0)
				if v < 0 || v > u+1e-9 {
					t.Fatalf("%s GPU %d: SM activity %.3f at %s, utilisation %.3f", j.DocID, gi, v, t0, u)
				}
				smSum += v
				rxSum += rx.Value(t0)
			}
		}
		if mean := smSum / float64(k); math.Abs(mean-*j.GPU.Activity.SM.Avg) > 0.08 {
			t.Errorf("%s: SM activity series mean %.3f, document %.3f", j.DocID, mean, *j.GPU.Activity.SM.Avg)
		}
		if mean, doc := rxSum/float64(k), *j.GPU.Activity.PCIeRxBytesPerSecond.Avg; math.Abs(mean-doc) > 0.15*doc+1e3 {
			t.Errorf("%s: PCIe receive series mean %.0f B/s, document %.0f B/s", j.DocID, mean, doc)
		}
	}
	if checked < 50 || unreadable == 0 || withActivity < 20 {
		t.Errorf("checked %d GPU jobs, %d unreadable, %d with activity figures", checked, unreadable, withActivity)
	}
	// Running jobs: the activity series on H100s, none on A100s (more
	// running jobs than the month's, so that some run on H100s).
	rg, err := New(Config{Seed: 14, End: testEnd, Running: 200, Clusters: []string{"alpha", "beta"}})
	if err != nil {
		t.Fatal(err)
	}
	var runningH100 int
	for _, j := range rg.Running() {
		if *j.Requested.GPUs == 0 {
			continue
		}
		n := 0
		for _, g := range SeriesOf(&j, testEnd) {
			if g.Name == "jobsight_job_gpu_sm_activity_ratio" {
				n++
				if v := g.Value(testEnd.Add(-time.Minute)); v < 0 || v > 1 {
					t.Errorf("running %s: SM activity %v", j.DocID, v)
				}
			}
		}
		want := int64(0)
		if j.Partition == "gpu-h100" {
			want = *j.Requested.GPUs
			runningH100++
		}
		if int64(n) != want {
			t.Errorf("running %s (%s): %d SM activity series for %d GPUs", j.DocID, j.Partition, n, *j.Requested.GPUs)
		}
	}
	t.Logf("%d GPU jobs checked, %d with activity figures; %d running H100 jobs", checked, withActivity, runningH100)
	if runningH100 == 0 {
		t.Error("no running H100 job")
	}
}

// TestGPUActivity: an H100 job's GPUs have every activity figure,
// consistent with their utilisation (SM activity at most it, zeros on a
// held-idle GPU), its summary is SummarizeActivity of theirs and its SM
// activity timeline runs on the utilisation timeline's steps, under it;
// an A100 job's GPUs (and a job's whose GPUs were unreadable) have none
// and name them missing, as the agent does. The kinds of work show in
// the stored analysis (checkJob holds it to AnalyzeJob's): some jobs are
// launch-bound, input-bound, FP32 without tensor cores and memory-bound.
func TestGPUActivity(t *testing.T) {
	_, jobs := generate(t, monthCfg(15))
	causes := map[string]int{}
	var h100, a100 int
	activityCause := []string{analysis.CauseGPULaunchBound, analysis.CauseGPUInputPipelineBound,
		analysis.CauseGPUTensorUnused, analysis.CauseGPUMemoryBandwidthBound}
	containsAll := func(list []string) bool {
		for _, m := range activityMissing {
			if !slices.Contains(list, m) {
				return false
			}
		}
		return true
	}
	for i := range jobs {
		j := &jobs[i]
		if j.GPU == nil {
			continue
		}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("%s (%s): "+format, append([]any{j.DocID, j.Partition}, args...)...)
		}
		if j.Partition != "gpu-h100" || j.GPU.UtilizationAvg == nil {
			if j.Partition != "gpu-h100" {
				a100++
			}
			if j.GPU.Activity != nil || j.GPU.SMActivityTimeline != nil {
				fail("activity summary or SM timeline without GPM")
			}
			if !containsAll(j.MissingMetrics) {
				fail("missing_metrics %v do not name the activity figures", j.MissingMetrics)
			}
			for _, d := range j.GPUs {
				if d.Activity != nil || !containsAll(d.MissingMetrics) {
					fail("GPU %d: activity %v, missing_metrics %v", d.Index, d.Activity != nil, d.MissingMetrics)
				}
			}
			for _, c := range j.Analysis.Causes {
				if slices.Contains(activityCause, c.ID) {
					fail("cause %s without activity figures", c.ID)
				}
			}
			continue
		}
		h100++
		if slices.ContainsFunc(j.MissingMetrics, func(m string) bool { return slices.Contains(activityMissing, m) }) {
			fail("missing_metrics %v name an activity figure", j.MissingMetrics)
		}
		acts := make([]*jobmodel.GPUActivity, 0, len(j.GPUs))
		for _, d := range j.GPUs {
			a := d.Activity
			if a == nil || len(d.MissingMetrics) > 0 {
				fail("GPU %d: activity %v, missing_metrics %v", d.Index, a != nil, d.MissingMetrics)
			}
			for k, st := range jobmodel.ActivityStats(a) {
				s := *st
				switch {
				case s == nil || s.Avg == nil || s.P95 == nil || s.Peak == nil:
					fail("GPU %d: figure %d incomplete", d.Index, k)
				case *s.Avg < 0 || *s.Avg > *s.P95 || *s.P95 > *s.Peak || (k < ratioFigures && *s.Peak > 1):
					fail("GPU %d: figure %d avg %v p95 %v peak %v", d.Index, k, *s.Avg, *s.P95, *s.Peak)
				case d.HeldIdle && *s.Peak != 0:
					fail("GPU %d held idle: figure %d peak %v", d.Index, k, *s.Peak)
				}
			}
			if *a.SM.Avg > *d.UtilizationAvg+0.001 || *a.Tensor.Avg > *a.SM.Avg+0.001 {
				fail("GPU %d: utilisation %v, SM activity %v, tensor %v", d.Index, *d.UtilizationAvg, *a.SM.Avg, *a.Tensor.Avg)
			}
			acts = append(acts, a)
		}
		if want := jobmodel.SummarizeActivity(acts); !reflect.DeepEqual(want, j.GPU.Activity) {
			fail("activity summary is not SummarizeActivity of the GPUs'")
		}
		ut, st := j.GPU.UtilizationTimeline, j.GPU.SMActivityTimeline
		if len(st) != len(ut) {
			fail("SM activity timeline of %d steps, utilisation %d", len(st), len(ut))
		}
		var sum float64
		for k := range st {
			if st[k] == nil || *st[k] > *ut[k]+0.001 {
				fail("SM activity timeline step %d: %v, utilisation %v", k, st[k], *ut[k])
			}
			sum += *st[k]
		}
		if len(st) >= 60 && math.Abs(sum/float64(len(st))-*j.GPU.Activity.SM.Avg) > 0.03 {
			fail("SM activity timeline mean %.3f, summary %.3f", sum/float64(len(st)), *j.GPU.Activity.SM.Avg)
		}
		for _, c := range j.Analysis.Causes {
			causes[c.ID]++
		}
	}
	t.Logf("%d H100 jobs, %d A100 jobs; causes of the H100 jobs %v", h100, a100, causes)
	if h100 < 100 || a100 < 100 {
		t.Errorf("%d H100 jobs, %d A100 jobs", h100, a100)
	}
	for _, c := range activityCause {
		if causes[c] == 0 {
			t.Errorf("no generated H100 job has cause %s", c)
		}
	}
}

// BenchmarkGenerate is the cost of one finished document, analysis and
// JSON encoding included (what seeding a million pays on our side).
func BenchmarkGenerate(b *testing.B) {
	g, err := New(Config{Seed: 1, End: testEnd, Span: 365 * 24 * time.Hour, Jobs: b.N, Compact: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for !g.Done() {
		for _, j := range g.Next(1000) {
			if _, err := json.Marshal(&j); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestPressure: most generated jobs have pressure stall figures as the
// agents assemble them (ratios 0–1, stall seconds within the watched
// time) and OOM kills; the others lack them and say so; some stall enough
// for the analysis' stall causes; and the stall series never fall and
// rise at the document's share.
func TestPressure(t *testing.T) {
	_, jobs := generate(t, monthCfg(21))
	var with, without, series int
	causes := map[string]int{}
	for i := range jobs {
		j := &jobs[i]
		if j.Pressure == nil {
			without++
			for _, m := range []string{"cpu_pressure", "memory_pressure", "io_pressure", "oom_kills"} {
				if !slices.Contains(j.MissingMetrics, m) {
					t.Fatalf("%s: no pressure figures, %s not named missing: %v", j.DocID, m, j.MissingMetrics)
				}
			}
			continue
		}
		with++
		p := j.Pressure
		for k, f := range p.Families() {
			if *f.Ratio == nil || **f.Ratio < 0 || **f.Ratio > 1 || **f.Seconds > *p.WatchedSeconds || **f.PeakRatio > 1 {
				t.Fatalf("%s: %s ratio %v, seconds %v of %v watched, peak %v", j.DocID, jobmodel.PressureFamilies[k],
					*f.Ratio, *f.Seconds, *p.WatchedSeconds, *f.PeakRatio)
			}
		}
		if m := j.Memory; m != nil && (m.OOMKills == nil || (j.State == jobmodel.StateOutOfMemory && *m.OOMKills < 1)) {
			t.Fatalf("%s (%s): oom_kills %v; want a count, at least 1 for a job killed for memory", j.DocID, j.State, m.OOMKills)
		}
		for _, c := range j.Analysis.Causes {
			causes[c.ID]++
		}
		if series > 20 || *j.ElapsedSeconds < 3600 {
			continue
		}
		series++
		for _, g := range SeriesOf(j, testEnd) {
			if g.Name != "jobsight_job_io_pressure_stalled_seconds_total" {
				continue
			}
			prev, step := -1.0, StepFor(j.EndTime.Sub(j.StartTime.Time))
			for t0 := j.StartTime.Time; !t0.After(j.EndTime.Time); t0 = t0.Add(step) {
				v := g.Value(t0)
				if v < prev {
					t.Fatalf("%s: I/O stall counter falls at %s", j.DocID, t0)
				}
				prev = v
			}
			if rate := prev / *j.ElapsedSeconds; math.Abs(rate-*p.IOSomeRatio) > 0.01 {
				t.Errorf("%s: I/O stall series rises at %.3f, document %.3f", j.DocID, rate, *p.IOSomeRatio)
			}
		}
	}
	t.Logf("%d jobs with pressure figures, %d without; causes %v", with, without, causes)
	if without == 0 || with < 10*without {
		t.Errorf("%d jobs with pressure figures, %d without: want most with, some without", with, without)
	}
	for _, c := range []string{analysis.CauseIOStall, analysis.CauseMemoryStall, analysis.CauseCPUStall, analysis.CauseOOMKilledChild} {
		if causes[c] == 0 {
			t.Errorf("no generated job has cause %s", c)
		}
	}
}
