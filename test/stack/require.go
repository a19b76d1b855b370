package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Unavailable reports that a test prerequisite is missing: the test is
// skipped with the message, except when the environment has CI=true, where it
// fails, so that CI cannot pass by skipping every integration test.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("prerequisite missing on CI (CI=true): %s", msg)
	}
	t.Skipf("skipping: %s (set CI=true to make this a failure)", msg)
}

// Require checks each named prerequisite and calls Unavailable for the first
// one that is missing. Known names: "root" (euid 0), "cgroupv1" (cgroup v1
// memory and cpuacct hierarchies mounted under /sys/fs/cgroup), "slurm"
// (munged, slurmctld, slurmd, sbatch, scontrol, squeue, scancel, sinfo in
// PATH), and "cc" (a C compiler and Slurm's spank.h). Any other name is
// looked up as an executable in PATH.
func Require(t testing.TB, needs ...string) {
	t.Helper()
	for _, need := range needs {
		switch need {
		case "root":
			if os.Geteuid() != 0 {
				Unavailable(t, "needs root (euid is %d)", os.Geteuid())
			}
		case "cgroupv1":
			for _, c := range []string{"memory", "cpuacct"} {
				if _, err := os.Stat("/sys/fs/cgroup/" + c + "/memory.limit_in_bytes"); c == "memory" && err != nil {
					Unavailable(t, "needs cgroup v1 memory hierarchy at /sys/fs/cgroup/memory: %v", err)
				}
				if _, err := os.Stat("/sys/fs/cgroup/" + c + "/cpuacct.usage"); c == "cpuacct" && err != nil {
					Unavailable(t, "needs cgroup v1 cpuacct hierarchy at /sys/fs/cgroup/cpuacct: %v", err)
				}
			}
		case "slurm":
			for _, bin := range []string{"munged", "setpriv"} {
				if _, err := exec.LookPath(bin); err != nil {
					Unavailable(t, "needs munge (Debian munge) and setpriv: %s not in PATH", bin)
				}
			}
			if _, err := FindSlurm(context.Background(), ""); err != nil {
				Unavailable(t, "needs Slurm %s (%s): %v", SlurmRelease(), EnvSlurm, err)
			}
		case "cc":
			if _, err := exec.LookPath("cc"); err != nil {
				Unavailable(t, "needs a C compiler (cc) to build the SPANK plugin")
			}
			if in, err := FindSlurm(context.Background(), ""); err == nil {
				if _, err := os.Stat(filepath.Join(in.Include(), "slurm", "spank.h")); err != nil {
					Unavailable(t, "needs spank.h of %s: %v", in, err)
				}
			}
		case "sdiag":
			if in, err := FindSlurm(context.Background(), ""); err != nil || func() bool { _, err := exec.LookPath(in.Bin("sdiag")); return err != nil }() {
				Unavailable(t, "needs sdiag of Slurm %s", SlurmRelease())
			}
		default:
			if _, err := exec.LookPath(need); err != nil {
				Unavailable(t, "needs %s in PATH", need)
			}
		}
	}
}

// RequireCluster is what every end-to-end test calls first: it needs root,
// Slurm, cgroup v1, a C compiler and Prometheus, and the package's shared
// stack (started reports whether TestMain brought it up; setupErr says why
// not). It skips, or fails with CI=true, when anything is missing.
func RequireCluster(t testing.TB, started bool, setupErr error) {
	t.Helper()
	Require(t, "root", "slurm", "cgroupv1", "cc", "prometheus")
	if !started {
		Unavailable(t, "the test stack did not start: %v", setupErr)
	}
}

// DumpLog writes the last max bytes of a server's log to stderr, for a
// failed test run.
func DumpLog(path string, max int) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if len(b) > max {
		b = b[len(b)-max:]
	}
	fmt.Fprintf(os.Stderr, "--- last of %s ---\n%s\n", path, b)
}

// LinesMentioning returns the last max lines of the file at path that
// contain any of needles, for a failure message about one job in a log
// that many tests share; "" when none does or the file cannot be read.
func LinesMentioning(path string, needles []string, max int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var found []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, n := range needles {
			if strings.Contains(line+"\n", n) {
				found = append(found, line)
				break
			}
		}
	}
	if len(found) > max {
		found = found[len(found)-max:]
	}
	return strings.Join(found, "\n")
}

// TestElasticsearch starts the Elasticsearch-API server for one test
// (StartElasticsearch: ZincSearch, or the cluster JOBSIGHT_TEST_ES_URL
// names), stopped when the test ends, and returns it with a random
// suffix for the test's index names (an external cluster may hold other
// data). It skips, or fails with CI=true, when no server can start.
func TestElasticsearch(t testing.TB, ctx context.Context) (*ESServer, string) {
	t.Helper()
	srv, err := StartElasticsearch(ctx, filepath.Join(t.TempDir(), "es"))
	if err != nil {
		Unavailable(t, "the Elasticsearch-API server: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return srv, hex.EncodeToString(b)
}
