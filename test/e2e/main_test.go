// Package e2e tests the whole collection path on real servers: a Slurm
// cluster loading the built SPANK plugin, whose agents write to a real
// Elasticsearch-API server and a real Prometheus. Jobs are submitted with
// sbatch and the stored documents and series are checked by content.
//
// It needs root, Slurm, cgroup v1, a C compiler and Prometheus; without them
// it skips (and fails with CI=true). JOBSIGHT_TEST_ES_URL points it at a
// real Elasticsearch instead of ZincSearch.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/test/stack"
)

// env is the stack shared by the tests of this package.
type env struct {
	st      *stack.Stack
	es      *elasticsearch.Client
	cluster string
	node    string
	agent   string // the built agent binary
	plugin  string // the built SPANK plugin
	dir     string
}

var shared *env
var setupErr error

const cluster = "e2e"

func TestMain(m *testing.M) {
	code := func() int {
		if os.Geteuid() != 0 {
			setupErr = fmt.Errorf("needs root")
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "jobsight-e2e-")
		if err != nil {
			setupErr = err
			return m.Run()
		}
		defer os.RemoveAll(dir)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		agent, plugin, err := stack.BuildAgent(ctx, "../..", filepath.Join(dir, "bin"))
		if err != nil {
			setupErr = err
			return m.Run()
		}
		// The agents run squeue through a wrapper that logs which jobs
		// each call is for (the agent names them in its environment), so
		// tests can count the calls jobs cost slurmctld.
		in, err := stack.FindSlurm(ctx, "")
		if err != nil {
			setupErr = err
			return m.Run()
		}
		wrapper := filepath.Join(dir, "bin", "squeue-counting")
		script := fmt.Sprintf("#!/bin/sh\necho \"jobs $JOBSIGHT_LOOKUP_JOBS\" >> %s\nexec %s \"$@\"\n",
			filepath.Join(dir, "squeue-calls.log"), in.Bin("squeue"))
		if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
			setupErr = err
			return m.Run()
		}
		st, err := stack.Up(ctx, dir, stack.Options{
			// A NodeName that is not the host name, as on many clusters.
			// Eight GPUs declared to Slurm, read from the simulated source.
			// Two more nodes on this host (partition "multi") for multi-node jobs.
			Slurm: stack.SlurmOptions{ClusterName: cluster, NodeName: "e2enode", GPUs: 8, ExtraNodes: []string{"e2enode2", "e2enode3"}, Dense: true},
			Agent: &stack.AgentOptions{Binary: agent, Plugin: plugin,
				// Test jobs run seconds, not the 10 minutes the analysis
				// judges by default.
				Extra: "store_job_name: true\ngpu: {backend: simulated, simulated: {devices: 8, profile: one-of-n}}\n" +
					"analysis: {short_job: 5s}\n", Squeue: wrapper},
		})
		if err != nil {
			setupErr = err
			return m.Run()
		}
		defer func() {
			if os.Getenv("JOBSIGHT_E2E_KEEP") != "" {
				st.Describe(os.Stderr)
				fmt.Fprintln(os.Stderr, "JOBSIGHT_E2E_KEEP set: sleeping 1h before teardown")
				time.Sleep(time.Hour)
			}
			st.Down()
		}()
		es, err := elasticsearch.New(elasticsearch.Config{URLs: []string{st.Elasticsearch.URL},
			Username: st.Elasticsearch.User, Password: st.Elasticsearch.Password, CACertFile: st.Elasticsearch.CACertFile})
		if err != nil {
			setupErr = err
			return m.Run()
		}
		shared = &env{st: st, es: es, cluster: cluster, node: st.Slurm.NodeName, agent: agent, plugin: plugin, dir: dir}
		code := m.Run()
		if code != 0 {
			stack.DumpLog(st.Agent.Log, 20000)
		}
		return code
	}()
	os.Exit(code)
}

// need returns the shared stack or skips (fails with CI=true).
func need(t *testing.T) *env {
	t.Helper()
	stack.RequireCluster(t, shared != nil, setupErr)
	return shared
}

// submit runs sbatch and returns the job id.
func (e *env) submit(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := e.st.Slurm.Sbatch(ctx, append([]string{"--output=/dev/null", "--chdir=" + e.dir}, args...)...) // a later --chdir wins
	if err != nil {
		t.Fatalf("sbatch %v: %v", args, err)
	}
	return id
}

// finalJob waits until the job document with docID is final.
func (e *env) finalJob(t *testing.T, docID string, within time.Duration) jobmodel.Job {
	t.Helper()
	var job jobmodel.Job
	e.pollExplain(t, within, "final job document "+docID, func(ctx context.Context) bool {
		got, err := e.es.GetByIDs(ctx, jobmodel.SearchIndices(jobmodel.DefaultJobIndex), []string{docID})
		if err != nil || got[docID] == nil {
			return false
		}
		job = jobmodel.Job{}
		if err := json.Unmarshal(got[docID], &job); err != nil {
			t.Fatalf("job document %s does not decode: %v\n%s", docID, err, got[docID])
		}
		return job.Final
	}, func() string { return e.slurmSays(docID) + e.whyNoFinal(job, docID) })
	return job
}

