package advise

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/analysis"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

const gib = int64(1) << 30

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// finished is a final job document as an agent writes one: name, request
// (CPUs, memory per node, time limit), and use (95th percentile cores,
// memory peak on its node, run time).
func finished(i int, name string, cpus int64, memReq int64, limit time.Duration, p95 float64, peak int64, ran time.Duration) jobmodel.Job {
	end := t0.Add(time.Duration(i) * time.Hour)
	start := end.Add(-ran)
	lim := int64(limit.Seconds())
	el := ran.Seconds()
	uid := uint32(1001)
	return jobmodel.Job{DocID: fmt.Sprintf("c:%d", 100+i), JobID: fmt.Sprint(100 + i), Name: name, User: "alice", UID: &uid,
		Account: "physics", Partition: "cpu", State: jobmodel.StateCompleted, Final: true, NodeCount: 1,
		StartTime: jobmodel.At(start), EndTime: jobmodel.At(end), ElapsedSeconds: &el, TimeLimitSeconds: &lim,
		Requested: jobmodel.Request{CPUs: &cpus, MemoryBytes: &memReq, MemoryPerNodeBytes: &memReq, Nodes: jobmodel.Ptr(int64(1)), Tasks: jobmodel.Ptr(int64(1))},
		Usage: jobmodel.Usage{
			CPU:    &jobmodel.CPUUsage{P95Cores: &p95, CoreSeconds: jobmodel.Ptr(p95 * el)},
			Memory: &jobmodel.MemoryUsage{PeakBytes: &peak, MaxNodePeakBytes: &peak},
		}}
}

func pasts(jobs ...jobmodel.Job) []Past {
	out := make([]Past, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, PastOf(j, analysis.Default()))
	}
	return out
}

// overAskers: n jobs named "train" that asked for 16 CPUs, 64G and 8 h,
// and used ~3 cores, ~5.5 GiB and ~2 h.
func overAskers(n int) []jobmodel.Job {
	var jobs []jobmodel.Job
	for i := range n {
		jobs = append(jobs, finished(i, "train", 16, 64*gib, 8*time.Hour, 2.6+0.1*float64(i%3), 5*gib+int64(i%4)*gib/8, 2*time.Hour+time.Duration(i)*time.Minute))
	}
	return jobs
}

var trainReq = Request{CPUsPerTask: 16, Tasks: 1, MemPerNodeBytes: 64 * gib, TimeLimitSeconds: 8 * 3600,
	Partition: "cpu", Account: "physics", Script: "/home/alice/train"}

func TestOverAskingHistoryGetsTheRequestThatServedEveryJob(t *testing.T) {
	a := Advise(trainReq, pasts(overAskers(12)...), Default())
	if a.Jobs != 12 || a.Basis != "name" || a.Name != "train" {
		t.Fatalf("based on %d jobs by %q (%q), want 12 by name train: %+v", a.Jobs, a.Basis, a.Name, a)
	}
	got := strings.Join(a.SBATCH(), "\n")
	// Peak 5.375 GiB × 1.2 headroom = 6.45 GiB → 8G (2^k or 1.5 × 2^k);
	// p95 2.8 cores × headroom, rounded up; 2 h 11 min × headroom,
	// rounded up to the time step.
	for _, want := range []string{"#SBATCH --mem=8G", "#SBATCH --cpus-per-task=", "#SBATCH --time="} {
		if !strings.Contains(got, want) {
			t.Errorf("advice %q lacks %q", got, want)
		}
	}
	text := Text(a)
	if !strings.Contains(text, `your last 12 jobs named "train"`) || !strings.Contains(text, "of the 64.0 GiB per node you ask for") {
		t.Errorf("text:\n%s", text)
	}
	if n := strings.Count(text, "\n"); n != 2+len(a.Changes) {
		t.Errorf("text has %d lines, want 2 and one per change:\n%s", n, text)
	}
}

