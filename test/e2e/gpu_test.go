package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/test/stack"
)

// The test cluster declares 8 GPUs (gres with stand-in device files) and
// the agents read them from the simulated source (gpu.backend: simulated,
// profile one-of-n: of the GPUs a job holds, the lowest-index one is busy).
// Which GPUs a job holds comes from Slurm itself (SLURM_JOB_GPUS in the
// prolog), so these tests check the real attribution path; only the
// readings are simulated, and the documents say so.

// gpuIndices returns the indices of the job's per-GPU entries.
func gpuIndices(job jobmodel.Job) []int64 {
	var idx []int64
	for _, g := range job.GPUs {
		idx = append(idx, g.Index)
	}
	return idx
}

// checkOneOfFour checks a job that held 4 GPUs and used one.
func checkOneOfFour(t *testing.T, e *env, job jobmodel.Job) {
	t.Helper()
	g := job.GPU
	if g == nil {
		t.Fatalf("job %s has no gpu summary; missing_metrics %v", job.DocID, job.MissingMetrics)
	}
	if g.Count != 4 || deref(g.Held) != 4 || deref(g.EffectiveGPUs) != 1 || deref(g.HeldIdle) != 3 {
		t.Errorf("gpu: count %d held %d effective %d held_idle %d, want 4/4/1/3", g.Count, deref(g.Held), deref(g.EffectiveGPUs), deref(g.HeldIdle))
	}
	if !g.Simulated || g.Source != jobmodel.GPUSourceSimulated || g.Attribution != "slurm" {
		t.Errorf("gpu: simulated %v source %q attribution %q, want true/simulated/slurm", g.Simulated, g.Source, g.Attribution)
	}
	within(t, "gpu.effective_ratio", deref(g.EffectiveRatio), 0.25, 0.25)
	within(t, "gpu.utilization_avg", deref(g.UtilizationAvg), 0.15, 0.25)
	if deref(job.Requested.GPUs) != 4 {
		t.Errorf("requested.gpus = %d, want 4", deref(job.Requested.GPUs))
	}
	if len(job.GPUs) != 4 {
		t.Fatalf("%d per-GPU entries, want 4: %+v", len(job.GPUs), job.GPUs)
	}
	busy := 0
	for _, d := range job.GPUs {
		if d.Node != e.node || !d.Held || !d.Simulated || d.UUID == "" {
			t.Errorf("gpu %d: node %q held %v simulated %v uuid %q", d.Index, d.Node, d.Held, d.Simulated, d.UUID)
		}
		if d.HeldIdle {
			if d.UtilizationPeak == nil || *d.UtilizationPeak != 0 || d.ProcessSeconds == nil || *d.ProcessSeconds != 0 {
				t.Errorf("held-and-idle gpu %d: peak %v process_seconds %v", d.Index, deref(d.UtilizationPeak), deref(d.ProcessSeconds))
			}
			continue
		}
		busy++
		within(t, "busy gpu utilization_avg", deref(d.UtilizationAvg), 0.8, 0.95)
		if deref(d.ProcessSeconds) < 3 || deref(d.JobMemoryPeakBytes) <= 0 || deref(d.EnergyJoules) <= 0 {
			t.Errorf("busy gpu %d: process_seconds %v job memory %v energy %v", d.Index, deref(d.ProcessSeconds), deref(d.JobMemoryPeakBytes), deref(d.EnergyJoules))
		}
	}
	if busy != 1 {
		t.Errorf("%d busy GPUs, want 1", busy)
	}
	node := e.nodeDoc(t, job.DocID)
	if deref(node.Allocated.GPUs) != 4 || node.GPU == nil || deref(node.GPU.HeldIdle) != 3 {
		t.Errorf("node document: allocated.gpus %d gpu %+v", deref(node.Allocated.GPUs), node.GPU)
	}
	// Series: one per GPU, labelled gpu and simulated.
	q := fmt.Sprintf(`count(max_over_time(jobsight_job_gpu_utilization_ratio{cluster=%q,job_id=%q,simulated="true"}[15m]))`, e.cluster, job.JobID)
	var n float64
	e.poll(t, jobWait, "series "+q, func(ctx context.Context) bool {
		var ok bool
		n, ok, _ = stack.PromQuery(ctx, e.st.Prometheus.URL, q)
		return ok && n == 4
	})
	within(t, "busy gpu series", e.promMax(t, "jobsight_job_gpu_processes", job.JobID), 1, 1)
}

