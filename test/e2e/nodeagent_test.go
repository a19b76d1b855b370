package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/test/stack"
)

// denseNode is the node of partition "dense", whose cores many jobs share.
const denseNode = "e2enode3"

// promValue runs an instant query and fails the test when Prometheus has
// no answer.
func (e *env) promValue(t *testing.T, q string) float64 {
	t.Helper()
	var v float64
	e.poll(t, 30*time.Second, q, func(ctx context.Context) bool {
		var ok bool
		v, ok, _ = stack.PromQuery(ctx, e.st.Prometheus.URL, q)
		return ok
	})
	return v
}

// Eight jobs starting in the same second on one node, half of them busy and
// half asleep: one node agent watches them all at once (its own health
// series says so), each job's documents hold its own usage, and the
// controller is asked far fewer times than twice per job.
func TestManyJobsOnANodeShareOneAgent(t *testing.T) {
	e := need(t)
	t.Parallel()
	const n = 8
	script := `if [ $((SLURM_ARRAY_TASK_ID % 2)) -eq 0 ]; then timeout 10 sh -c 'while :; do :; done' || true; else sleep 10; fi`
	id := e.submit(t, "-J", "dense", "-p", "dense", "-w", denseNode, "--array=1-"+strconv.Itoa(n), "-c", "1", "--mem=32M",
		"--wrap", script)
	jobs := map[int]jobmodel.Job{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for task := 1; task <= n; task++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := e.finalJob(t, e.docID(fmt.Sprintf("%s_%d", id, task)), 2*jobWait)
			mu.Lock()
			jobs[task] = j
			mu.Unlock()
		}()
	}
	wg.Wait()
	var slurmIDs []string
	for task, j := range jobs {
		slurmIDs = append(slurmIDs, strconv.FormatUint(j.SlurmJobID, 10))
		if j.State != jobmodel.StateCompleted || !slices.Equal(j.Nodes, []string{denseNode}) || j.Sampling.Count < 6 {
			t.Errorf("task %d: state %s nodes %v samples %d", task, j.State, j.Nodes, j.Sampling.Count)
			continue
		}
		cpu := deref(j.CPU.CoreSeconds)
		if busy := task%2 == 0; busy && cpu < 0.8 || !busy && cpu > 0.3 {
			t.Errorf("task %d (busy %v): %.2f core-seconds: another job's usage, or none of its own", task, busy, cpu)
		}
		if slices.ContainsFunc(j.MissingMetrics, func(m string) bool { return strings.Contains(m, "agent") }) {
			t.Errorf("task %d: missing %v", task, j.MissingMetrics)
		}
	}
	watched := e.promValue(t, fmt.Sprintf(`max(max_over_time(jobsight_agent_jobs_watched{cluster=%q,node=%q}[10m]))`, e.cluster, denseNode))
	if watched < n {
		t.Errorf("the node agent of %s watched at most %v jobs at once, want all %d in one process", denseNode, watched, n)
	}
	calls := 0
	for _, c := range squeueCalls(t, e) {
		if slices.ContainsFunc(c, func(id string) bool { return slices.Contains(slurmIDs, id) }) {
			calls++
		}
	}
	t.Logf("%d jobs: %d squeue calls in all (start and final state), %d node agents started on %s so far",
		n, calls, e.nodeAgentsStarted(denseNode), denseNode)
	if calls > n {
		t.Errorf("%d squeue calls for %d jobs that started and ended together, want them shared (at most %d)", calls, n, n)
	}
}

