package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/slurm"
)

var allNodes = []string{"e2enode", "e2enode2", "e2enode3"}

// nodeDocOn returns the final node document of a job on one node.
func (e *env) nodeDocOn(t *testing.T, jobDocID, node string) jobmodel.Node {
	t.Helper()
	id := jobmodel.NodeDocID(jobDocID, node)
	var doc jobmodel.Node
	e.poll(t, jobWait, "node document "+id, func(ctx context.Context) bool {
		got, err := e.es.GetByIDs(ctx, jobmodel.SearchIndices(jobmodel.DefaultNodeIndex), []string{id})
		if err != nil || got[id] == nil {
			return false
		}
		doc = jobmodel.Node{}
		return jsonDecode(got[id], &doc) == nil && doc.Final
	})
	return doc
}

// A job over several nodes: each node's agent writes its node document,
// the first node assembles one job document whose sums and per-node peaks
// are right.
func TestMultiNodeJobsAssembleEveryNode(t *testing.T) {
	e := need(t)
	t.Parallel()
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			id := e.submit(t, "-J", fmt.Sprintf("multi%d", n), "-p", "multi", "-N", strconv.Itoa(n), "--ntasks-per-node=1",
				"-c", "1", "--mem=100M", "--wrap", "srun sh -c 'timeout 6 sh -c \"while :; do :; done\"; exit 0'")
			job := e.finalJob(t, e.docID(id), jobWait)
			if len(job.Nodes) != n || job.NodeCount != n || job.State != jobmodel.StateCompleted {
				t.Fatalf("nodes %v (%d) state %s, want %d nodes COMPLETED", job.Nodes, job.NodeCount, job.State, n)
			}
			for _, m := range job.MissingMetrics {
				if strings.HasPrefix(m, "node:") {
					t.Errorf("missing %s", m)
				}
			}
			var cores, peak float64
			var count int64
			for _, node := range job.Nodes {
				if !slices.Contains(allNodes, node) {
					t.Errorf("unknown node %q", node)
				}
				d := e.nodeDocOn(t, job.DocID, node)
				if d.Node != node || d.AgentState != jobmodel.AgentFinished || d.CPU == nil || d.CPU.CoreSeconds == nil {
					t.Errorf("node %s document: %+v", node, d)
					continue
				}
				// The nodes share this host's cores (each one's cpuset starts at
				// CPU 0), so each busy task gets a share of 6 core-seconds.
				within(t, "node "+node+" core_seconds", *d.CPU.CoreSeconds, 1, 7.5)
				cores += *d.CPU.CoreSeconds
				peak = max(peak, float64(deref(d.Memory.PeakBytes)))
				count += d.Sampling.Count
			}
			if job.CPU == nil || job.Memory == nil {
				t.Fatalf("job usage: cpu %+v memory %+v", job.CPU, job.Memory)
			}
			within(t, "job core_seconds (sum of the nodes')", *job.CPU.CoreSeconds, cores-0.01, cores+0.01)
			within(t, "job max_node_peak_bytes", float64(deref(job.Memory.MaxNodePeakBytes)), peak, peak)
			if job.Sampling.Count != count {
				t.Errorf("job sampling.count %d, want the nodes' %d", job.Sampling.Count, count)
			}
			if deref(job.Requested.Nodes) != int64(n) || deref(job.Requested.CPUs) != int64(n) {
				t.Errorf("requested %+v", job.Requested)
			}
		})
	}
}

// One node's agent killed mid-job: the job document names the node whose
// data stops early; the other nodes' data is whole.
func TestMultiNodeJobWithOneAgentKilled(t *testing.T) {
	e := need(t)
	// Not parallel: killing a node agent touches every job on its node.
	id := e.submit(t, "-J", "multikill", "-p", "multi", "-N", "2", "--ntasks-per-node=1", "-c", "1", "--mem=100M",
		"--wrap", "srun sleep 20")
	ctx, cancel := context.WithTimeout(context.Background(), jobWait)
	defer cancel()
	if _, err := e.st.Slurm.WaitJobState(ctx, id, "RUNNING"); err != nil {
		t.Fatal(err)
	}
	// The second node of the job: the first one assembles the document.
	var victim string
	var pid int
	e.poll(t, time.Minute, "the second node's agent", func(context.Context) bool {
		out, err := e.st.Slurm.Squeue(ctx, "-h", "-j", id, "-o", "%N")
		if err != nil {
			return false
		}
		nodes, err := slurm.ExpandHostlist(strings.TrimSpace(out))
		if err != nil || len(nodes) != 2 {
			return false
		}
		victim = nodes[1]
		pid = e.nodeAgentPID(victim)
		return pid != 0
	})
	time.Sleep(7 * time.Second) // past the first flush: a checkpoint exists
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the agent on %s: %v", victim, err)
	}
	job := e.finalJob(t, e.docID(id), jobWait)
	if job.State != jobmodel.StateCompleted || len(job.Nodes) != 2 {
		t.Errorf("state %s nodes %v", job.State, job.Nodes)
	}
	if !slices.Contains(job.MissingMetrics, "samples_after_agent_loss:"+victim) {
		t.Errorf("missing_metrics %v do not name %s", job.MissingMetrics, victim)
	}
	for _, node := range job.Nodes {
		if node != victim && slices.Contains(job.MissingMetrics, "samples_after_agent_loss:"+node) {
			t.Errorf("node %s named although its agent lived", node)
		}
	}
	if d := e.nodeDocOn(t, job.DocID, victim); d.AgentState != jobmodel.AgentLost || d.Sampling.Count == 0 {
		t.Errorf("victim's node document: agent_state %q samples %d", d.AgentState, d.Sampling.Count)
	}
}

func jsonDecode(b []byte, v any) error { return json.Unmarshal(b, v) }
