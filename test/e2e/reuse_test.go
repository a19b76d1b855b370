package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/test/stack"
)

// TestReusedIDAfterNodeCrashAndControllerReset: a job's agent is killed,
// then the node goes down hard (no epilog, so no stop ever comes for the
// job) and slurmctld loses its state, so the next job gets the same id on
// the same node. The earlier job must end up final (lost, state unknown,
// with what its agent sampled) instead of RUNNING forever, and the new
// job must be stored as its own, with none of the earlier job's samples. It runs on a cluster of its own: resetting slurmctld
// would lose the other tests' jobs.
func TestReusedIDAfterNodeCrashAndControllerReset(t *testing.T) {
	e := need(t)
	t.Parallel()
	const name = "reuse"
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := stack.Up(ctx, dir, stack.Options{
		Slurm: stack.SlurmOptions{ClusterName: name, NodeName: "rnode", GPUs: -1},
		Agent: &stack.AgentOptions{Binary: e.agent, Plugin: e.plugin, Extra: "analysis: {short_job: 5s}\n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Down()
	defer func() {
		if t.Failed() {
			stack.DumpLog(st.Agent.Log, 12000)
			b, _ := os.ReadFile(st.Slurm.SlurmdLog)
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, "rolog") || strings.Contains(l, "spank") || strings.Contains(l, "jobsight") || strings.Contains(l, "pilog") {
					t.Log(l)
				}
			}
		}
	}()
	es, err := elasticsearch.New(elasticsearch.Config{URLs: []string{st.Elasticsearch.URL},
		Username: st.Elasticsearch.User, Password: st.Elasticsearch.Password, CACertFile: st.Elasticsearch.CACertFile})
	if err != nil {
		t.Fatal(err)
	}
	sbatch := func(args ...string) string {
		id, err := st.Slurm.Sbatch(ctx, append([]string{"--output=/dev/null", "--chdir=/tmp"}, args...)...)
		if err != nil {
			t.Fatalf("sbatch: %v", err)
		}
		return id
	}

	// The earlier job: its agent checkpoints a few samples, then dies.
	earlier := sbatch("-J", "earlier", "--wrap", "sleep 301")
	jobs := filepath.Join(st.Agent.StateDir, "jobs")
	// The checkpoint and its two in-place slots (written at every flush;
	// the checkpoint itself only once a minute): any of them with samples.
	base := filepath.Join(jobs, fmt.Sprintf("%s_%s@rnode.checkpoint", name, earlier))
	e.poll(t, time.Minute, "the earlier job's checkpoint with samples", func(context.Context) bool {
		for _, p := range []string{base + ".json", base + ".2.json", base + ".3.json"} {
			b, err := os.ReadFile(p)
			var ck struct {
				State struct {
					Count int `json:"count"`
				} `json:"state"`
			}
			if err == nil && json.Unmarshal(b, &ck) == nil && ck.State.Count >= 3 {
				return true
			}
		}
		return false
	})
	b, err := os.ReadFile(filepath.Join(st.Agent.StateDir, "agent@rnode.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the node agent %d: %v", pid, err)
	}

	// The node crashes (no epilog) and slurmctld comes back without its state.
	if err := st.Slurm.CrashNodes(); err != nil {
		t.Fatal(err)
	}
	if err := st.Slurm.ResetController(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Slurm.StartSlurmd(ctx); err != nil {
		t.Fatal(err)
	}

	later := sbatch("-J", "later", "--wrap", "sleep 8")
	if later != earlier {
		t.Fatalf("after the reset the new job got id %s, not the earlier job's %s: the test cannot reuse an id", later, earlier)
	}

	// Both jobs' documents, final: the earlier under the plain id, the
	// later under the id qualified by its submit time.
	var got map[string]jobmodel.Job
	e.poll(t, 90*time.Second, "final documents of both jobs", func(ctx context.Context) bool {
		raw, err := es.Search(ctx, jobmodel.SearchIndices(jobmodel.DefaultJobIndex), []byte(fmt.Sprintf(`{"size":10,"query":{"term":{"cluster":%q}}}`, name)))
		if err != nil {
			return false
		}
		var ans struct {
			Hits struct {
				Hits []struct {
					Source jobmodel.Job `json:"_source"`
				} `json:"hits"`
			} `json:"hits"`
		}
		if json.Unmarshal(raw, &ans) != nil {
			return false
		}
		got = map[string]jobmodel.Job{}
		finals := 0
		for _, h := range ans.Hits.Hits {
			got[h.Source.DocID] = h.Source
			if h.Source.Final {
				finals++
			}
		}
		return finals == 2
	})
	for id, j := range got {
		t.Logf("%s: final %v state %s samples %d missing %v", id, j.Final, j.State, j.Sampling.Count, j.MissingMetrics)
	}
	old, ok := got[name+":"+earlier]
	if !ok {
		t.Fatalf("no document for the earlier job under %s:%s: %v", name, earlier, keys(got))
	}
	if old.State != jobmodel.StateUnknown || !slices.Contains(old.MissingMetrics, "samples_after_agent_loss:rnode") ||
		old.Sampling.Count < 3 {
		t.Errorf("earlier job: state %s, missing %v, %d samples; want UNKNOWN, lost on rnode, its own samples",
			old.State, old.MissingMetrics, old.Sampling.Count)
	}
	// Every series of this job id is the earlier job's (the later one was
	// never sampled) and carries its run (its submit time), which is what
	// keeps them apart from any later job given the same id.
	if run := jobmodel.RunOf(old.SubmitTime); run == "" {
		t.Errorf("earlier job: no submit time, so no run label")
	} else {
		var newer jobmodel.Job
		for id, j := range got {
			if strings.HasPrefix(id, name+":"+later+"@") {
				newer = j
			}
		}
		laterRun := jobmodel.RunOf(newer.SubmitTime)
		sel := fmt.Sprintf(`{cluster=%q,job_id=%q,%s%%s%q}[15m]`, name, earlier, jobmodel.RunLabel, run)
		mine, _, _ := stack.PromQuery(ctx, st.Prometheus.URL, "count(last_over_time(jobsight_job_cpu_usage_seconds_total"+fmt.Sprintf(sel, "=")+"))")
		others := fmt.Sprintf(`{cluster=%q,job_id=%q,%s!=%q,%s!=%q}[15m]`, name, earlier, jobmodel.RunLabel, run, jobmodel.RunLabel, laterRun)
		other, ok, err := stack.PromQuery(ctx, st.Prometheus.URL, "count(last_over_time(jobsight_job_cpu_usage_seconds_total"+others+"))")
		if err != nil || (ok && other > 0) {
			t.Errorf("%v CPU series of job id %s belong to neither job's run (%s, %s): %v", other, earlier, run, laterRun, err)
		}
		t.Logf("earlier job: %v CPU series labelled with its run (0 when the agent was killed before its first push)", mine)
	}
	var newer jobmodel.Job
	for id, j := range got {
		if strings.HasPrefix(id, name+":"+later+"@") {
			newer = j
		}
	}
	if newer.DocID == "" {
		t.Fatalf("no document for the later job under %s:%s@<submit>: %v", name, later, keys(got))
	}
	if st.Slurm.Install.Release == "22.05" {
		// slurmd 22.05 remembers the id from the earlier job's credential
		// and runs no prolog for it again (the later job's epilog comes,
		// its prolog never does), so no agent sampled the later job: its
		// document must say so, and hold nothing of the earlier job.
		if newer.State != jobmodel.StateCompleted || newer.Sampling.Count != 0 ||
			!slices.Contains(newer.MissingMetrics, "samples_after_agent_loss:rnode") {
			t.Errorf("later job %s: state %s, %d samples, missing %v: want COMPLETED, none of the earlier job's samples, the loss named",
				newer.DocID, newer.State, newer.Sampling.Count, newer.MissingMetrics)
		}
		return
	}
	// Later releases run the later job's prolog: it is sampled on its own,
	// from its own start, and the two jobs' SLUIDs told them apart.
	if newer.State != jobmodel.StateCompleted || newer.Sampling.Count < 3 || slices.Contains(newer.MissingMetrics, "samples_after_agent_loss:rnode") ||
		newer.StartTime == nil || old.EndTime == nil || newer.StartTime.Before(old.EndTime.Time) {
		t.Errorf("later job %s: state %s, %d samples, missing %v, start %v (earlier ended %v): want COMPLETED, its own samples from its own start",
			newer.DocID, newer.State, newer.Sampling.Count, newer.MissingMetrics, newer.StartTime, old.EndTime)
	}
	if newer.SLUID == "" || old.SLUID == "" || newer.SLUID == old.SLUID {
		t.Errorf("SLUIDs: earlier %q, later %q: want two different ones", old.SLUID, newer.SLUID)
	}
}

func keys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
