package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/test/stack"
)

const jobWait = 4 * time.Minute // jobs queue: the test node has few CPUs

func TestBusyJobIsMeasuredAgainstItsRequest(t *testing.T) {
	e := need(t)
	t.Parallel()
	// The job spins one core for 8 s and writes what its children used
	// (the shell's times builtin): the kernel's own account, against which
	// the agent's figure is checked whatever else loads the node's two
	// cores.
	id := e.submit(t, "-J", "busy", "-c", "1", "--mem=200M", "--wrap",
		"timeout 8 sh -c 'while :; do :; done'; times > "+e.dir+"/busy-$SLURM_JOB_ID.times; sleep 1")
	job := e.finalJob(t, e.docID(id), jobWait)
	spin := childTimes(t, filepath.Join(e.dir, "busy-"+id+".times"))

	if job.State != jobmodel.StateCompleted || deref(job.ExitCode) != 0 {
		t.Errorf("state %s exit %v, want COMPLETED 0", job.State, deref(job.ExitCode))
	}
	if job.Cluster != cluster || job.JobID != id || strconv.FormatUint(job.SlurmJobID, 10) != id || job.Source != jobmodel.SourceSlurm {
		t.Errorf("identity: cluster %q job_id %q slurm_job_id %d source %q", job.Cluster, job.JobID, job.SlurmJobID, job.Source)
	}
	if want := stack.AgentVersion(context.Background(), "../.."); job.AgentVersion != want || want == "unknown" {
		t.Errorf("agent_version %q, want the build's %q", job.AgentVersion, want)
	}
	if job.User != "root" || job.Partition == "" || !slices.Equal(job.Nodes, []string{e.node}) {
		t.Errorf("metadata: user %q partition %q nodes %v", job.User, job.Partition, job.Nodes)
	}
	if deref(job.Requested.CPUs) != 1 || deref(job.Requested.MemoryBytes) != 200<<20 {
		t.Errorf("requested cpus %d memory %d, want 1 and 200 MiB", deref(job.Requested.CPUs), deref(job.Requested.MemoryBytes))
	}
	if job.SubmitTime == nil || job.StartTime == nil || job.EndTime == nil {
		t.Fatalf("times missing: %+v %+v %+v", job.SubmitTime, job.StartTime, job.EndTime)
	}
	within(t, "elapsed_seconds", deref(job.ElapsedSeconds), 8, 40)
	if job.CPU == nil || job.Memory == nil {
		t.Fatalf("usage missing: cpu %+v memory %+v; missing_metrics %v", job.CPU, job.Memory, job.MissingMetrics)
	}
	if spin < 2 {
		t.Fatalf("the job's spinning child used %.2f core-s in 8 s: the node is too loaded to tell", spin)
	}
	within(t, "cpu.core_seconds", deref(job.CPU.CoreSeconds), spin-0.5, spin+0.8)
	within(t, "cpu.peak_cores", deref(job.CPU.PeakCores), 0.3, 1.3)
	within(t, "cpu.efficiency", deref(job.CPU.Efficiency), 0.15, 1)
	within(t, "cpu.active_seconds", deref(job.CPU.ActiveSeconds), 5, 10)
	within(t, "memory.limit_bytes", float64(deref(job.Memory.LimitBytes)), 190<<20, 210<<20)
	if job.Memory.PeakBytes == nil || *job.Memory.PeakBytes <= 0 {
		t.Errorf("memory.peak_bytes = %v", job.Memory.PeakBytes)
	}
	if job.Sampling.Count < 5 || job.Sampling.IntervalSeconds != 1 {
		t.Errorf("sampling %+v, want >= 5 samples at 1 s", job.Sampling)
	}
	// Energy is measured where the node offers it (RAPL, a BMC), and named
	// missing where it does not (these VMs have neither): never a zero.
	switch {
	case job.Energy != nil:
		if job.Energy.Method != jobmodel.EnergyMethod || job.Energy.TotalJoules == nil || *job.Energy.TotalJoules < 0 {
			t.Errorf("energy %+v", job.Energy)
		}
	case !slices.Contains(job.MissingMetrics, "energy"):
		t.Errorf("no energy object and energy not named missing: %v", job.MissingMetrics)
	}

	node := e.nodeDoc(t, job.DocID)
	if node.AgentState != jobmodel.AgentFinished || node.JobDocID != job.DocID || deref(node.Allocated.CPUs) < 1 {
		t.Errorf("node document: agent_state %q job_doc_id %q allocated %+v", node.AgentState, node.JobDocID, node.Allocated)
	}
	within(t, "prometheus cpu seconds", e.promMax(t, "jobsight_job_cpu_usage_seconds_total", id), spin-0.5, spin+1)
	within(t, "prometheus memory limit", e.promMax(t, "jobsight_job_memory_limit_bytes", id), 190<<20, 210<<20)
	// The job's series end with it (staleness markers): an instant query
	// no longer sees the job, as running-job panels and hogging alerts
	// need, although the range queries above still do.
	for _, metric := range []string{"jobsight_job_cpu_usage_seconds_total", "jobsight_job_memory_limit_bytes"} {
		q := fmt.Sprintf(`%s{cluster=%q,job_id=%q}`, metric, e.cluster, id)
		if v, ok, err := stack.PromQuery(context.Background(), e.st.Prometheus.URL, q); err != nil || ok {
			t.Errorf("instant query %s after the job ended: value %v, present %v, err %v", q, v, ok, err)
		}
	}
}

