package stack_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobsight/jobsight/test/stack"
)

func TestUpStartsEverythingAndDownStopsIt(t *testing.T) {
	stack.Require(t, "root", "slurm", "cgroupv1", "prometheus")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := stack.Up(ctx, testDir(t), stack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	st.Describe(&b)
	for _, want := range []string{st.Prometheus.URL, st.Elasticsearch.URL, st.Slurm.Conf} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Describe does not say %s:\n%s", want, b.String())
		}
	}
	if out, err := st.Slurm.Squeue(ctx); err != nil || !strings.Contains(out, "JOBID") {
		t.Errorf("squeue: %q, %v", out, err)
	}
	if err := st.Down(); err != nil {
		t.Fatalf("Down: %v", err)
	}
	if _, err := http.Get(st.Prometheus.URL + "/-/ready"); err == nil {
		t.Errorf("Prometheus still answers after Down")
	}
	for _, srv := range []*stack.Server{st.Slurm.Ctld, st.Slurm.Munge.Server, st.Prometheus} {
		if syscall.Kill(srv.PID(), 0) == nil {
			t.Errorf("%s (pid %d) still runs after Down", srv.Name, srv.PID())
		}
	}
}

// The stack refuses a directory another user could have prepared.
func TestUpRefusesForeignDirectories(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	target := filepath.Join(base, "real")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := stack.Up(context.Background(), link, stack.Options{}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Up on a symlink: %v", err)
	}
	if os.Geteuid() == 0 {
		foreign := filepath.Join(base, "foreign")
		if err := os.Mkdir(foreign, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := stack.Up(context.Background(), foreign, stack.Options{}); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Errorf("Up on nobody's directory: %v", err)
		}
	}
}
