package advise

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// TestKindsShowTheCommandsAdvice: a history of two named kinds (over-asking
// "train", fitting "eval"), unnamed jobs of one request, a kind too thin
// to say anything, and jobs that say nothing (failed, seconds long). Each
// kind's advice must be the command's for a new job asking what the
// kind's newest job asked, and its figures those of the same jobs.
func TestKindsShowTheCommandsAdvice(t *testing.T) {
	jobs := overAskers(12)
	for i := range 5 { // fits: 4 CPUs, 8G, 1 h, used 3.5 cores, 6 GiB, 50 min
		jobs = append(jobs, finished(20+i, "eval", 4, 8*gib, time.Hour, 3.5, 6*gib, 50*time.Minute))
	}
	for i := range 4 { // unnamed, 32 CPUs, 128G, 4 h, used 8 cores, 10 GiB, 1 h
		jobs = append(jobs, finished(30+i, "", 32, 128*gib, 4*time.Hour, 8, 10*gib, time.Hour))
	}
	jobs = append(jobs, finished(40, "rare", 8, 16*gib, time.Hour, 1, gib, 30*time.Minute),
		finished(41, "rare", 8, 16*gib, time.Hour, 1, gib, 30*time.Minute))
	failed := finished(50, "train", 64, 512*gib, 48*time.Hour, 60, 500*gib, 10*time.Hour)
	failed.State = jobmodel.StateFailed
	short := finished(51, "train", 64, 512*gib, 48*time.Hour, 60, 500*gib, 10*time.Second)
	jobs = append(jobs, failed, short)
	history := pasts(jobs...)

	kinds := Kinds(history, Default(), 10)
	labels := []string{}
	for _, k := range kinds {
		labels = append(labels, k.Label)
	}
	if got := strings.Join(labels, " | "); got != "32 CPUs, 128.0 GiB per node | eval | train" {
		t.Fatalf("kinds %q, want the unnamed request, eval and train, newest first (rare has too few runs of its name; the failed and seconds-long train jobs do not count)", got)
	}
	unnamed, eval, train := kinds[0], kinds[1], kinds[2]

	// train: the command's advice for a job asking what the newest
	// counted train job asked.
	want := Advise(trainReq, history, Default())
	if got, w := strings.Join(train.Advice.SBATCH(), " "), strings.Join(want.SBATCH(), " "); got != w || w == "" {
		t.Errorf("train advice %q, the command's %q", got, w)
	}
	if train.Advice.Jobs != 12 || train.Name != "train" || train.Request.CPUs() != 16 || train.Request.MemPerNodeBytes != 64*gib {
		t.Errorf("train: %+v", train)
	}
	if c := train.CPUs; c.Jobs != 12 || c.Requested != 16 || c.Used < 2.6 || c.Used > 2.8 || math.Abs(c.Most-2.8) > 1e-9 {
		t.Errorf("train CPUs %+v, want 16 asked, median 2.6–2.8 and at most 2.8 used", c)
	}
	if m := train.Memory; m.Requested != float64(64*gib) || m.Most != float64(5*gib+3*gib/8) {
		t.Errorf("train memory %+v", m)
	}
	if tm := train.Time; tm.Requested != 8*3600 || tm.Most != (2*time.Hour+11*time.Minute).Seconds() {
		t.Errorf("train time %+v", tm)
	}
	if train.GPUs.Jobs != 0 {
		t.Errorf("train GPUs %+v, want none (no job asked for any)", train.GPUs)
	}

	// eval fits: no change, said why.
	if len(eval.Advice.Changes) != 0 || eval.Advice.Quiet == "" || eval.CPUs.Requested != 4 {
		t.Errorf("eval: %+v", eval)
	}
	// Unnamed: by its request, the command's "request" basis.
	if unnamed.Name != "" || unnamed.Advice.Basis != "request" || unnamed.Advice.Jobs != 4 || len(unnamed.Advice.Changes) == 0 {
		t.Errorf("unnamed: %+v", unnamed)
	}
	if got := Kinds(history, Default(), 1); len(got) != 1 || got[0].Label != unnamed.Label {
		t.Errorf("limit 1: %d kinds", len(got))
	}
	if got := Kinds(nil, Default(), 10); len(got) != 0 {
		t.Errorf("no history: %d kinds", len(got))
	}
}

// A multi-task job's request comes back as tasks × CPUs per task, so that
// its advice names --cpus-per-task or --ntasks as the job asked.
func TestKindRequestKeepsTheTaskShape(t *testing.T) {
	var jobs []jobmodel.Job
	for i := range 4 {
		j := finished(i, "mpi", 32, 64*gib, 2*time.Hour, 4, 4*gib, time.Hour)
		j.Requested.Tasks = jobmodel.Ptr(int64(32))
		jobs = append(jobs, j)
	}
	k := Kinds(pasts(jobs...), Default(), 5)
	if len(k) != 1 || k[0].Request.Tasks != 32 || k[0].Request.CPUsPerTask != 1 {
		t.Fatalf("kinds %+v", k)
	}
	if s := strings.Join(k[0].Advice.SBATCH(), " "); !strings.Contains(s, "--ntasks=") {
		t.Errorf("advice %q, want --ntasks (the job asked for tasks)", s)
	}
}

// FuzzKinds: documents as any writer may have stored them (numbers out of
// range, NaN-like zeros, missing fields, odd names) give kinds without a
// panic, each based on at least MinJobs runs, with finite figures.
func FuzzKinds(f *testing.F) {
	seed, _ := json.Marshal(overAskers(4))
	f.Add(seed)
	f.Add([]byte(`[{"doc_id":"a","state":"COMPLETED","final":true,"elapsed_seconds":1e308,"requested":{"cpus":-5,"memory_per_node_bytes":9223372036854775807,"tasks":0}}]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var jobs []jobmodel.Job
		if json.Unmarshal(raw, &jobs) != nil || len(jobs) > 200 {
			return
		}
		// Copies, so that the same runs make a kind.
		jobs = append(append(jobs, jobs...), jobs...)
		for _, k := range Kinds(pasts(jobs...), Default(), MaxKinds) {
			if k.Advice.Jobs < Default().MinJobs {
				t.Fatalf("kind %q on %d jobs", k.Label, k.Advice.Jobs)
			}
			for _, v := range []Typical{k.CPUs, k.Memory, k.GPUs, k.Time} {
				for _, x := range []float64{v.Requested, v.Used, v.Most} {
					if math.IsNaN(x) || math.IsInf(x, 0) {
						t.Fatalf("kind %q: figure %v", k.Label, v)
					}
				}
			}
		}
	})
}