func TestMultiStepJobCountsEveryStep(t *testing.T) {
	e := need(t)
	t.Parallel()
	// On cgroup v1 Slurm makes no blkio cgroup, so I/O comes from
	// /proc/<pid>/io of the job's processes: dd's bytes are seen through the
	// task shell that reaps it (the kernel adds a reaped child's I/O to its
	// parent), which outlives it by a sample. A process that lives less than
	// one interval and whose parent is slurmstepd is not seen (documented).
	id := e.submit(t, "-J", "steps", "-n", "2", "--mem=300M", "--wrap",
		"srun -n 2 sleep 4; srun -n 1 sh -c 'dd if=/dev/zero of=dd-$SLURM_JOB_ID bs=1M count=64 conv=fsync status=none; sleep 2'; rm -f dd-$SLURM_JOB_ID")
	job := e.finalJob(t, e.docID(id), jobWait)
	if job.State != jobmodel.StateCompleted {
		t.Errorf("state %s, want COMPLETED", job.State)
	}
	if job.Processes == nil || deref(job.Processes.Peak) < 3 {
		t.Errorf("processes %+v, want a peak of at least 3 (batch shell + 2 tasks)", job.Processes)
	}
	if job.IO == nil {
		t.Fatalf("io missing; missing_metrics %v", job.MissingMetrics)
	}
	if w := deref(job.IO.WrittenBytes); w < 60<<20 {
		t.Errorf("io.written_bytes = %d, want at least 60 MiB (dd wrote 64 MiB with fsync)", w)
	}
}

