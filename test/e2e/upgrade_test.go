package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/jobagent"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/test/stack"
)

// An upgrade under running jobs, as the package's post-install does it:
// four jobs run on a node (one busy, three asleep) when a new agent
// version is installed over the old executable and `jobsight-agent
// takeover` runs. The old node agent hands every job over (a last sample,
// a durable checkpoint, no final document) and execs the new executable,
// which resumes them. Every job's final document is whole (completed, no
// gap, no agent named missing, every sample kept), and no series of any
// job has a gap longer than two sampling intervals in Prometheus. Not
// parallel: it replaces the agent every launch runs.
func TestAgentUpgradedUnderFourRunningJobs(t *testing.T) {
	e := need(t)
	const interval = time.Second // test/stack's agent.yaml
	ctx, cancel := context.WithTimeout(context.Background(), 3*jobWait)
	defer cancel()

	// The new version, built before the jobs start.
	oldVersion := stack.AgentVersion(ctx, "../..")
	newVersion := oldVersion + "-upgrade"
	fresh := filepath.Join(e.dir, "jobsight-agent.new")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w -X github.com/jobsight/jobsight/agent/jobagent.Version="+newVersion,
		"-o", fresh, "./cmd/jobsight-agent")
	build.Dir = "../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the new agent: %v\n%s", err, out)
	}
	kept := filepath.Join(e.dir, "jobsight-agent.old")
	if err := copyFile(e.agent, kept); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// The build's version back for the tests after this one (their
		// documents name it): installed, and taken over to if an agent
		// still runs.
		if err := os.Rename(kept, e.agent); err != nil {
			t.Errorf("restoring the agent: %v", err)
			return
		}
		out, err := exec.Command(e.agent, "takeover", "--config", e.st.Agent.Config).CombinedOutput()
		t.Logf("takeover back to %s: %v\n%s", oldVersion, err, out)
	}()

	const run = 45
	ids := make([]string, 4)
	for i := range ids {
		script := fmt.Sprintf("sleep %d", run)
		if i == 0 {
			script = fmt.Sprintf("timeout %d sh -c 'while :; do :; done' || true", run)
		}
		ids[i] = e.submit(t, "-J", fmt.Sprintf("upgrade%d", i), "-p", "dense", "-w", denseNode, "-c", "1", "--mem=32M", "--wrap", script)
	}
	for _, id := range ids {
		if _, err := e.st.Slurm.WaitJobState(ctx, id, "RUNNING"); err != nil {
			t.Fatal(err)
		}
	}
	var before jobagent.Status
	e.poll(t, jobWait, "the node agent watching all four jobs", func(context.Context) bool {
		st, err := jobagent.AgentStatus(e.st.Agent.StateDir, denseNode)
		before = st
		return err == nil && st.Jobs >= 4
	})
	time.Sleep(10 * time.Second) // samples, flushes and in-place checkpoints under the old agent

	// The package's upgrade: the new file renamed over the old (dpkg's
	// way), then its post-install's takeover.
	if err := copyFile(fresh, e.agent+".dpkg-new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(e.agent+".dpkg-new", e.agent); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	out, err := exec.CommandContext(ctx, e.agent, "takeover", "--config", e.st.Agent.Config).CombinedOutput()
	took := time.Since(began)
	t.Logf("takeover (%.1f s):\n%s", took.Seconds(), out)
	if err != nil {
		t.Fatalf("takeover: %v", err)
	}
	if want := fmt.Sprintf("node %s: %s (pid %d) handed %d jobs over to %s", denseNode, before.Version, before.PID, before.Jobs, newVersion); !strings.Contains(string(out), want) {
		t.Errorf("takeover said\n%s\nwant a line with %q", out, want)
	}
	after, err := jobagent.AgentStatus(e.st.Agent.StateDir, denseNode)
	if err != nil || after.Version != newVersion || after.Since == before.Since || after.Jobs < 4 {
		t.Fatalf("after the takeover the node agent says %+v (%v), want %s watching the four jobs", after, err, newVersion)
	}

	for i, id := range ids {
		job := e.finalJob(t, e.docID(id), 2*jobWait)
		node := e.nodeDocOn(t, job.DocID, denseNode)
		if job.State != jobmodel.StateCompleted || job.Sampling.Gaps != 0 || node.AgentState != jobmodel.AgentFinished {
			t.Errorf("job %s: state %s, sampling %+v, node agent_state %q: want completed, no gap, finished", id, job.State, job.Sampling, node.AgentState)
		}
		if slices.ContainsFunc(job.MissingMetrics, func(m string) bool { return strings.Contains(m, "agent") }) {
			t.Errorf("job %s: missing %v", id, job.MissingMetrics)
		}
		// A sample a second for the job's 45 s, less its start and end.
		if job.Sampling.Count < run-8 {
			t.Errorf("job %s: %d samples over %d s at 1 s: samples were lost at the handover", id, job.Sampling.Count, run)
		}
		if i == 0 {
			within(t, "the busy job's core-seconds, counted across the handover", deref(job.CPU.CoreSeconds), 0.6*run, 1.1*run)
		}
		q := fmt.Sprintf(`jobsight_job_cpu_usage_seconds_total{cluster=%q,job_id=%q,node=%q}[15m]`, e.cluster, id, denseNode)
		var series map[string][]time.Time
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(2 * time.Second) {
			qctx, qcancel := context.WithTimeout(ctx, 10*time.Second)
			series, err = stack.PromSampleTimes(qctx, e.st.Prometheus.URL, q)
			qcancel()
			if err == nil && len(series) == 1 && int64(len(firstSeries(series))) >= job.Sampling.Count-2 || time.Now().After(deadline) {
				break
			}
		}
		if err != nil || len(series) != 1 {
			t.Errorf("job %s: %d series for %s (%v), want one", id, len(series), q, err)
			continue
		}
		times := firstSeries(series)
		var gap time.Duration
		var at time.Time
		for k := 1; k < len(times); k++ {
			if d := times[k].Sub(times[k-1]); d > gap {
				gap, at = d, times[k-1]
			}
		}
		t.Logf("job %s: %d samples in Prometheus, %d in the document; longest gap %.2f s (at %s; takeover began %s)",
			id, len(times), job.Sampling.Count, gap.Seconds(), at.Format("15:04:05.000"), began.Format("15:04:05.000"))
		if gap > 2*interval {
			t.Errorf("job %s: its CPU series has a gap of %.2f s at %s, longer than two intervals", id, gap.Seconds(), at.Format("15:04:05.000"))
		}
		if int64(len(times)) < job.Sampling.Count-2 {
			t.Errorf("job %s: %d samples in Prometheus, %d taken", id, len(times), job.Sampling.Count)
		}
	}
}

func firstSeries(m map[string][]time.Time) []time.Time {
	for _, v := range m {
		return v
	}
	return nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}