// whyNoFinal is what a failure to see a job's final document needs
// beside Slurm's word: whether a document exists at all (and how far it
// got), and what the agents and slurmd logged of the job. Without it a
// CI failure shows only the tail of a log shared by every test.
func (e *env) whyNoFinal(job jobmodel.Job, docID string) string {
	_, key, _ := strings.Cut(docID, ":")
	var b strings.Builder
	if job.DocID == "" {
		b.WriteString("; no document stored")
	} else {
		fmt.Fprintf(&b, "; stored document: final=%v state=%q samples=%d updated_at=%v", job.Final, job.State, job.Sampling.Count, job.UpdatedAt)
	}
	needles := []string{"job_id=" + key + " ", "job_id=" + key + "\n", "e2e:" + key, "job_" + key, "JobId=" + key + " ", "job " + key + " ", "StepId=" + key + "."}
	logs := append([]string{e.st.Agent.Log}, e.slurmLogs()...)
	for _, l := range logs {
		if lines := stack.LinesMentioning(l, needles, 60); lines != "" {
			fmt.Fprintf(&b, "\n--- %s, lines of job %s ---\n%s", filepath.Base(l), key, lines)
		}
	}
	return b.String()
}

// slurmLogs are the test cluster's slurmctld and slurmd logs.
func (e *env) slurmLogs() []string {
	logs, _ := filepath.Glob(filepath.Join(filepath.Dir(e.st.Slurm.SlurmdLog), "slurm*.log"))
	return logs
}

// slurmSays is what squeue says of the job of docID ("cluster:key"), for
// a failure message: whether it is still pending (and why), running, or
// ended, so a missing document is told apart from a job Slurm never ran.
func (e *env) slurmSays(docID string) string {
	_, key, _ := strings.Cut(docID, ":")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := e.st.Slurm.Squeue(ctx, "-h", "--states=all", "-j", key, "-o", "%i %T %r %N start=%S end=%e")
	if err != nil {
		return fmt.Sprintf("squeue -j %s: %v", key, err)
	}
	return "squeue: " + strings.TrimSpace(out)
}

// nodeDoc returns the node document of a job on the test node.
func (e *env) nodeDoc(t *testing.T, jobDocID string) jobmodel.Node {
	t.Helper()
	id := jobmodel.NodeDocID(jobDocID, e.node)
	var node jobmodel.Node
	e.poll(t, 30*time.Second, "node document "+id, func(ctx context.Context) bool {
		got, err := e.es.GetByIDs(ctx, jobmodel.SearchIndices(jobmodel.DefaultNodeIndex), []string{id})
		if err != nil || got[id] == nil {
			return false
		}
		node = jobmodel.Node{}
		return json.Unmarshal(got[id], &node) == nil && node.Final
	})
	return node
}

func (e *env) poll(t *testing.T, within time.Duration, what string, ok func(context.Context) bool) {
	t.Helper()
	e.pollExplain(t, within, what, ok, nil)
}

// pollExplain is poll whose failure message ends with explain's answer.
func (e *env) pollExplain(t *testing.T, within time.Duration, what string, ok func(context.Context) bool, explain func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		done := ok(ctx)
		cancel()
		if done {
			return
		}
		if time.Now().After(deadline) {
			if explain != nil {
				t.Fatalf("waited %s for %s (%s)", within, what, explain())
			}
			t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// promMax returns the largest value of a job series over the last 15 minutes.
func (e *env) promMax(t *testing.T, metric, jobKey string) float64 {
	t.Helper()
	q := fmt.Sprintf(`max(max_over_time(%s{cluster=%q,job_id=%q,node=%q}[15m]))`, metric, e.cluster, jobKey, e.node)
	var v float64
	e.poll(t, 30*time.Second, "series "+q, func(ctx context.Context) bool {
		var ok bool
		v, ok, _ = stack.PromQuery(ctx, e.st.Prometheus.URL, q)
		return ok
	})
	return v
}

func (e *env) docID(jobKey string) string { return e.cluster + ":" + jobKey }

// nodeAgentPID returns the pid of the node agent running on node (0 when
// none runs).
func (e *env) nodeAgentPID(node string) int { return e.st.Agent.NodeAgentPID(node) }

// nodeAgentsStarted counts the node agents that started on node.
func (e *env) nodeAgentsStarted(node string) int {
	b, _ := os.ReadFile(e.st.Agent.Log)
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `msg="node agent started"`) && strings.Contains(l, " node="+node+" ") {
			n++
		}
	}
	return n
}

func within(t *testing.T, what string, got, lo, hi float64) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s = %v, want within [%v, %v]", what, got, lo, hi)
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
