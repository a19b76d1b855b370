package jobagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// busyJob is a fake job cgroup (the real ones are read in test/e2e): its
// CPU counter grows one core-second per second of wall time.
type busyJob struct{ t0 time.Time }

func (busyJob) Name() string { return "cgroup" }
func (b busyJob) Collect(s *collector.Sample) error {
	s.CPUUsageNanos = uint64(s.Time.Sub(b.t0).Nanoseconds())
	s.Missing = collector.AllMetrics &^ collector.MetricCPU
	return nil
}
func (busyJob) Close() error { return nil }

func busySources(context.Context, collector.Target) (collector.Collector, error) {
	return collector.Set{busyJob{t0: time.Now()}}, nil
}

// launchAll launches reqs at once, each as its own "process" (goroutine),
// and reports how many became the node agent.
func launchAll(t *testing.T, a *Agent, reqs []Request) (served int32) {
	t.Helper()
	var wg sync.WaitGroup
	for _, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			joined, err := a.Launch(context.Background(), r)
			if err != nil {
				t.Errorf("launch %+v: %v", r, err)
			}
			if !joined {
				atomic.AddInt32(&served, 1)
			}
		}()
	}
	wg.Wait()
	return served
}

// Many jobs starting in the same instant get one node agent, which
// watches them all and exits once they have all been stopped; every job
// gets its own final documents.
func TestOneNodeAgentForManyJobs(t *testing.T) {
	t.Parallel()
	slurm := &fakeSlurm{state: jobmodel.StateRunning}
	out := &memOutputs{}
	a := testAgent(t, slurm, out, busySources)
	a.Config.Interval = 100 * time.Millisecond
	a.Config.Slurm.FinalStateWait = time.Second
	const jobs = 12
	var starts []Request
	for i := 1; i <= jobs; i++ {
		starts = append(starts, Request{Op: "start", JobID: uint64(100 + i)})
	}
	servedCh := make(chan int32, 1)
	go func() { servedCh <- launchAll(t, a, starts) }()

	p := nodeFiles(a.Config.StateDir, "n1")
	waitFor(t, "every job watched", func() bool {
		return a.Health != nil && gaugeValue(t, a, "jobsight_agent_jobs_watched") == jobs
	})
	time.Sleep(300 * time.Millisecond) // a few wake-ups
	if _, err := os.Stat(p.sock); err != nil {
		t.Fatalf("node agent socket: %v", err)
	}
	// Its pid file (logrotate's SIGHUP goes there), locked while it lives.
	if b, err := os.ReadFile(p.pid); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("node agent pid file %s: %q, %v; want this process's pid", p.pid, b, err)
	}
	if f, err := os.Open(p.pid); err == nil {
		if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil {
			t.Errorf("node agent pid file %s is not locked (pkill -L would refuse it)", p.pid)
		}
		f.Close()
	}
	slurm.set(jobmodel.StateCompleted)
	var stops []Request
	for i := 1; i <= jobs; i++ {
		stops = append(stops, Request{Op: "stop", JobID: uint64(100 + i)})
	}
	if n := launchAll(t, a, stops); n != 0 {
		t.Errorf("%d stops became a node agent while one ran", n)
	}
	select {
	case n := <-servedCh:
		if n != 1 {
			t.Errorf("%d launches became the node agent, want exactly 1", n)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the node agent did not exit after its last job")
	}
	if _, err := os.Stat(p.sock); !os.IsNotExist(err) {
		t.Errorf("socket left behind after exit: %v", err)
	}
	if _, err := os.Stat(p.pid); !os.IsNotExist(err) {
		t.Errorf("pid file left behind after exit: %v", err)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	final := map[string]jobmodel.Job{}
	for _, j := range out.jobs {
		if j.Final {
			if _, dup := final[j.DocID]; dup {
				t.Errorf("job %s finalized twice", j.DocID)
			}
			final[j.DocID] = j
		}
	}
	if len(final) != jobs {
		t.Fatalf("%d final job documents, want %d", len(final), jobs)
	}
	for id, j := range final {
		if j.State != jobmodel.StateCompleted || j.Sampling.Count < 3 || j.CPU == nil || j.CPU.AvgCores == nil {
			t.Errorf("%s: state %s, %d samples, cpu %+v", id, j.State, j.Sampling.Count, j.CPU)
			continue
		}
		if avg := *j.CPU.AvgCores; avg < 0.7 || avg > 1.3 {
			t.Errorf("%s: average %.2f cores, want ~1 (each job's own counter)", id, avg)
		}
	}
	if w := gaugeValue(t, a, "jobsight_agent_wakes_total"); w < 3 {
		t.Errorf("%v wake-ups", w)
	}
}

// A job the node agent watched when it died is resumed by the next agent
// from its checkpoint: its samples are kept and the gap is recorded.
func TestNextAgentResumesAJobFromItsCheckpoint(t *testing.T) {
	t.Parallel()
	slurm := &fakeSlurm{state: jobmodel.StateRunning}
	out := &memOutputs{}
	a := testAgent(t, slurm, out, busySources)
	a.Config.Interval = 100 * time.Millisecond
	a.Config.FlushInterval = 100 * time.Millisecond
	ctx, kill := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { first <- a.StartJob(ctx, Request{Op: "start", JobID: 7, GPUs: "0", GPUsGiven: true}) }()
	f := jobFiles(a.Config.StateDir, "c", "n1", 7)
	waitFor(t, "a checkpoint with samples", func() bool {
		ck, err := f.loadCheckpoint()
		return err == nil && ck.State.Count >= 3
	})
	// The agent "dies": its checkpoint stays, nothing is finalized. (A
	// cancelled Start would finalize, so the checkpoint is copied aside
	// before and put back after, as a SIGKILL would leave it.)
	saved := map[string][]byte{}
	for _, p := range []string{f.checkpoint(), f.checkpointTwin(), f.checkpointThird()} {
		if b, err := os.ReadFile(p); err == nil {
			saved[p] = b
		}
	}
	kill()
	<-first
	_ = os.Remove(f.done())
	for p, b := range saved {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var before jobmodel.Job
	out.mu.Lock()
	out.jobs, out.nodes = nil, nil
	out.mu.Unlock()
	time.Sleep(300 * time.Millisecond) // the gap

	b := testAgent(t, slurm, out, busySources)
	b.Config = a.Config
	left := newNodeAgent(b, nodeFiles(b.Config.StateDir, "n1")).leftJobs()
	if len(left) != 1 || left[0].JobID != 7 || left[0].GPUs != "0" || !left[0].GPUsGiven {
		t.Fatalf("left jobs %+v, want job 7 with its GPU list", left)
	}
	served := make(chan error, 1)
	go func() {
		_, err := b.Launch(context.Background(), Request{Op: "start", JobID: 8})
		served <- err
	}()
	time.Sleep(500 * time.Millisecond)
	slurm.set(jobmodel.StateCompleted)
	for _, id := range []uint64{7, 8} {
		if !Handover(b.Config.StateDir, "n1", Request{Op: "stop", JobID: id}) {
			t.Fatalf("stop of job %d not taken", id)
		}
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	out.mu.Lock()
	for _, j := range out.jobs {
		if j.Final && j.SlurmJobID == 7 {
			before = j
		}
	}
	out.mu.Unlock()
	if !before.Final || before.Sampling.Gaps != 1 || before.Sampling.GapSeconds == nil || *before.Sampling.GapSeconds < 0.2 {
		t.Fatalf("resumed job: final %v sampling %+v", before.Final, before.Sampling)
	}
	if before.Sampling.Count < 6 {
		t.Errorf("resumed job has %d samples, want the first agent's and the second's", before.Sampling.Count)
	}
}

// The socket takes only well-formed requests and says what is wrong.
func TestNodeAgentRefusesBadRequests(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{`{"op":"kill","job_id":1}`, `{"op":"start","job_id":0}`, `not json`, `{"op":"start","job_id":99999999999}`} {
		var r Request
		if err := json.Unmarshal([]byte(bad), &r); err == nil && r.Validate() == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	slurm := &fakeSlurm{state: jobmodel.StateRunning}
	a := testAgent(t, slurm, &memOutputs{}, busySources)
	done := make(chan error, 1)
	go func() { _, err := a.Launch(context.Background(), Request{Op: "start", JobID: 5}); done <- err }()
	p := nodeFiles(a.Config.StateDir, "n1")
	waitFor(t, "the socket", func() bool { _, err := os.Stat(p.sock); return err == nil })
	st, _ := os.Stat(p.sock)
	if st.Mode().Perm()&0o077 != 0 {
		t.Errorf("socket mode %v, want no access for group or others", st.Mode())
	}
	c, err := net.Dial("unix", p.sock)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte(`{"op":"start","job_id":0}` + "\n"))
	buf := make([]byte, 200)
	n, _ := c.Read(buf)
	c.Close()
	if got := string(buf[:n]); len(got) < 6 || got[:6] != "error:" {
		t.Errorf("bad request answered %q", got)
	}
	slurm.set(jobmodel.StateCompleted)
	Handover(a.Config.StateDir, "n1", Request{Op: "stop", JobID: 5})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func gaugeValue(t *testing.T, a *Agent, name string) float64 {
	t.Helper()
	fams, err := a.Health.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			m := f.GetMetric()[0]
			if m.Gauge != nil {
				return m.Gauge.GetValue()
			}
			return m.Counter.GetValue()
		}
	}
	return -1
}

// An upgrade's handover: the node agent watching two jobs is asked to
// hand them over to the executable it runs from. It ends each watch with
// a last sample and a durable checkpoint, writes no final document and
// no staleness marker, and returns with Successor set (the process execs
// it). The successor (Resume) takes both jobs on without asking Slurm
// again and without a gap, and finalizes them whole at their end.
func TestHandoverToANewAgentKeepsEveryJobWhole(t *testing.T) {
	t.Parallel()
	slurm := &fakeSlurm{state: jobmodel.StateRunning}
	out := &memOutputs{}
	a := testAgent(t, slurm, out, busySources)
	a.Config.Interval = 100 * time.Millisecond
	a.Config.FlushInterval = 100 * time.Millisecond
	a.Config.Prometheus.PushInterval = 100 * time.Millisecond
	served := make(chan error, 1)
	go func() {
		_, err := a.Launch(context.Background(), Request{Op: "start", JobID: 7})
		served <- err
	}()
	waitFor(t, "the node agent", func() bool { _, err := AgentStatus(a.Config.StateDir, "n1"); return err == nil })
	if !Handover(a.Config.StateDir, "n1", Request{Op: "start", JobID: 8}) {
		t.Fatal("job 8 not taken")
	}
	for _, id := range []uint64{7, 8} {
		f := jobFiles(a.Config.StateDir, "c", "n1", id)
		waitFor(t, fmt.Sprintf("job %d's samples", id), func() bool {
			ck, err := f.loadCheckpoint()
			return err == nil && ck.State.Count >= 3
		})
	}
	st, err := AgentStatus(a.Config.StateDir, "n1")
	if err != nil || st.Jobs != 2 || st.PID != os.Getpid() || st.Version != Version {
		t.Fatalf("status %+v, %v: want this process with 2 jobs", st, err)
	}
	// Only the executable the agent runs from may take over.
	if err := AskHandover(a.Config.StateDir, "n1", "/bin/sh"); err == nil || !strings.Contains(err.Error(), "only an executable installed there") {
		t.Fatalf("handover to /bin/sh: %v, want it refused", err)
	}
	self := ownExecutable()
	if err := AskHandover(a.Config.StateDir, "n1", self); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if a.Successor != self {
		t.Fatalf("Successor %q, want %q", a.Successor, self)
	}
	out.mu.Lock()
	for _, j := range out.jobs {
		if j.Final {
			t.Errorf("job %s finalized by the agent that handed it over", j.DocID)
		}
	}
	for _, sr := range out.series {
		for _, p := range sr.Samples {
			if math.IsNaN(p.Value) && math.Float64bits(p.Value) == math.Float64bits(monitor.StaleNaN) && !strings.HasPrefix(sr.Name, "jobsight_agent_") {
				t.Errorf("staleness marker for %s %v at the handover: the job's series must go on", sr.Name, sr.Labels)
			}
		}
	}
	samplesBefore := map[uint64]int64{}
	for _, id := range []uint64{7, 8} {
		ck, err := jobFiles(a.Config.StateDir, "c", "n1", id).readCheckpoint(jobFiles(a.Config.StateDir, "c", "n1", id).checkpoint())
		if err != nil || ck.HandedOver == nil {
			t.Fatalf("job %d: the durable checkpoint %+v, %v: want one marked handed over", id, ck, err)
		}
		samplesBefore[id] = ck.State.Count
	}
	out.mu.Unlock()

	// Job 8 ends while no agent runs (its epilog's stop comes between
	// the two agents): finalized from its checkpoint as watched to the
	// handover, not lost.
	slurm.set(jobmodel.StateCompleted)
	err = a.Stop(context.Background(), 8)
	slurm.set(jobmodel.StateRunning)
	if err != nil {
		t.Fatal(err)
	}
	out.mu.Lock()
	for _, n := range out.nodes {
		if n.Final && n.AgentState != jobmodel.AgentFinished {
			t.Errorf("job 8, ended during the handover: node agent_state %q, want finished", n.AgentState)
		}
	}
	out.mu.Unlock()

	slurm.mu.Lock()
	lookups := slurm.calls
	slurm.mu.Unlock()
	b := testAgent(t, slurm, out, busySources)
	b.Config = a.Config
	resumed := make(chan error, 1)
	go func() {
		joined, err := b.Resume(context.Background())
		if joined {
			err = errors.New("Resume joined another agent; none runs")
		}
		resumed <- err
	}()
	waitFor(t, "the successor with job 7", func() bool {
		st, err := AgentStatus(b.Config.StateDir, "n1")
		return err == nil && st.Jobs == 1
	})
	time.Sleep(500 * time.Millisecond)
	slurm.set(jobmodel.StateCompleted)
	if !Handover(b.Config.StateDir, "n1", Request{Op: "stop", JobID: 7}) {
		t.Fatal("stop of job 7 not taken by the successor")
	}
	if err := <-resumed; err != nil {
		t.Fatal(err)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	final := map[uint64]jobmodel.Job{}
	for _, j := range out.jobs {
		if j.Final {
			final[j.SlurmJobID] = j
		}
	}
	for _, id := range []uint64{7, 8} {
		j, ok := final[id]
		if !ok {
			t.Errorf("job %d: no final document", id)
			continue
		}
		resumed := int64(3)
		if id == 8 {
			resumed = 0 // ended during the handover
		}
		if j.Sampling.Gaps != 0 || j.Sampling.Count < samplesBefore[id]+resumed || j.Sampling.Count == 0 {
			t.Errorf("job %d: sampling %+v; want no gap and the first agent's %d samples and more", id, j.Sampling, samplesBefore[id])
		}
		if slices.ContainsFunc(j.MissingMetrics, func(m string) bool { return strings.Contains(m, "agent") }) {
			t.Errorf("job %d: missing %v", id, j.MissingMetrics)
		}
	}
	for _, n := range out.nodes {
		if n.Final && n.AgentState != jobmodel.AgentFinished {
			t.Errorf("final node document of %s: agent_state %q", n.JobDocID, n.AgentState)
		}
	}
	if j := final[7]; j.State != jobmodel.StateCompleted {
		t.Errorf("job 7: state %s", j.State)
	}
	// The successor asked Slurm only for the job's final state, never at
	// its resume.
	if extra := slurm.calls - lookups; extra > 2 {
		t.Errorf("%d Slurm lookups after the handover for 1 job, want only its final state (the resume takes the checkpoint's)", extra)
	}

	// A handed-over checkpoint older than HandoverFresh (the exec failed,
	// the node went down) is not trusted: Slurm is asked again.
	f := jobFiles(a.Config.StateDir, "c", "n1", 9)
	ck := &Checkpoint{Job: jobmodel.Job{DocID: "c:9", Cluster: "c", JobID: "9", SlurmJobID: 9, State: jobmodel.StateRunning},
		State: monitor.NewNodeState(time.Now(), time.Second, 0), HandedOver: jobmodel.At(time.Now().Add(-2 * HandoverFresh))}
	if err := f.saveCheckpoint(ck); err != nil {
		t.Fatal(err)
	}
	if w := newJobWatch(b, nil, Request{Op: "start", JobID: 9, resumed: true}); w.handedOver(Request{Op: "start", JobID: 9, resumed: true}) != nil {
		t.Error("a checkpoint handed over long ago is taken for a running job without asking Slurm")
	}
}