func TestCancelledJobGetsItsFinalState(t *testing.T) {
	e := need(t)
	t.Parallel()
	id := e.submit(t, "-J", "cancelme", "--wrap", "sleep 300")
	ctx, cancel := context.WithTimeout(context.Background(), jobWait)
	defer cancel()
	if _, err := e.st.Slurm.WaitJobState(ctx, id, "RUNNING"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	if err := e.st.Slurm.Scancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	job := e.finalJob(t, e.docID(id), time.Minute)
	if job.State != jobmodel.StateCancelled {
		t.Errorf("state %s, want CANCELLED", job.State)
	}
	if job.Sampling.Count < 2 {
		t.Errorf("sampling count %d, want the samples taken before the cancel", job.Sampling.Count)
	}
}

func TestJobOverItsMemoryLimit(t *testing.T) {
	e := need(t)
	t.Parallel()
	// Grows by 4 MiB every 0.2 s, as a leak does, until the kernel kills it.
	id := e.submit(t, "-J", "oom", "--mem=64M", "--wrap",
		`perl -e 'my @a; for (1..64) { push @a, "a" x (4*1024*1024); select(undef, undef, undef, 0.2) }'`)
	job := e.finalJob(t, e.docID(id), jobWait)
	if job.State != jobmodel.StateOutOfMemory {
		t.Errorf("state %s, want OUT_OF_MEMORY", job.State)
	}
	if job.Memory == nil {
		t.Fatalf("memory missing: %v", job.MissingMetrics)
	}
	within(t, "memory.limit_bytes", float64(deref(job.Memory.LimitBytes)), 60<<20, 68<<20)
	within(t, "memory.peak_bytes", float64(deref(job.Memory.PeakBytes)), 40<<20, 70<<20)
}

// A job that asks for far more than its limit at once is killed between
// two samples: its peak is still the limit it reached, and the document
// says it came from the limit (never a plainly too low peak).
func TestFastOOMPeakIsTheLimit(t *testing.T) {
	e := need(t)
	t.Parallel()
	id := e.submit(t, "-J", "fastoom", "--mem=64M", "--wrap", `perl -e '$a = "a" x (512*1024*1024)'`)
	job := e.finalJob(t, e.docID(id), jobWait)
	if job.State != jobmodel.StateOutOfMemory {
		t.Fatalf("state %s, want OUT_OF_MEMORY", job.State)
	}
	if job.Memory == nil || job.Memory.PeakBytes == nil {
		t.Fatalf("memory %+v, missing %v", job.Memory, job.MissingMetrics)
	}
	if *job.Memory.PeakBytes < 60<<20 {
		t.Errorf("peak %d below the 64 MiB limit the job was killed at (memory %+v)", *job.Memory.PeakBytes, *job.Memory)
	}
}

func TestArrayTasksHaveTheirOwnDocuments(t *testing.T) {
	e := need(t)
	t.Parallel()
	id := e.submit(t, "-J", "array", "--array=1-2", "--wrap", "sleep 3")
	seen := map[uint64]bool{}
	for _, task := range []uint64{1, 2} {
		key := id + "_" + strconv.FormatUint(task, 10)
		job := e.finalJob(t, e.docID(key), jobWait)
		if job.JobID != key || strconv.FormatUint(deref(job.ArrayJobID), 10) != id || deref(job.ArrayTaskID) != task {
			t.Errorf("task %d: job_id %q array_job_id %d array_task_id %d", task, job.JobID, deref(job.ArrayJobID), deref(job.ArrayTaskID))
		}
		if seen[job.SlurmJobID] {
			t.Errorf("two array tasks share slurm_job_id %d", job.SlurmJobID)
		}
		seen[job.SlurmJobID] = true
		if job.State != jobmodel.StateCompleted {
			t.Errorf("task %d state %s", task, job.State)
		}
		if n := e.promMax(t, "jobsight_job_processes", key); n < 1 {
			t.Errorf("task %d: jobsight_job_processes{job_id=%q} = %v", task, key, n)
		}
	}
}

func TestJobOfAnotherUserWithAHostileName(t *testing.T) {
	e := need(t)
	t.Parallel()
	// A name that imitates scontrol's own fields, with quotes and unicode.
	name := `it's "quoted" ünïcødé 名前 UserId=root(0) Account=evil ` + strings.Repeat("x", 150)
	id := e.submit(t, "--uid="+stack.TestUser, "--chdir=/tmp", "-J", name, "--wrap", "sleep 3")
	job := e.finalJob(t, e.docID(id), jobWait)
	if job.User != stack.TestUser || deref(job.UID) != uint32(nobody) {
		t.Errorf("user %q uid %d, want %s %d", job.User, deref(job.UID), stack.TestUser, nobody)
	}
	if job.Name != name {
		t.Errorf("name %q, want %q", job.Name, name)
	}
	if job.Account == "evil" {
		t.Errorf("account taken from the job name")
	}
	if job.State != jobmodel.StateCompleted {
		t.Errorf("state %s exit %d signal %d reason %q", job.State, deref(job.ExitCode), deref(job.ExitSignal), job.Reason)
	}
}

// The node agent killed mid-job: the job keeps running, the next launch on
// the node (another job's start) starts a new agent that resumes the job
// from its checkpoint, and the job's documents say how long no one
// sampled it. Not parallel: killing the node agent touches every job on
// the node.
func TestNodeAgentKilledMidJobIsResumedByTheNextLaunch(t *testing.T) {
	e := need(t)
	id := e.submit(t, "-J", "victim", "-w", e.node, "--wrap", "sleep 25")
	var pid int
	e.poll(t, jobWait, "the node agent", func(context.Context) bool {
		pid = e.nodeAgentPID(e.node)
		return pid != 0
	})
	time.Sleep(7 * time.Second) // past the first 5 s flush: a checkpoint exists
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the node agent %d: %v", pid, err)
	}
	time.Sleep(4 * time.Second) // the gap
	other := e.submit(t, "-J", "next-launch", "-w", e.node, "--wrap", "sleep 2")
	job := e.finalJob(t, e.docID(id), jobWait)
	if job.State != jobmodel.StateCompleted {
		t.Errorf("state %s, want COMPLETED (the job must not notice the agent's death)", job.State)
	}
	if job.Sampling.Gaps != 1 || deref(job.Sampling.GapSeconds) < 3 || deref(job.Sampling.GapSeconds) > 20 {
		t.Errorf("sampling %+v: want one gap of about 4-10 s", job.Sampling)
	}
	if !slices.Contains(job.MissingMetrics, "samples_during_agent_restart:"+e.node) || slices.Contains(job.MissingMetrics, "samples_after_agent_loss:"+e.node) {
		t.Errorf("missing_metrics %v: want the restart named, and nothing lost after it", job.MissingMetrics)
	}
	// Samples before the kill and after the resume: ~25 s at 1 s, less the gap.
	if job.Sampling.Count < 12 {
		t.Errorf("sampling count %d: the checkpointed samples and the resumed ones should both be there", job.Sampling.Count)
	}
	within(t, "cpu core-seconds of a sleeping job", deref(job.CPU.CoreSeconds), 0, 2)
	if node := e.nodeDoc(t, job.DocID); node.AgentState != jobmodel.AgentFinished {
		t.Errorf("node agent_state %q, want finished (watched to the end by the new agent)", node.AgentState)
	}
	if o := e.finalJob(t, e.docID(other), jobWait); o.State != jobmodel.StateCompleted || o.Sampling.Gaps != 0 {
		t.Errorf("the next job: state %s sampling %+v", o.State, o.Sampling)
	}
	if now := e.nodeAgentPID(e.node); now == pid {
		t.Errorf("the killed agent's pid %d is still the node's agent", pid)
	}
}

