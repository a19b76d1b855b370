package jobagent

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/deliver"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// blackHole is a fake Elasticsearch endpoint for a failure the real
// server cannot be made to produce: in refuse mode it closes every
// connection at once (the store is down: requests fail fast and their
// documents are spooled); in hole mode it accepts connections and never
// answers, as a store behind a link that drops packets, so each request
// waits for the client's whole timeout.
type blackHole struct {
	ln   net.Listener
	hole atomic.Bool
	mu   sync.Mutex
	held []net.Conn
}

func newBlackHole(t *testing.T) *blackHole {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !b.hole.Load() {
				c.Close()
				continue
			}
			b.mu.Lock()
			b.held = append(b.held, c)
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() { ln.Close(); b.refuse() })
	return b
}

func (b *blackHole) url() string { return "http://" + b.ln.Addr().String() }

// refuse ends hole mode, closing what it held.
func (b *blackHole) refuse() {
	b.hole.Store(false)
	b.mu.Lock()
	for _, c := range b.held {
		c.Close()
	}
	b.held = nil
	b.mu.Unlock()
}

// An exiting node agent whose store stops answering releases the node
// lock within ExitBudget, well inside the 20 s a launch waits, leaving
// what it could not send in the spool; a job that starts during that exit
// is taken by the next agent. The agent's outputs are the real ones
// (deliver.Outputs, its Elasticsearch client with the default 10 s
// timeout, the spool); the store is a fake that drops everything.
//
// Without the bound the exit's last replay waits the client's whole
// 10 s timeout (one call; more with more targets) before the lock is
// released.
func TestExitingNodeAgentReleasesTheLockWhenTheStoreHangs(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a 10 s store timeout")
	}
	t.Parallel()
	store := newBlackHole(t)
	slurm := &fakeSlurm{state: jobmodel.StateRunning}
	a := testAgent(t, slurm, &memOutputs{}, busySources)
	a.Config.Interval = 100 * time.Millisecond
	a.Config.Slurm.FinalStateWait = 0
	a.Config.Spool.Dir = t.TempDir()
	a.Config.Spool.Linger = 2 * time.Second
	a.LingerPoll = 100 * time.Millisecond
	a.Config.Elasticsearch.URLs = []string{store.url()}
	if a.Config.Elasticsearch.Timeout != 10*time.Second {
		t.Fatalf("elasticsearch.timeout default %s, the test assumes 10s", a.Config.Elasticsearch.Timeout)
	}
	out, err := deliver.New(context.Background(), a.Config, a.Health, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	a.Outputs = out

	first := make(chan error, 1)
	go func() { _, err := a.Launch(context.Background(), Request{Op: "start", JobID: 1}); first <- err }()
	p := nodeFiles(a.Config.StateDir, "n1")
	waitFor(t, "job 1 watched", func() bool { return gaugeValue(t, a, "jobsight_agent_jobs_watched") == 1 })
	slurm.set(jobmodel.StateCompleted)
	if !Handover(a.Config.StateDir, "n1", Request{Op: "stop", JobID: 1}) {
		t.Fatal("stop of job 1 not taken")
	}
	// The store is down while the job ends: its final documents are
	// spooled. Then it stops answering at all, while the agent lingers.
	waitFor(t, "job 1 finalized", func() bool {
		_, err := os.Stat(a.jobFiles(1).done())
		return err == nil
	})
	if out.Pending() == 0 {
		t.Fatal("nothing spooled while the store was down")
	}
	store.hole.Store(true)
	t0 := time.Now()
	t.Logf("hole")

	// The agent gives up lingering (its replay waits the store's 10 s
	// timeout) and exits: from the moment its socket goes, a launch can
	// only wait for the lock.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(p.sock); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the node agent did not begin to exit")
		}
		time.Sleep(5 * time.Millisecond)
	}
	exitBegan := time.Now()
	t.Logf("exit began %s", time.Since(t0))
	second := make(chan error, 1)
	go func() {
		joined, err := a.Launch(context.Background(), Request{Op: "start", JobID: 2})
		if err == nil && joined {
			t.Error("job 2's start was handed to the exiting agent")
		}
		second <- err
	}()
	waitDone(t, first, 20*time.Second, "the exiting node agent held the lock for 20 s: a launch gives up after that")
	if held := time.Since(exitBegan); held > ExitBudget+3*time.Second {
		t.Errorf("the exiting node agent held the lock %s after closing its socket, want at most ExitBudget (%s) and a little", held, ExitBudget)
	}
	if out.Pending() == 0 {
		t.Error("the spool is empty: what the exiting agent could not send must wait there for the next agent")
	}

	t.Logf("released %s", time.Since(t0))
	// Job 2's start, sent during the exit, is not lost: the launch
	// became the next agent and watches it. (The store is down again,
	// answering at once, so that the job's first write need not wait
	// out a timeout.)
	store.refuse()
	waitFor(t, "job 2 watched by the next agent", func() bool {
		_, err := os.Stat(a.jobFiles(2).checkpoint())
		return err == nil && gaugeValue(t, a, "jobsight_agent_jobs_watched") == 1
	})
	t.Logf("job 2 watched %s", time.Since(t0))
	if !Handover(a.Config.StateDir, "n1", Request{Op: "stop", JobID: 2}) {
		t.Fatal("stop of job 2 not taken")
	}
	select {
	case err := <-second:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the next agent did not exit after job 2")
	}
}
