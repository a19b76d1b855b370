package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/test/stack"
)

// Job names that imitate every field a text parser would read (the
// agent-trust issue's own example among them) are stored as names; every
// field keeps its real value, and the job document is written (a forged
// node list used to suppress it).
func TestForgedNamesForgeNothing(t *testing.T) {
	e := need(t)
	t.Parallel()
	names := []string{
		"x UserId=root(0) GroupId=root(0) MCS_label=N/A Account=victim Partition=other JobState=COMPLETED NodeList=othernode TRES=cpu=1,mem=1M",
		"y NodeList=elsewhere[1-8] NumNodes=8 BatchHost=elsewhere1",
		"z SubmitTime=2001-01-01T00:00:00 StartTime=2001-01-01T00:00:01 EndTime=2001-01-01T00:00:02",
		"w TRES=cpu=64,mem=1T,node=8,billing=64,gres/gpu=8 TresPerNode=gres:gpu:8 NumCPUs=64",
		"v ArrayJobId=1 ArrayTaskId=7 HetJobId=1 HetJobOffset=3 JobId=1",
		"u\nJobId=1 UserId=root(0) GroupId=root(0) MCS_label=N/A Account=victim",
	}
	before := time.Now().Add(-time.Minute)
	ids := make([]string, len(names))
	for i, n := range names {
		ids[i] = e.submit(t, "--uid="+stack.TestUser, "-J", n, "-c", "1", "--mem=64M", "--wrap", "sleep 2")
	}
	for i, id := range ids {
		job := e.finalJob(t, e.docID(id), jobWait)
		if job.Name != names[i] {
			t.Errorf("job %s: name %q, want %q", id, job.Name, names[i])
		}
		if job.User != stack.TestUser || deref(job.UID) != uint32(nobody) || job.Account == "victim" || job.Partition == "other" {
			t.Errorf("job %s: user %q uid %d account %q partition %q", id, job.User, deref(job.UID), job.Account, job.Partition)
		}
		if !slices.Equal(job.Nodes, []string{e.node}) || job.NodeCount != 1 {
			t.Errorf("job %s: nodes %v (%d), want [%s]", id, job.Nodes, job.NodeCount, e.node)
		}
		if job.SubmitTime == nil || job.SubmitTime.Before(before) || job.StartTime == nil || job.StartTime.Before(before) {
			t.Errorf("job %s: submit %v start %v, want the real (recent) times", id, job.SubmitTime, job.StartTime)
		}
		if deref(job.Requested.CPUs) != 1 || deref(job.Requested.MemoryBytes) != 64<<20 || job.Requested.GPUs != nil {
			t.Errorf("job %s: requested %+v", id, job.Requested)
		}
		if job.ArrayJobID != nil || job.HetJobID != nil || job.JobID != id || job.DocID != e.docID(id) {
			t.Errorf("job %s: array %v het %v job_id %q doc %q", id, job.ArrayJobID, job.HetJobID, job.JobID, job.DocID)
		}
		if job.State != jobmodel.StateCompleted {
			t.Errorf("job %s: state %s", id, job.State)
		}
	}
}

// squeueCalls returns the controller calls the agents made, each as the
// jobs it was for, from the wrapper the test cluster's agents run as
// squeue (see TestMain).
func squeueCalls(t *testing.T, e *env) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, "squeue-calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	var calls [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		calls = append(calls, strings.Split(strings.TrimPrefix(strings.TrimSpace(l), "jobs "), ","))
	}
	return calls
}

// callsFor counts the calls that asked about job id.
func callsFor(calls [][]string, id string) int {
	n := 0
	for _, c := range calls {
		if slices.Contains(c, id) {
			n++
		}
	}
	return n
}

// Each job costs slurmctld a bounded number of calls: one lookup at start
// and the final state (usually one or two calls, then 1, 2, 4 … s apart).
func TestControllerCallsPerJob(t *testing.T) {
	e := need(t)
	t.Parallel()
	id := e.submit(t, "-J", "calls", "-c", "1", "--mem=64M", "--wrap", "sleep 3")
	e.finalJob(t, e.docID(id), jobWait)
	n := callsFor(squeueCalls(t, e), id)
	t.Logf("job %s: %d squeue calls", id, n)
	if n < 1 || n > 4 {
		t.Errorf("job %s made %d squeue calls, want 1-4 (one lookup at start, the final state)", id, n)
	}
}