func TestQuietWhenHistoryIsThinVariedOrTheRequestFits(t *testing.T) {
	cfg := Default()
	if a := Advise(trainReq, pasts(overAskers(2)...), cfg); len(a.Changes) != 0 || !strings.Contains(a.Quiet, "2 comparable") {
		t.Errorf("2 jobs: %+v", a)
	}
	// A request that already fits what the jobs used.
	fit := trainReq
	fit.CPUsPerTask, fit.MemPerNodeBytes, fit.TimeLimitSeconds = 3, 8*gib, 3*3600
	if a := Advise(fit, pasts(overAskers(12)...), cfg); len(a.Changes) != 0 || Text(a) != "" || !strings.HasPrefix(a.Quiet, "the request fits") {
		t.Errorf("fitting request: %+v", a)
	}
	// One job of the twelve peaked at 60 GiB: memory is too varied to
	// advise on, the rest still is.
	jobs := overAskers(12)
	big := int64(60 * gib)
	jobs[5].Memory.PeakBytes, jobs[5].Memory.MaxNodePeakBytes = &big, &big
	a := Advise(trainReq, pasts(jobs...), cfg)
	for _, c := range a.Changes {
		if c.Option == "--mem" {
			t.Errorf("memory advised although one job peaked at 60 GiB: %+v", c)
		}
	}
	if len(a.Changes) == 0 {
		t.Errorf("no advice at all: %+v", a)
	}
	// A job that ran out of memory: no advice to ask for less.
	jobs = overAskers(12)
	jobs[0].State = jobmodel.StateOutOfMemory
	for _, c := range Advise(trainReq, pasts(jobs...), cfg).Changes {
		if c.Option == "--mem" {
			t.Errorf("memory advised although a comparable job ran out of it: %+v", c)
		}
	}
	// Jobs that ran for seconds (failed at once) say nothing.
	var short []jobmodel.Job
	for i := range 12 {
		short = append(short, finished(i, "train", 16, 64*gib, 8*time.Hour, 0.1, 10<<20, 5*time.Second))
	}
	if a := Advise(trainReq, pasts(short...), cfg); len(a.Changes) != 0 {
		t.Errorf("advice from 5-second runs: %+v", a)
	}
}

func TestComparableJobsAreTheSameAccountPartitionAndKind(t *testing.T) {
	jobs := overAskers(12)
	for i := range jobs {
		jobs[i].Account = "chemistry"
	}
	if a := Advise(trainReq, pasts(jobs...), Default()); a.Jobs != 0 || len(a.Changes) != 0 {
		t.Errorf("another account's jobs compared: %+v", a)
	}
	// Without a name match, a similar request: an unnamed job of 16
	// CPUs and 64G compares with them, one of 128 CPUs does not.
	other := trainReq
	other.Script, other.Name = "/home/alice/other", ""
	if a := Advise(other, pasts(overAskers(12)...), Default()); a.Basis != "request" || a.Jobs != 12 || len(a.Changes) == 0 {
		t.Errorf("similar request: %+v", a)
	}
	other.CPUsPerTask = 128
	if a := Advise(other, pasts(overAskers(12)...), Default()); a.Jobs != 0 {
		t.Errorf("128 CPUs compared with 16: %+v", a)
	}
	// The newest MaxJobs only.
	cfg := Default()
	cfg.MaxJobs = 5
	if a := Advise(trainReq, pasts(overAskers(12)...), cfg); a.Jobs != 5 {
		t.Errorf("max_jobs 5: based on %d", a.Jobs)
	}
}

func TestAJobNameCannotWriteToTheTerminal(t *testing.T) {
	name := "x\x1b]0;pwned\x07\nSBATCH --mem=1T"
	jobs := overAskers(6)
	for i := range jobs {
		jobs[i].Name = name
	}
	req := trainReq
	req.Name = name
	text := Text(Advise(req, pasts(jobs...), Default()))
	if strings.ContainsAny(text, "\x1b\x07") || strings.Contains(text, "\nSBATCH") {
		t.Errorf("the name reached the terminal raw:\n%q", text)
	}
}

func TestRequestFigures(t *testing.T) {
	r := Request{CPUsPerTask: 4, Tasks: 2, Nodes: 2, MemPerCPUBytes: gib}
	if r.CPUs() != 8 || r.MemPerNode() != 4*gib {
		t.Errorf("CPUs %d, memory per node %d", r.CPUs(), r.MemPerNode())
	}
	if got := (Request{Script: "/a/b/run.sh"}).JobName(); got != "run.sh" {
		t.Errorf("job name %q", got)
	}
	if got := (Request{Partition: "a, b,a,"}).Partitions(); strings.Join(got, "|") != "a|b" {
		t.Errorf("partitions %q", got)
	}
}