func TestFailedJobKeepsItsExitCode(t *testing.T) {
	e := need(t)
	t.Parallel()
	id := e.submit(t, "-J", "fails", "--wrap", "sleep 2; exit 3")
	job := e.finalJob(t, e.docID(id), jobWait)
	if job.State != jobmodel.StateFailed || deref(job.ExitCode) != 3 {
		t.Errorf("state %s exit %d, want FAILED 3", job.State, deref(job.ExitCode))
	}
}

// Slurm's smallest time limit is a minute, so this test takes about as long.
func TestJobOverItsTimeLimit(t *testing.T) {
	e := need(t)
	t.Parallel()
	id := e.submit(t, "-J", "overtime", "--time=1", "--wrap", "sleep 600")
	job := e.finalJob(t, e.docID(id), 3*time.Minute+jobWait)
	if job.State != jobmodel.StateTimeout {
		t.Errorf("state %s, want TIMEOUT", job.State)
	}
	if deref(job.TimeLimitSeconds) != 60 {
		t.Errorf("time_limit_seconds %d, want 60", deref(job.TimeLimitSeconds))
	}
	within(t, "elapsed_seconds", deref(job.ElapsedSeconds), 55, 200)
	if job.Sampling.Count < 40 {
		t.Errorf("sampling count %d over a minute at 1 s", job.Sampling.Count)
	}
}

// childTimes reads the children's user and system time from the output of
// sh's times builtin ("0m0.00s 0m0.00s" for the shell, then the same for
// its children), in seconds.
func childTimes(t *testing.T, path string) float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the job's times: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var total float64
	for _, f := range strings.Fields(lines[len(lines)-1]) {
		m, sec, ok := strings.Cut(strings.TrimSuffix(f, "s"), "m")
		mins, err1 := strconv.ParseFloat(m, 64)
		secs, err2 := strconv.ParseFloat(sec, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("times output %q", b)
		}
		total += mins*60 + secs
	}
	return total
}
