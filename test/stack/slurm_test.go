package stack_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/test/stack"
)

func startSlurm(t *testing.T, opts stack.SlurmOptions) *stack.Slurm {
	t.Helper()
	stack.Require(t, "root", "slurm", "cgroupv1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := stack.StartSlurm(ctx, testDir(t), opts)
	if err != nil {
		t.Fatalf("StartSlurm: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return s
}

func TestSlurmRunsJobsInCgroups(t *testing.T) {
	s := startSlurm(t, stack.SlurmOptions{ClusterName: "testclu"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	id, err := s.Sbatch(ctx, "--output=/dev/null", "--wrap", "sleep 4")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitJobState(ctx, id, "RUNNING"); err != nil {
		t.Fatal(err)
	}
	// RUNNING is set when the job is allocated; slurmd creates the
	// cgroups a moment later.
	var dirs []string
	var haveMem, haveCPU bool
	for ctx.Err() == nil && !(haveMem && haveCPU) {
		time.Sleep(100 * time.Millisecond)
		dirs = s.JobCgroupDirs(id)
		for _, d := range dirs {
			haveMem = haveMem || strings.Contains(d, "/memory/")
			haveCPU = haveCPU || strings.Contains(d, "/cpuacct/")
		}
	}
	if !haveMem || !haveCPU {
		t.Errorf("job %s cgroups = %v, want memory and cpuacct job cgroups", id, dirs)
	}
	if st, err := s.WaitJobState(ctx, id, "COMPLETED"); err != nil {
		t.Fatalf("job %s: %v", id, err)
	} else if st != "COMPLETED" {
		t.Errorf("state %s", st)
	}
	out, err := s.Scontrol(ctx, "show", "config")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "ClusterName             = testclu") {
		t.Errorf("scontrol show config does not name cluster testclu:\n%s", out)
	}
}

func TestSlurmOOMKillsJobOverMemory(t *testing.T) {
	s := startSlurm(t, stack.SlurmOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Allocate 200 MiB in a job limited to 50 MiB.
	id, err := s.Sbatch(ctx, "--output=/dev/null", "--mem=50M", "--wrap", `perl -e '$x = "a" x (200<<20); sleep 2'`)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := s.WaitJobState(ctx, id, "OUT_OF_MEMORY")
	if st != "OUT_OF_MEMORY" {
		log, _ := os.ReadFile(filepath.Join(s.Dir, "log", "slurmd.log"))
		t.Errorf("job over its memory ended %q, want OUT_OF_MEMORY; slurmd log:\n%s", st, log)
	}
}

// testDir returns a fresh directory, kept after the test when
// JOBSIGHT_KEEP_TEST_DIRS=1 (to read the daemons' logs).
func testDir(t *testing.T) string {
	if os.Getenv("JOBSIGHT_KEEP_TEST_DIRS") != "1" {
		return t.TempDir()
	}
	d, err := os.MkdirTemp("", "jobsight-"+t.Name()+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("keeping %s", d)
	return d
}
