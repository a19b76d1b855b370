package clusterstate

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// fixtureSource answers from the captured JSON, or fails with err.
type fixtureSource struct {
	t     testing.TB
	err   error
	calls atomic.Uint64
}

func (f *fixtureSource) Nodes(context.Context) ([]byte, error) {
	f.calls.Add(1)
	if f.err != nil {
		return nil, f.err
	}
	return readFixture(f.t, "sinfo-22.05.json"), nil
}

func (f *fixtureSource) Jobs(context.Context) ([]byte, error) {
	f.calls.Add(1)
	return readFixture(f.t, "squeue-22.05.json"), nil
}

func (f *fixtureSource) Calls() uint64 { return f.calls.Load() }

// fakeReceiver is a remote-write endpoint that can be down.
type fakeReceiver struct {
	mu       sync.Mutex
	down     bool
	accepted int
}

func (r *fakeReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	_, _ = io.Copy(io.Discard, req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	r.accepted++
	w.WriteHeader(http.StatusNoContent)
}

func (r *fakeReceiver) set(down bool) (accepted int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
	return r.accepted
}

// A batch Prometheus did not take waits in the spool and goes first when
// it is back; a failed Slurm call is counted and leaves the cluster's
// series alone.
func TestPollSpoolsAndCounts(t *testing.T) {
	t.Parallel()
	rcv := &fakeReceiver{down: true}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Cluster = "csclu"
	cfg.Prometheus.RemoteWriteURL = srv.URL + "/api/v1/write"
	cfg.Prometheus.Timeout = 5 * time.Second
	cfg.Spool.Dir = filepath.Join(t.TempDir(), "spool")
	src := &fixtureSource{t: t}
	reg := prometheus.NewRegistry()
	now := time.Unix(1795455000, 0)
	c, err := New(cfg, Options{Source: src, Registerer: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: func() time.Time { return now }, ChildCPU: func() time.Duration { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := c.spool.Stats(); st.Items != 1 {
		t.Fatalf("spool holds %d items after Prometheus refused, want 1", st.Items)
	}
	rcv.set(false)
	now = now.Add(30 * time.Second)
	if _, err := c.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := c.spool.Stats(); st.Items != 0 || rcv.set(false) != 2 {
		t.Errorf("after Prometheus came back: spool %d items, %d batches accepted; want 0 and 2 (spooled, then new)", st.Items, rcv.accepted)
	}
	src.err = errors.New("sinfo: connection refused")
	if _, err := c.Poll(ctx); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("poll with Slurm down: %v", err)
	}
	if got := counterValue(t, c.metrics.errors.WithLabelValues("slurm")); got != 1 {
		t.Errorf("slurm errors %v", got)
	}
	if got := counterValue(t, c.metrics.calls); got != 5 {
		t.Errorf("slurm calls %v, want 5 (2 + 2 + the failed sinfo)", got)
	}
	if rcv.set(false) != 3 {
		t.Errorf("the failed poll sent no health series")
	}
	if !c.Healthy() {
		t.Errorf("unhealthy 30s after a good poll")
	}
	now = now.Add(2 * time.Minute)
	if c.Healthy() {
		t.Errorf("healthy two minutes after the last good poll")
	}
}

// counterValue reads a counter.
func counterValue(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// queue_cpu_budget: a queue whose reading costs squeue 0.8 s of CPU (about
// 100,000 jobs) is read every other 30 s poll with the default 1.5 %, the
// poll between reusing its decoded answer, with the series saying how old
// it is; a cheap one (10,000 jobs, 55 ms) at every poll; the collector's
// own decoding counts as well; 0 reads it every time.
func TestQueueReadWithinItsCPUBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		budget float64
		cost   time.Duration // squeue's CPU a read
		own    time.Duration // the collector's own a read (decoding)
		reads  []bool        // per poll, 30 s apart: was the queue read?
	}{
		{0.015, 800 * time.Millisecond, 0, []bool{true, false, true, false, true, false}},
		{0.015, 55 * time.Millisecond, 0, []bool{true, true, true, true, true, true}},
		{0.015, 2 * time.Second, 0, []bool{true, false, false, false, false, true}},
		{0, 2 * time.Second, 0, []bool{true, true, true, true, true, true}},
		// A queue printing a line a job: its decoding counts too.
		{0.015, 400 * time.Millisecond, 500 * time.Millisecond, []bool{true, false, true, false, true, false}},
	} {
		cfg := DefaultConfig()
		cfg.Cluster = "csclu"
		cfg.QueueCPUBudget = tc.budget
		cfg.Spool.Dir = filepath.Join(t.TempDir(), "spool")
		src := &countingSource{fixtureSource: fixtureSource{t: t}}
		now := time.Unix(1795455000, 0)
		var cpu, own time.Duration
		src.onJobs = func() { cpu += tc.cost; own += tc.own }
		c, err := New(cfg, Options{Source: src, Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Now: func() time.Time { return now }, ChildCPU: func() time.Duration { return cpu }, SelfCPU: func() time.Duration { return own }})
		if err != nil {
			t.Fatal(err)
		}
		lastRead := now
		for i, want := range tc.reads {
			before := src.jobs.Load()
			snap, err := c.Poll(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			read := src.jobs.Load() > before
			if read {
				lastRead = now
			}
			if read != want {
				t.Errorf("budget %v, squeue %v: poll %d read the queue %v, want %v", tc.budget, tc.cost, i, read, want)
			}
			if !snap.QueueTime.Equal(lastRead) || snap.PendingJobs == 0 {
				t.Errorf("budget %v: poll %d: queue time %v (want %v), %d pending: the reused answer must stand in whole", tc.budget, i, snap.QueueTime, lastRead, snap.PendingJobs)
			}
			var age float64 = -1
			for _, s := range Series(snap, Health{}, false) {
				if s.Name == MetricQueueAge {
					age = s.Samples[0].Value
				}
			}
			if want := now.Sub(lastRead).Seconds(); age != want {
				t.Errorf("budget %v: poll %d: %s = %v, want %v", tc.budget, i, MetricQueueAge, age, want)
			}
			now = now.Add(30 * time.Second)
		}
	}
}

// countingSource counts the queue's reads and runs onJobs at each.
type countingSource struct {
	fixtureSource
	jobs   atomic.Int64
	onJobs func()
}

func (c *countingSource) Jobs(ctx context.Context) ([]byte, error) {
	c.jobs.Add(1)
	c.onJobs()
	return c.fixtureSource.Jobs(ctx)
}
