package e2e

import (
	"os"
	"slices"
	"testing"

	"github.com/jobsight/jobsight/internal/analysis"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// A job whose memory is shared memory (/dev/shm, as PyTorch data loaders and
// MPI shared-memory transports use it): 150 MiB written into /dev/shm are
// charged to its cgroup and count against its limit, but are not RSS. The
// documents show them as shared memory and in the working set, and memory
// efficiency rests on the working set, not on RSS (which would call the job
// almost empty).
func TestSharedMemoryJobCountsAgainstItsLimit(t *testing.T) {
	e := need(t)
	t.Parallel()
	const mib = 1 << 20
	id := e.submit(t, "-J", "shm", "-c", "1", "--mem=400M", "--wrap",
		"dd if=/dev/zero of=/dev/shm/js-$SLURM_JOB_ID bs=1M count=150 status=none; sleep 5; rm -f /dev/shm/js-$SLURM_JOB_ID")
	t.Cleanup(func() { os.Remove("/dev/shm/js-" + id) })
	job := e.finalJob(t, e.docID(id), jobWait)
	if job.State != jobmodel.StateCompleted {
		t.Errorf("state %s, want COMPLETED", job.State)
	}
	check := func(what string, m *jobmodel.MemoryUsage) {
		t.Helper()
		if m == nil {
			t.Fatalf("%s: no memory summary; missing_metrics %v", what, job.MissingMetrics)
		}
		t.Logf("%s memory: peak %d, rss peak %d, shmem peak %d, mapped file peak %d, working set avg %d / peak %d, limit %d, efficiency %.3f",
			what, deref(m.PeakBytes), deref(m.RSSPeakBytes), deref(m.ShmemPeakBytes), deref(m.MappedFilePeakBytes),
			deref(m.WorkingSetAvgBytes), deref(m.WorkingSetPeakBytes), deref(m.LimitBytes), deref(m.Efficiency))
		within(t, what+" memory.shmem_peak_bytes", float64(deref(m.ShmemPeakBytes)), 145*mib, 160*mib)
		within(t, what+" memory.working_set_peak_bytes", float64(deref(m.WorkingSetPeakBytes)), 150*mib, 400*mib)
		// The batch shell, dd and sleep: a few MiB of anonymous memory.
		within(t, what+" memory.rss_peak_bytes", float64(deref(m.RSSPeakBytes)), 0, 50*mib)
		if m.ShmemAvgBytes == nil || m.WorkingSetAvgBytes == nil || m.MappedFilePeakBytes == nil {
			t.Errorf("%s: averages or mapped file memory absent: %+v", what, *m)
		}
		// Efficiency: the working-set peak over the 400 MiB limit, at
		// least 150/400, where RSS would give ~1%.
		within(t, what+" memory.efficiency", deref(m.Efficiency), 0.37, 1)
	}
	check("job", job.Memory)
	if job.Memory != nil {
		if got, ws := deref(job.Memory.MaxNodeWorkingSetPeakBytes), deref(job.Memory.WorkingSetPeakBytes); got != ws {
			t.Errorf("memory.max_node_working_set_peak_bytes = %d, want the one node's %d", got, ws)
		}
	}
	node := e.nodeDoc(t, job.DocID)
	check("node", node.Memory)
	for _, m := range []string{"memory_shmem", "memory_mapped_file", "memory_working_set"} {
		if slices.Contains(job.MissingMetrics, m) {
			t.Errorf("%s named missing: %v", m, job.MissingMetrics)
		}
	}

	if a := job.Analysis; a == nil || a.Figures.MemoryBasis != analysis.MemoryBasisPerNodeWorkingSet {
		t.Errorf("analysis memory basis: %+v, want %s", a, analysis.MemoryBasisPerNodeWorkingSet)
	} else {
		within(t, "analysis.figures.memory_efficiency", deref(a.Figures.MemoryEfficiency), 0.37, 1)
	}

	within(t, "prometheus shared memory", e.promMax(t, "jobsight_job_memory_shmem_bytes", id), 145*mib, 160*mib)
	within(t, "prometheus working set", e.promMax(t, "jobsight_job_memory_working_set_bytes", id), 150*mib, 400*mib)
	within(t, "prometheus rss", e.promMax(t, "jobsight_job_memory_rss_bytes", id), 0, 50*mib)
}