func TestGPUJobUsingOneOfFour(t *testing.T) {
	e := need(t)
	t.Parallel()
	id := e.submit(t, "-J", "gpu4", "-c", "1", "--mem=100M", "--gres=gpu:4", "--wrap", "sleep 8")
	job := e.finalJob(t, e.docID(id), jobWait)
	checkOneOfFour(t, e, job)

	// The analysis: a GPU job using one GPU of four.
	a := job.Analysis
	if a == nil {
		t.Fatal("no analysis")
	}
	if a.Kind != jobmodel.KindGPU || a.Class != jobmodel.ClassInefficient || deref(a.Figures.EffectiveGPUs) != 1 {
		t.Errorf("kind %s class %s effective %d, want gpu / inefficient (~23%% average) / 1", a.Kind, a.Class, deref(a.Figures.EffectiveGPUs))
	}
	ids := causeIDs(a)
	for _, want := range []string{"parallelism_mismatch", "gpus_held_idle"} {
		if !slices.Contains(ids, want) {
			t.Errorf("causes %v lack %s", ids, want)
		}
	}
	if g := change(a, "--gpus"); g == nil || g.From != "--gpus=4" || g.To != "--gpus=1" {
		t.Errorf("gpu change %+v, want --gpus=4 -> --gpus=1 (changes %+v)", g, a.Recommendation.Changes)
	}
	if deref(a.Recommendation.GPUs) != 1 || deref(a.Savings.GPUHours) <= 0 {
		t.Errorf("recommended gpus %d, savings %+v", deref(a.Recommendation.GPUs), a.Savings)
	}
}

// Two jobs share the node, each holding 4 of its 8 GPUs: each sees only
// its own GPUs, and the two sets do not overlap. The first job runs until
// the second has finished, so they certainly share the node.
func TestGPUJobsSharingANodeSeeOnlyTheirOwn(t *testing.T) {
	e := need(t)
	t.Parallel()
	a := e.submit(t, "-J", "share-a", "-c", "1", "--mem=100M", "--gres=gpu:4", "--wrap", "sleep 600")
	defer func() { _ = e.st.Slurm.Scancel(context.Background(), a) }()
	ctx, cancel := context.WithTimeout(context.Background(), jobWait)
	defer cancel()
	if _, err := e.st.Slurm.WaitJobState(ctx, a, "RUNNING"); err != nil {
		t.Fatal(err)
	}
	b := e.submit(t, "-J", "share-b", "-c", "1", "--mem=100M", "--gres=gpu:4", "--wrap", "sleep 8")
	jb := e.finalJob(t, e.docID(b), jobWait)
	if st, err := e.st.Slurm.JobState(ctx, a); err != nil || st != "RUNNING" {
		t.Fatalf("job %s is %q (%v) after job %s ended; it must still run", a, st, err, b)
	}
	if err := e.st.Slurm.Scancel(ctx, a); err != nil {
		t.Fatal(err)
	}
	ja := e.finalJob(t, e.docID(a), jobWait)
	checkOneOfFour(t, e, ja)
	checkOneOfFour(t, e, jb)
	ia, ib := gpuIndices(ja), gpuIndices(jb)
	for _, i := range ia {
		if slices.Contains(ib, i) {
			t.Errorf("jobs %s and %s both report GPU %d (%v, %v)", a, b, i, ia, ib)
		}
	}
}

// A job without GPUs on a GPU node gets no GPU fields, not zeros.
func TestCPUJobOnGPUNodeHasNoGPUFields(t *testing.T) {
	e := need(t)
	t.Parallel()
	id := e.submit(t, "-J", "nogpu", "-c", "1", "--mem=100M", "--wrap", "sleep 3")
	job := e.finalJob(t, e.docID(id), jobWait)
	if job.GPU != nil || len(job.GPUs) != 0 || job.Requested.GPUs != nil {
		t.Errorf("CPU-only job: gpu %+v gpus %v requested %v", job.GPU, job.GPUs, job.Requested.GPUs)
	}
	if slices.Contains(job.MissingMetrics, "gpu") {
		t.Errorf("CPU-only job lists gpu as missing: %v", job.MissingMetrics)
	}
}
