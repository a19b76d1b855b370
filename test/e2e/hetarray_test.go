package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/test/stack"
)

// onlyOn checks that a job's node documents and series exist on node and
// on no other node of the cluster: nothing of the job leaks onto (or is
// written by the agent of) a node it did not run on.
func (e *env) onlyOn(t *testing.T, docID, key, node string) {
	t.Helper()
	var others []string
	for _, n := range allNodes {
		if n != node {
			others = append(others, jobmodel.NodeDocID(docID, n))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := e.es.GetByIDs(ctx, jobmodel.SearchIndices(jobmodel.DefaultNodeIndex), others)
	if err != nil {
		t.Fatal(err)
	}
	for id := range got {
		t.Errorf("node document %s exists, but %s ran only on %s", id, key, node)
	}
	sel := fmt.Sprintf(`cluster=%q,job_id=%q`, e.cluster, key)
	e.poll(t, 30*time.Second, "series of "+key+" on "+node, func(ctx context.Context) bool {
		_, ok, _ := stack.PromQuery(ctx, e.st.Prometheus.URL, fmt.Sprintf(`max_over_time(jobsight_job_processes{%s,node=%q}[15m])`, sel, node))
		return ok
	})
	q := fmt.Sprintf(`count by (node) (max_over_time(jobsight_job_processes{%s,node!=%q}[15m]))`, sel, node)
	if v, ok, err := stack.PromQuery(ctx, e.st.Prometheus.URL, q); err != nil || ok {
		t.Errorf("%s: %v series (err %v), want none: %s ran only on %s", q, v, err, key, node)
	}
}

// ranOn returns the nodes Slurm ran each job of squeue's -j list on, by
// the key squeue prints ("123_4" for an array task, "200+1" for a
// heterogeneous component).
func (e *env) ranOn(t *testing.T, id string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := e.st.Slurm.Squeue(ctx, "-h", "--states=all", "-j", id, "-o", "%i|%N")
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, n, ok := strings.Cut(strings.TrimSpace(l), "|"); ok {
			nodes[k] = n
		}
	}
	return nodes
}

// An array spread over the nodes (each task holds a whole node, so the
// tasks cannot share one): every task has its own "<id>_<task>" job
// document naming the node Slurm ran it on, one node document on that node
// written by that node's agent, its own usage, and series on that node only.
//
// Not parallel: each task needs a whole node, and while the parallel tests
// keep jobs of the debug and dense partitions (no time limit, so backfill
// plans nothing for a waiting job) on e2enode and e2enode3, the fourth task
// can wait for a free node longer than the test waits for its document:
// most likely why a fresh-clone CI run waited 8 minutes for task 2 (its
// failure did not say; a timeout now prints what squeue says of the job).
func TestArrayTasksSpreadOverNodes(t *testing.T) {
	e := need(t)
	const tasks = 4
	id := e.submit(t, "-J", "arrayspread", "-p", "multi", fmt.Sprintf("--array=0-%d", tasks-1), "-N1", "-n1",
		"--exclusive", "--mem=100M", "--wrap", `timeout 6 sh -c 'while :; do :; done'; exit 0`)
	keys := make([]string, tasks)
	jobs := make([]jobmodel.Job, tasks)
	for task := range tasks {
		keys[task] = id + "_" + strconv.Itoa(task)
		jobs[task] = e.finalJob(t, e.docID(keys[task]), 2*jobWait)
	}
	ran := e.ranOn(t, id)
	used := map[string]bool{}
	slurmIDs := map[uint64]bool{}
	for task, job := range jobs {
		key := keys[task]
		node := ran[key]
		if !slices.Contains(allNodes, node) {
			t.Errorf("task %s: squeue says it ran on %q (squeue: %v)", key, node, ran)
			continue
		}
		used[node] = true
		if job.JobID != key || job.DocID != e.docID(key) || strconv.FormatUint(deref(job.ArrayJobID), 10) != id ||
			deref(job.ArrayTaskID) != uint64(task) || job.HetJobID != nil {
			t.Errorf("task %s: job_id %q doc %q array %d_%d het %v", key, job.JobID, job.DocID,
				deref(job.ArrayJobID), deref(job.ArrayTaskID), job.HetJobID)
		}
		if slurmIDs[job.SlurmJobID] || job.SlurmJobID == 0 {
			t.Errorf("task %s: slurm_job_id %d is 0 or another task's", key, job.SlurmJobID)
		}
		slurmIDs[job.SlurmJobID] = true
		if !slices.Equal(job.Nodes, []string{node}) || job.NodeCount != 1 || job.State != jobmodel.StateCompleted {
			t.Errorf("task %s: nodes %v (%d) state %s, want [%s] COMPLETED", key, job.Nodes, job.NodeCount, job.State, node)
		}
		for _, m := range job.MissingMetrics {
			if strings.HasPrefix(m, "node:") || strings.HasPrefix(m, "samples_after_agent_loss:") {
				t.Errorf("task %s: missing %s", key, m)
			}
		}
		d := e.nodeDocOn(t, job.DocID, node)
		if d.Node != node || d.JobID != key || d.AgentState != jobmodel.AgentFinished || d.CPU == nil || d.CPU.CoreSeconds == nil {
			t.Errorf("task %s: node document on %s: %+v", key, node, d)
			continue
		}
		// One busy loop for 6 s on cores the nodes share with each other.
		t.Logf("task %s on %s: %.2f core-seconds, %d samples", key, node, *d.CPU.CoreSeconds, d.Sampling.Count)
		within(t, "task "+key+" node core_seconds", *d.CPU.CoreSeconds, 1, 7.5)
		if job.CPU == nil || job.CPU.CoreSeconds == nil {
			t.Errorf("task %s: job cpu %+v", key, job.CPU)
		} else {
			within(t, "task "+key+" job core_seconds (its one node's)", *job.CPU.CoreSeconds, *d.CPU.CoreSeconds-0.01, *d.CPU.CoreSeconds+0.01)
		}
		if job.Sampling.Count != d.Sampling.Count {
			t.Errorf("task %s: sampling.count %d, node's %d", key, job.Sampling.Count, d.Sampling.Count)
		}
		e.onlyOn(t, job.DocID, key, node)
	}
	t.Logf("array %s ran on %v", id, ran)
	if len(used) < 2 {
		t.Errorf("the %d tasks ran on %d node(s) (%v); the test needs them spread", tasks, len(used), ran)
	}
}

// A heterogeneous job whose two components run on different nodes, as
// another user, with different requests and different work (component 0
// burns CPU; component 1 holds 100 MiB, built twice by perl, so a peak of
// ~200 MiB under its 400 MiB limit, and sleeps): each component has its
// own "<id>+<offset>" job document with its own node, user, request and
// usage, and node documents and series on its own node only.
func TestHeterogeneousJobAcrossNodes(t *testing.T) {
	e := need(t)
	t.Parallel()
	script := filepath.Join(e.dir, "hetjob.sh")
	body := `#!/bin/sh
#SBATCH -J hetspread
#SBATCH -p multi
#SBATCH -w e2enode2
#SBATCH -N1
#SBATCH -n1
#SBATCH -c1
#SBATCH --mem=100M
#SBATCH hetjob
#SBATCH -p multi
#SBATCH -w e2enode3
#SBATCH -N1
#SBATCH -n1
#SBATCH -c2
#SBATCH --mem=400M
srun --het-group=0 sh -c 'timeout 6 sh -c "while :; do :; done"; exit 0' &
srun --het-group=1 perl -e '$a = "a" x (100*1024*1024); sleep 6' &
wait
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	id := e.submit(t, "--uid="+stack.TestUser, "--chdir=/tmp", script)
	het, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		node        string
		cpus, mem   int64
		busy        bool
		minPeakByte int64
	}{
		{"e2enode2", 1, 100 << 20, true, 0},
		{"e2enode3", 2, 400 << 20, false, 100 << 20},
	}
	jobs := make([]jobmodel.Job, len(want))
	for off := range want {
		jobs[off] = e.finalJob(t, e.docID(fmt.Sprintf("%s+%d", id, off)), jobWait)
	}
	ran := e.ranOn(t, id)
	t.Logf("heterogeneous job %s ran on %v", id, ran)
	for off, w := range want {
		job, key := jobs[off], fmt.Sprintf("%s+%d", id, off)
		if ran[key] != w.node {
			t.Errorf("component %s: squeue says it ran on %q, want %s (squeue: %v)", key, ran[key], w.node, ran)
		}
		if job.JobID != key || job.DocID != e.docID(key) || deref(job.HetJobID) != het || deref(job.HetJobOffset) != uint64(off) ||
			job.ArrayJobID != nil || job.SlurmJobID != het+uint64(off) {
			t.Errorf("component %s: job_id %q doc %q het %d+%d array %v slurm_job_id %d", key, job.JobID, job.DocID,
				deref(job.HetJobID), deref(job.HetJobOffset), job.ArrayJobID, job.SlurmJobID)
		}
		if job.User != stack.TestUser || deref(job.UID) != uint32(nobody) {
			t.Errorf("component %s: user %q uid %d, want nobody", key, job.User, deref(job.UID))
		}
		if !slices.Equal(job.Nodes, []string{w.node}) || job.NodeCount != 1 || job.State != jobmodel.StateCompleted {
			t.Errorf("component %s: nodes %v (%d) state %s, want [%s] COMPLETED", key, job.Nodes, job.NodeCount, job.State, w.node)
		}
		if deref(job.Requested.CPUs) != w.cpus || deref(job.Requested.MemoryBytes) != w.mem || deref(job.Requested.Nodes) != 1 {
			t.Errorf("component %s: requested cpus %d memory %d nodes %d, want its own %d, %d, 1", key,
				deref(job.Requested.CPUs), deref(job.Requested.MemoryBytes), deref(job.Requested.Nodes), w.cpus, w.mem)
		}
		for _, m := range job.MissingMetrics {
			if strings.HasPrefix(m, "node:") || strings.HasPrefix(m, "samples_after_agent_loss:") {
				t.Errorf("component %s: missing %s", key, m)
			}
		}
		d := e.nodeDocOn(t, job.DocID, w.node)
		if d.Node != w.node || d.JobID != key || d.AgentState != jobmodel.AgentFinished || d.CPU == nil || d.CPU.CoreSeconds == nil ||
			d.Memory == nil || d.Memory.PeakBytes == nil {
			t.Errorf("component %s: node document on %s: %+v", key, w.node, d)
			continue
		}
		if d.User != stack.TestUser || deref(d.UID) != uint32(nobody) || d.SlurmJobID != job.SlurmJobID {
			t.Errorf("component %s: node document user %q uid %d slurm_job_id %d", key, d.User, deref(d.UID), d.SlurmJobID)
		}
		cores, peak := *d.CPU.CoreSeconds, *d.Memory.PeakBytes
		t.Logf("component %s on %s: %.2f core-seconds, peak %d bytes", key, w.node, cores, peak)
		if w.busy {
			within(t, "component "+key+" core_seconds (the busy one)", cores, 1, 7.5)
			if peak >= 50<<20 {
				t.Errorf("component %s: peak %d, the other component's 100 MiB mixed in?", key, peak)
			}
		} else {
			within(t, "component "+key+" core_seconds (the sleeping one)", cores, 0, 0.9)
			if peak < w.minPeakByte {
				t.Errorf("component %s: peak %d, want at least the %d it held", key, peak, w.minPeakByte)
			}
		}
		if job.CPU == nil || job.Memory == nil {
			t.Errorf("component %s: job cpu %+v memory %+v", key, job.CPU, job.Memory)
		} else {
			within(t, "component "+key+" job core_seconds (its node's)", deref(job.CPU.CoreSeconds), cores-0.01, cores+0.01)
			within(t, "component "+key+" job max_node_peak_bytes (its node's)", float64(deref(job.Memory.MaxNodePeakBytes)), float64(peak), float64(peak))
		}
		e.onlyOn(t, job.DocID, key, w.node)
	}
	// The heterogeneous job's own id is component 0's Slurm job id: no
	// plain "<id>" document stands beside the components'.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if got, err := e.es.GetByIDs(ctx, jobmodel.SearchIndices(jobmodel.DefaultJobIndex), []string{e.docID(id), e.docID(strconv.FormatUint(het+1, 10))}); err != nil || len(got) != 0 {
		t.Errorf("plain job documents beside the components: %v (err %v)", keysOf(got), err)
	}
}

func keysOf[V any](m map[string]V) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	return k
}
