package jobagent

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// busySlurm is slurmctld too busy to answer (a fake: squeue's call that
// the agent's timeout kills looks the same to the watch): every lookup
// waits until answer is closed, then Slurm names the job as array task
// 11_1 (Slurm's own id 12), which only its answer can tell.
type busySlurm struct {
	*fakeSlurm
	answer chan struct{}
}

func (b *busySlurm) Lookup(ctx context.Context, cluster string, jobID uint64, uid uint32) (jobmodel.Job, error) {
	select {
	case <-b.answer:
	case <-ctx.Done():
		return jobmodel.Job{}, ctx.Err()
	}
	j, err := b.fakeSlurm.Lookup(ctx, cluster, jobID, uid)
	if err != nil {
		return j, err
	}
	id := jobmodel.Identity{Cluster: cluster, JobID: jobID, ArrayJobID: 11, ArrayTaskID: 1}
	j.DocID, j.JobID = id.DocID(), id.Key()
	j.ArrayJobID, j.ArrayTaskID = jobmodel.Ptr[uint64](11), jobmodel.Ptr[uint64](1)
	return j, nil
}

// watchBusySlurm runs job 12 for run, Slurm answering answerAfter after
// its start; it returns the agent's outputs and the start time.
func watchBusySlurm(t *testing.T, run, answerAfter time.Duration) (*memOutputs, time.Time) {
	t.Helper()
	slurm := &busySlurm{fakeSlurm: &fakeSlurm{state: jobmodel.StateRunning}, answer: make(chan struct{})}
	out := &memOutputs{}
	a := testAgent(t, slurm.fakeSlurm, out, busySources)
	a.Slurm, a.LookupWait = slurm, 300*time.Millisecond
	started := time.Now()
	stop, done := startWatch(a, Request{Op: "start", JobID: 12, UID: 1000})
	defer stop()
	answered := time.AfterFunc(answerAfter, func() { close(slurm.answer) })
	defer answered.Stop()
	time.Sleep(min(run, answerAfter) - 500*time.Millisecond)
	out.mu.Lock()
	if len(out.series)+len(out.nodes)+len(out.jobs) > 0 {
		t.Errorf("before Slurm answered, %d series, %d node and %d job documents went out under an id Slurm had not given",
			len(out.series), len(out.nodes), len(out.jobs))
	}
	out.mu.Unlock()
	time.Sleep(run - min(run, answerAfter) + 500*time.Millisecond)
	slurm.set(jobmodel.StateCompleted)
	stop()
	waitDone(t, done, 30*time.Second, "the watch did not end after its job's stop")
	return out, started
}

// A job's samples do not wait for Slurm: with slurmctld silent for 4 s,
// the job is sampled from its first second, and once Slurm names it (an
// array task, 11_1) its series and documents go out under that name, the
// series with the points taken before the answer.
func TestBusySlurmDoesNotDelaySampling(t *testing.T) {
	t.Parallel()
	out, started := watchBusySlurm(t, 7*time.Second, 4*time.Second)
	out.mu.Lock()
	defer out.mu.Unlock()
	if len(out.jobs) == 0 {
		t.Fatal("no job document")
	}
	final := out.jobs[len(out.jobs)-1]
	if !final.Final || final.DocID != "c:11_1" {
		t.Fatalf("last job document %q final %v, want c:11_1 final", final.DocID, final.Final)
	}
	if final.Sampling.Count < 6 || final.Sampling.First == nil || final.Sampling.First.Sub(started) > 1500*time.Millisecond {
		t.Errorf("final document: %d samples, the first at %v after the start; want one a second from the start", final.Sampling.Count, final.Sampling.First.Sub(started))
	}
	for _, j := range out.jobs {
		if j.DocID != "c:11_1" {
			t.Errorf("a job document under %q: only Slurm's name for the job, c:11_1, may be used", j.DocID)
		}
	}
	for _, n := range out.nodes {
		if n.JobDocID != "c:11_1" {
			t.Errorf("a node document of job %q", n.JobDocID)
		}
	}
	var first int64
	for _, s := range out.series {
		for _, l := range s.Labels {
			if l.Name == "job_id" && l.Value != "11_1" {
				t.Errorf("series %s labelled job_id=%q", s.Name, l.Value)
			}
		}
		if s.Name == "jobsight_job_cpu_usage_seconds_total" && len(s.Samples) > 0 && (first == 0 || s.Samples[0].TimestampMs < first) {
			first = s.Samples[0].TimestampMs
		}
	}
	if first == 0 || time.UnixMilli(first).Sub(started) > 1500*time.Millisecond {
		t.Errorf("the CPU series begins %v after the start: the points taken before Slurm answered were not pushed", time.UnixMilli(first).Sub(started))
	}
}

// A job that ends before Slurm answers keeps what was sampled: its final
// documents, under Slurm's name for it, carry its figures, and its series
// go out under that name once Slurm has answered, ended by a staleness
// marker.
func TestJobEndedBeforeSlurmAnsweredKeepsItsFigures(t *testing.T) {
	t.Parallel()
	out, started := watchBusySlurm(t, 3*time.Second, 5*time.Second)
	out.mu.Lock()
	defer out.mu.Unlock()
	i := slices.IndexFunc(out.jobs, func(j jobmodel.Job) bool { return j.Final })
	if i < 0 {
		t.Fatal("no final job document")
	}
	final := out.jobs[i]
	var cs float64
	if final.CPU != nil && final.CPU.CoreSeconds != nil {
		cs = *final.CPU.CoreSeconds
	}
	if final.DocID != "c:11_1" || final.Sampling.Count < 2 || cs < 1 {
		t.Errorf("final document %q: %d samples, %.2f core-seconds; want c:11_1 with the 3 s sampled before Slurm answered", final.DocID, final.Sampling.Count, cs)
	}
	var points []monitor.Point
	for _, sr := range out.series {
		if sr.Name != "jobsight_job_cpu_usage_seconds_total" {
			continue
		}
		if v, _ := labelValue(sr.Labels, "job_id"); v != "11_1" {
			t.Errorf("the CPU series labelled job_id=%q, want 11_1", v)
		}
		points = append(points, sr.Samples...)
	}
	switch {
	case len(points) < 3:
		t.Fatalf("the CPU series has %d points: the 3 s sampled before Slurm answered were not pushed", len(points))
	case time.UnixMilli(points[0].TimestampMs).Sub(started) > 1500*time.Millisecond:
		t.Errorf("the CPU series begins %v after the job's start", time.UnixMilli(points[0].TimestampMs).Sub(started))
	case math.Float64bits(points[len(points)-1].Value) != math.Float64bits(monitor.StaleNaN):
		t.Errorf("the CPU series ends with %v, not a staleness marker: the ended job stays in instant queries for 5 min", points[len(points)-1].Value)
	}
}

// labelValue is the value of the label name, if the series has it.
func labelValue(labels []monitor.Label, name string) (string, bool) {
	for _, l := range labels {
		if l.Name == name {
			return l.Value, true
		}
	}
	return "", false
}