// Three jobs on one node while Prometheus is down for a minute: the node
// agent spools their series, and after Prometheus returns replays them in
// order, so every sample arrives and nothing is refused as out of order.
// Not parallel: Prometheus is shared by every test.
func TestPrometheusOutageWithThreeJobsOnANode(t *testing.T) {
	e := need(t)
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, e.submit(t, "-J", fmt.Sprintf("promout%d", i), "-p", "dense", "-w", denseNode, "-c", "1", "--mem=32M",
			"--wrap", "sleep 80"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), jobWait)
	defer cancel()
	for _, id := range ids {
		if _, err := e.st.Slurm.WaitJobState(ctx, id, "RUNNING"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(8 * time.Second)
	if err := e.st.Prometheus.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			_ = e.st.Prometheus.Restart(context.Background())
		}
	}()
	time.Sleep(60 * time.Second)
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	if err := e.st.Prometheus.Restart(rctx); err != nil {
		t.Fatal(err)
	}
	restarted = true
	for _, id := range ids {
		job := e.finalJob(t, e.docID(id), 2*jobWait)
		node := e.nodeDocOn(t, job.DocID, denseNode)
		// Every sample with a CPU reading is a point; the last one or two
		// (taken as the job's cgroup went) may have none. Losing the
		// minute of the outage would leave ~60 fewer.
		want := float64(node.Sampling.Count - 2)
		q := fmt.Sprintf(`count_over_time(jobsight_job_cpu_usage_seconds_total{cluster=%q,job_id=%q,node=%q}[15m])`, e.cluster, id, denseNode)
		var got float64
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(2 * time.Second) {
			qctx, qcancel := context.WithTimeout(context.Background(), 10*time.Second)
			got, _, _ = stack.PromQuery(qctx, e.st.Prometheus.URL, q)
			qcancel()
			if got >= want || time.Now().After(deadline) {
				break
			}
		}
		t.Logf("job %s: %v samples in Prometheus, %d taken", id, got, node.Sampling.Count)
		if got < want || got > float64(node.Sampling.Count) {
			t.Errorf("job %s: %v samples in Prometheus, want the %d taken (at least %v)", id, got, node.Sampling.Count, want)
		}
	}
	rejected, _ := filepath.Glob(filepath.Join(e.st.Agent.SpoolDir, "rejected", "*"))
	if len(rejected) > 0 {
		t.Errorf("%d spooled batches rejected: %v", len(rejected), rejected)
	}
	if v, ok, _ := stack.PromQuery(context.Background(), e.st.Prometheus.URL,
		fmt.Sprintf(`sum(jobsight_agent_spool_set_aside_total{cluster=%q})`, e.cluster)); ok && v > 0 {
		t.Errorf("jobsight_agent_spool_set_aside_total = %v", v)
	}
}

// A job submitted with --jobsight=off is not watched: no documents, no
// series, and no agent mentions it.
func TestOptedOutJobIsNotWatched(t *testing.T) {
	e := need(t)
	t.Parallel()
	id := e.submit(t, "-J", "private", "--jobsight=off", "-p", "dense", "-w", denseNode, "-c", "1", "--mem=32M", "--wrap", "sleep 4")
	watched := e.submit(t, "-J", "watched", "-p", "dense", "-w", denseNode, "-c", "1", "--mem=32M", "--wrap", "sleep 4")
	ctx, cancel := context.WithTimeout(context.Background(), jobWait)
	defer cancel()
	if _, err := e.st.Slurm.WaitJobState(ctx, id, "COMPLETED"); err != nil {
		t.Fatal(err)
	}
	e.finalJob(t, e.docID(watched), jobWait) // the node's agent was alive and writing meanwhile
	got, err := e.es.GetByIDs(ctx, jobmodel.SearchIndices(jobmodel.DefaultJobIndex), []string{e.docID(id)})
	if err != nil {
		t.Fatal(err)
	}
	if got[e.docID(id)] != nil {
		t.Errorf("an opted-out job has a document: %s", got[e.docID(id)])
	}
	if v, ok, _ := stack.PromQuery(ctx, e.st.Prometheus.URL,
		fmt.Sprintf(`count(count_over_time({__name__=~"jobsight_job_.+",cluster=%q,job_id=%q}[15m]))`, e.cluster, id)); ok && v > 0 {
		t.Errorf("an opted-out job has %v series", v)
	}
	b, _ := os.ReadFile(e.st.Agent.Log)
	if strings.Contains(string(b), "job_id="+id+" ") {
		t.Errorf("the agent log mentions the opted-out job %s", id)
	}
}
