package jobagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/deliver"
	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/test/stack"
)

// fullDisk mounts a 64 KiB tmpfs (root only) and fills it; free removes
// the filler. Without the right to mount, the test is skipped (failed
// with CI=true).
func fullDisk(t *testing.T) (dir string, free func()) {
	t.Helper()
	stack.Require(t, "root")
	dir = t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		stack.Unavailable(t, "needs to mount a small tmpfs for a full spool disk (mount -t tmpfs): %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
	}
	f.Close()
	return dir, func() {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
}

// A job's final documents that can neither be stored (Elasticsearch down)
// nor spooled (the spool's disk is full) are not lost: the checkpoint, their
// last copy, stays (marked finalized), the health series count the job as
// unsaved, and once the disk has room the next try spools them — as they
// were made (the same agent state) — and only then removes the checkpoint.
func TestFinalDocumentsKeepTheCheckpointUntilSpooled(t *testing.T) {
	spoolDir, free := fullDisk(t)
	slurm := &fakeSlurm{state: jobmodel.StateCompleted}
	a := testAgent(t, slurm, nil, noCgroup)
	a.Config.Elasticsearch.URLs = []string{deadESURL(t)}
	a.Config.Elasticsearch.Timeout = 2 * time.Second
	a.Config.Spool.Dir, a.Config.Spool.Linger = spoolDir, 0
	out, err := deliver.New(context.Background(), a.Config, a.Health, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	a.Outputs = out

	job, _ := slurm.Lookup(context.Background(), "c", 9, 0)
	state := monitor.NewNodeState(time.Unix(1_700_000_100, 0), time.Second, 0)
	for i := 0; i < 5; i++ {
		s := collector.Sample{Time: time.Unix(1_700_000_100+int64(i), 0), CPUUsageNanos: uint64(i) * 2e9,
			Missing: collector.AllMetrics &^ collector.MetricCPU}
		state.Add(&s)
	}
	f := jobFiles(a.Config.StateDir, "c", "n1", 9)
	if err := ensureStateDirs(a.Config.StateDir); err != nil {
		t.Fatal(err)
	}
	if err := f.saveCheckpoint(&Checkpoint{Job: job, Node: nodeTemplate(job, "n1"), State: state, Leader: true}); err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(context.Background(), 9); err != nil {
		t.Fatal(err)
	}
	ck, err := f.loadCheckpoint()
	if err != nil {
		t.Fatalf("the checkpoint, the final documents' last copy, is gone: %v", err)
	}
	if ck.Finalized == nil || ck.Finalized.AgentState != jobmodel.AgentLost {
		t.Errorf("kept checkpoint's finalized mark: %+v", ck.Finalized)
	}
	if f.isDone(timeOf(job.SubmitTime)) {
		t.Error("the job is marked done on this node while its final documents are nowhere")
	}
	if g := gaugeValue(t, a, "jobsight_agent_unsaved_final_jobs"); g != 1 {
		t.Errorf("jobsight_agent_unsaved_final_jobs = %v, want 1", g)
	}
	if n := out.Pending(); n != 0 {
		t.Fatalf("%d items in a full spool?", n)
	}

	free()
	if err := a.Stop(context.Background(), 9); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.checkpoint()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("checkpoint after the documents were spooled: %v", err)
	}
	if n := out.Pending(); n != 3 {
		t.Errorf("%d items in the spool, want the final node and job documents and the analysis", n)
	}
	if g := gaugeValue(t, a, "jobsight_agent_unsaved_final_jobs"); g != 0 {
		t.Errorf("jobsight_agent_unsaved_final_jobs = %v after spooling, want 0", g)
	}
}

// deadESURL is the URL of a port nothing listens on: a store that is down.
func deadESURL(t *testing.T) string {
	t.Helper()
	port, err := stack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}
