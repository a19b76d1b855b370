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
		Now: func() time.Time { return now }})
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