// Under --mem-per-cpu, fewer CPUs mean less memory: CPUs are advised down
// only as far as the memory still serves every job, and memory advice
// replaces --mem-per-cpu with --mem, saying so.
func TestMemPerCPURequests(t *testing.T) {
	// 16 CPUs × 4G = 64G; the jobs peaked at ~45 GiB on ~3 cores.
	var jobs []jobmodel.Job
	for i := range 8 {
		jobs = append(jobs, finished(i, "sim", 16, 64*gib, 8*time.Hour, 2.8, 45*gib, 2*time.Hour))
	}
	req := Request{CPUsPerTask: 16, Tasks: 1, MemPerCPUBytes: 4 * gib, Partition: "cpu", Account: "physics", Name: "sim"}
	a := Advise(req, pasts(jobs...), Default())
	for _, c := range a.Changes {
		if c.Option == "--cpus-per-task" {
			t.Errorf("CPUs advised down to %s under --mem-per-cpu=4G although the jobs needed ~54 GiB: %+v", c.To, a)
		}
	}
	// The jobs peaked at 5 GiB: memory is advised as --mem, in place of
	// --mem-per-cpu, and then CPUs may go down too.
	for i := range jobs {
		p := int64(5 * gib)
		jobs[i].Memory.PeakBytes, jobs[i].Memory.MaxNodePeakBytes = &p, &p
	}
	a = Advise(req, pasts(jobs...), Default())
	text := Text(a)
	if !strings.Contains(text, "#SBATCH --mem=8G   (in place of #SBATCH --mem-per-cpu=4G)") || !strings.Contains(text, "--cpus-per-task=") {
		t.Errorf("advice:\n%s", text)
	}
}

func TestNamedJobsOnOtherNodeCountsDoNotCompare(t *testing.T) {
	jobs := overAskers(6)
	for i := range jobs {
		jobs[i].Requested.Nodes = jobmodel.Ptr(int64(4))
		jobs[i].NodeCount = 4
	}
	if a := Advise(trainReq, pasts(jobs...), Default()); a.Basis == "name" {
		t.Errorf("4-node runs of the name compared with a 1-node request: %+v", a)
	}
}

// A PI's advice from the account's jobs says whose jobs they were.
func TestTextNamesTheAccountForAPI(t *testing.T) {
	a := Advise(trainReq, pasts(overAskers(12)...), Default())
	a.Account = "phys\x1b[2J"
	text := Text(a)
	if !strings.Contains(text, `the last 12 jobs named "train" in account "phys\x1b[2J"`) || strings.Contains(text, "your") {
		t.Errorf("text:\n%s", text)
	}
}

// A similar request is judged on what the jobs asked for, whether or not
// their use was measured: three jobs that asked for 256G, their memory
// never sampled, are not like a request for 16G (and the store's search,
// feedback.Like, leaves them out the same way).
func TestSimilarRequestsCompareTheRequestNotTheMeasuredUse(t *testing.T) {
	var jobs []jobmodel.Job
	for i := range 3 {
		j := finished(i, "sim", 16, 256*gib, 4*time.Hour, 3, 10*gib, 2*time.Hour)
		j.Usage.Memory = nil
		jobs = append(jobs, j)
	}
	req := Request{CPUsPerTask: 16, Tasks: 1, MemPerNodeBytes: 16 * gib, Partition: "cpu", Account: "physics", Name: "other"}
	if a := Advise(req, pasts(jobs...), Default()); a.Jobs != 0 {
		t.Errorf("a 16G request compared with %d jobs that asked for 256G (memory not sampled): %+v", a.Jobs, a)
	}
	req.MemPerNodeBytes = 200 * gib
	if a := Advise(req, pasts(jobs...), Default()); a.Jobs != 3 || a.Basis != "request" {
		t.Errorf("a 200G request: based on %d jobs by %q, want the 3 that asked for 256G", a.Jobs, a.Basis)
	}
	if p := pasts(jobs[0])[0]; p.MemPerNode != 256*gib || p.Need.MemoryRequestedPerNodeBytes != nil {
		t.Errorf("PastOf: MemPerNode %d, Need's request %v; want 256 GiB from the request, none from the use", p.MemPerNode, p.Need.MemoryRequestedPerNodeBytes)
	}
}
