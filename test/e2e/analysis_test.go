package e2e

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// causeIDs lists an analysis's cause ids.
func causeIDs(a *jobmodel.Analysis) []string {
	var ids []string
	for _, c := range a.Causes {
		ids = append(ids, c.ID)
	}
	return ids
}

// change finds the #SBATCH change of an option.
func change(a *jobmodel.Analysis, option string) *jobmodel.SbatchChange {
	for i, c := range a.Recommendation.Changes {
		if c.Option == option {
			return &a.Recommendation.Changes[i]
		}
	}
	return nil
}

// A job that asks for 2 CPUs (all this test node has) and 8 GB and uses
// one core and ~200 MB gets a poor class, the over-request causes and a
// right-sized request.
func TestOverRequestingJobIsAnalysed(t *testing.T) {
	e := need(t)
	t.Parallel()
	// ~200 MB held for the whole run (tail keeps its input until the
	// sleep ends), and one busy core started after the copy is done, so
	// that no sample sees both at once on a loaded machine (the p95 of
	// cores must be one core, not two).
	// The busy core's CPU time as the kernel counted it (times) is what the
	// efficiency is checked against: on a loaded node it gets less than 15 s.
	id := e.submit(t, "-J", "overask", "-c", "2", "--mem=8G", "--time=60", "--wrap",
		"(head -c 200M /dev/zero; sleep 18) | tail > /dev/null & sleep 2; timeout 15 sh -c 'while :; do :; done'; times > "+
			e.dir+"/overask-$SLURM_JOB_ID.times; wait")
	job := e.finalJob(t, e.docID(id), jobWait)
	spin := childTimes(t, filepath.Join(e.dir, "overask-"+id+".times"))
	a := job.Analysis
	if a == nil {
		t.Fatalf("final job document has no analysis; missing %v", job.MissingMetrics)
	}
	if a.Kind != jobmodel.KindCPU || (a.Class != jobmodel.ClassInefficient && a.Class != jobmodel.ClassWasted) {
		t.Errorf("kind %s class %s score %v, want a CPU job classed inefficient or wasted", a.Kind, a.Class, deref(a.Score))
	}
	if spin < 3 || deref(job.ElapsedSeconds) <= 0 {
		t.Fatalf("the busy core got %.2f core-s of 15 s (elapsed %v): the node is too loaded to tell", spin, deref(job.ElapsedSeconds))
	}
	want := spin / (2 * deref(job.ElapsedSeconds)) // 2 CPUs requested
	within(t, "figures.cpu_efficiency", deref(a.Figures.CPUEfficiency), want-0.05, want+0.08)
	within(t, "figures.memory_efficiency", deref(a.Figures.MemoryEfficiency), 0.01, 0.06)
	ids := causeIDs(a)
	if !slices.Contains(ids, "memory_overrequest") {
		t.Errorf("causes %v lack memory_overrequest", ids)
	}
	cpu := change(a, "--cpus-per-task")
	if cpu == nil || cpu.From != "--cpus-per-task=2" || cpu.To != "--cpus-per-task=1" {
		t.Errorf("cpu change %+v, want --cpus-per-task=2 -> 1 (changes %+v)", cpu, a.Recommendation.Changes)
	}
	mem := change(a, "--mem")
	if mem == nil || mem.From != "--mem=8G" || mem.To == mem.From {
		t.Errorf("memory change %+v (changes %+v)", mem, a.Recommendation.Changes)
	}
	if deref(a.Recommendation.MemoryBytes) < 200<<20 || deref(a.Recommendation.MemoryBytes) > 2<<30 {
		t.Errorf("recommended memory %d, want above the ~200 MiB used and well under 8 GiB", deref(a.Recommendation.MemoryBytes))
	}
	if a.Savings.CoreHours == nil || *a.Savings.CoreHours <= 0 {
		t.Errorf("savings %+v", a.Savings)
	}
}
