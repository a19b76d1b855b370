package jobagent

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// Slurm's answer for a COMPLETING job names only the nodes still
// completing (squeue(1), %N): the first node's final lookup can come when
// it and another node have finished their epilogs. The job document still
// names every node of the allocation, and the ones without a document as
// missing — not a one-node job.
func TestFinalDocumentKeepsTheAllocationOfACompletingJob(t *testing.T) {
	t.Parallel()
	slurm := &fakeSlurm{state: jobmodel.StateRunning, nodes: []string{"n1", "n2", "n3"}, completing: []string{"n2"}}
	out := &memOutputs{}
	a := testAgent(t, slurm, out, noCgroup)
	runJob(t, a, slurm, Request{JobID: 50})
	job, _ := out.last()
	if !job.Final || !slices.Equal(job.Nodes, []string{"n1", "n2", "n3"}) || job.NodeCount != 3 {
		t.Fatalf("final job document: nodes %v (%d) final %v, want n1 n2 n3 (3)", job.Nodes, job.NodeCount, job.Final)
	}
	for _, n := range []string{"node:n2", "node:n3"} {
		if !slices.Contains(job.MissingMetrics, n) {
			t.Errorf("missing %v, want %s named (no node document came)", job.MissingMetrics, n)
		}
	}
}

// When slurmctld does not answer, the job's nodes come from slurmd's
// SLURM_JOB_NODELIST in the request: the node that is not the first
// writes its node document only, and the first one the job document.
// Without the list every node would take itself for the job's only (and
// first) node, and each would write a one-node job document over the
// others'.
func TestNodesFromTheRequestDecideWhoWritesTheJobDocument(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, nodes string
		slurm       []string // Slurm's answer; nil: squeue does not answer
		leader      bool
		want        []string
	}{
		{"second node", "n[0-1]", nil, false, nil},
		{"first node", "n1,n7", nil, true, []string{"n1", "n7"}},
		{"no list", "", nil, true, []string{"n1"}},
		{"a list that is not one", "n[1-", nil, true, []string{"n1"}},
		// A prolog run at the job's first step on this node (no
		// PrologFlags=Alloc) names that step's nodes only: Slurm's
		// answer, the allocation, decides.
		{"a step's list", "n1", []string{"n0", "n1"}, false, nil},
		{"a step's list on the first node", "n1", []string{"n1", "n2"}, true, []string{"n1", "n2"}},
		{"the allocation beside Slurm's", "n[0-1]", []string{"n0", "n1"}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			slurm := &fakeSlurm{state: jobmodel.StateRunning, down: tc.slurm == nil, nodes: tc.slurm}
			out := &memOutputs{}
			a := testAgent(t, slurm, out, noCgroup)
			a.Config.Slurm.FinalStateWait = 500 * time.Millisecond
			done := make(chan error, 1)
			ctx, cancel := context.WithCancel(context.Background())
			go func() { done <- a.StartJob(ctx, Request{Op: "start", JobID: 51, Nodes: tc.nodes}) }()
			time.Sleep(300 * time.Millisecond)
			cancel() // the epilog's stop
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			out.mu.Lock()
			defer out.mu.Unlock()
			if len(out.nodes) == 0 || !out.nodes[len(out.nodes)-1].Final {
				t.Fatalf("no final node document: %+v", out.nodes)
			}
			if !tc.leader {
				if len(out.jobs) != 0 {
					t.Fatalf("a node that is not the job's first wrote %d job documents, the last naming nodes %v", len(out.jobs), out.jobs[len(out.jobs)-1].Nodes)
				}
				return
			}
			if len(out.jobs) == 0 {
				t.Fatal("the job's first node wrote no job document")
			}
			job := out.jobs[len(out.jobs)-1]
			if !job.Final || !slices.Equal(job.Nodes, tc.want) || job.NodeCount != len(tc.want) {
				t.Errorf("job document nodes %v (%d) final %v, want %v", job.Nodes, job.NodeCount, job.Final, tc.want)
			}
		})
	}
}

func TestRequestNodesValidation(t *testing.T) {
	long := Request{Op: "start", JobID: 1, Nodes: strings.Repeat("n", MaxNodesLen+1)}
	if err := long.Validate(); err == nil {
		t.Error("a node list over MaxNodesLen bytes was taken")
	}
	for _, bad := range []string{`n1"`, "n1 n2", "n1\n", "n<1>", "naïve"} {
		if err := (Request{Op: "start", JobID: 1, Nodes: bad}).Validate(); err == nil || !strings.Contains(err.Error(), "host list") {
			t.Errorf("node list %q: %v, want refused as not a host list", bad, err)
		}
	}
	ok := Request{Op: "stop", JobID: 1, Nodes: "gpu[001-128],login1"}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
}
