package stack_test

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/stack"
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
