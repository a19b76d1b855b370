package jobagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/config"
	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/slurm"
)

// Fakes for the life-cycle logic only: the real Slurm, stores and cgroups
// are exercised in test/e2e.

type fakeSlurm struct {
	mu     sync.Mutex
	state  string
	calls  int
	submit time.Time // default 1_700_000_000
	start  time.Time // default unknown
	// nodes is the job's allocation (default n1); completing, the nodes
	// Slurm lists once the job's state is terminal: for a COMPLETING job
	// only those still completing (default: nodes).
	nodes, completing []string
	down              bool // every lookup fails (slurmctld does not answer)
}

func (f *fakeSlurm) Lookup(_ context.Context, cluster string, jobID uint64, _ uint32) (jobmodel.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.down {
		return jobmodel.Job{}, errors.New("squeue: Unable to contact slurm controller")
	}
	if f.state == "" {
		return jobmodel.Job{}, slurm.ErrJobNotFound
	}
	nodes := f.nodes
	if nodes == nil {
		nodes = []string{"n1"}
	}
	if terminal(f.state) && f.completing != nil {
		nodes = f.completing
	}
	id := jobmodel.Identity{Cluster: cluster, JobID: jobID}
	j := jobmodel.Job{DocID: id.DocID(), Cluster: cluster, JobID: id.Key(), SlurmJobID: jobID, State: f.state,
		Nodes: slices.Clone(nodes), NodeCount: len(nodes), Requested: jobmodel.Request{CPUs: jobmodel.Ptr[int64](2)},
		SubmitTime: jobmodel.At(cmp.Or(f.submit, time.Unix(1_700_000_000, 0)))}
	if !f.start.IsZero() {
		j.StartTime = jobmodel.At(f.start)
	}
	return j, nil
}

func (f *fakeSlurm) set(state string) { f.mu.Lock(); f.state = state; f.mu.Unlock() }

type memOutputs struct {
	mu      sync.Mutex
	jobs    []jobmodel.Job
	nodes   []jobmodel.Node
	results []jobmodel.Result
	series  []monitor.Series
}

func (m *memOutputs) PushSeries(_ context.Context, s []monitor.Series) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.series = append(m.series, s...)
	return nil
}
func (m *memOutputs) PutNode(_ context.Context, n jobmodel.Node) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes = append(m.nodes, n)
	return nil
}
func (m *memOutputs) PutJob(_ context.Context, j jobmodel.Job) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.jobs = append(m.jobs, j)
	return nil
}
func (m *memOutputs) ClaimDocID(ctx context.Context, j jobmodel.Job, _ time.Time, create bool) (string, error) {
	if !create {
		return j.DocID, nil
	}
	return j.DocID, m.PutJob(ctx, j)
}
func (m *memOutputs) NodeDocs(context.Context, string) ([]jobmodel.Node, error) { return nil, nil }
func (m *memOutputs) Replay(context.Context)                                    {}
func (m *memOutputs) Pending() int                                              { return 0 }
func (m *memOutputs) PutResult(_ context.Context, r jobmodel.Result) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.results = append(m.results, r)
	return nil
}
func (m *memOutputs) last() (jobmodel.Job, jobmodel.Node) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.jobs[len(m.jobs)-1], m.nodes[len(m.nodes)-1]
}

func testAgent(t *testing.T, slurm *fakeSlurm, out *memOutputs, sources Sources) *Agent {
	cfg := config.Default()
	cfg.Cluster, cfg.Node, cfg.StateDir = "c", "n1", t.TempDir()
	cfg.Interval, cfg.FlushInterval, cfg.Prometheus.PushInterval = time.Second, time.Second, time.Second
	cfg.Slurm.FinalStateWait = 3 * time.Second
	return &Agent{Config: cfg, Outputs: out, Slurm: slurm, Sources: sources, Health: monitor.NewHealth(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), EndPoll: 50 * time.Millisecond}
}

// runJob watches a job on this agent's node (n1) from its start to its
// end: the job runs, then Slurm says it ended.
func runJob(t *testing.T, a *Agent, slurm *fakeSlurm, req Request) {
	t.Helper()
	req.Op = "start"
	done := make(chan error, 1)
	go func() { done <- a.StartJob(context.Background(), req) }()
	time.Sleep(200 * time.Millisecond)
	slurm.set(jobmodel.StateCompleted)
	waitDone(t, done, 15*time.Second, "the agent did not end after its job ended")
}

// waitDone waits up to within for done's error (fatal when not nil), and
// fails with late when none comes in time.
func waitDone(t *testing.T, done <-chan error, within time.Duration, late string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(within):
		t.Fatal(late)
	}
}

func noCgroup(context.Context, collector.Target) (collector.Collector, error) {
	return nil, fmt.Errorf("no cgroup: %w", os.ErrNotExist)
}

// An agent whose job never got a cgroup, and whose epilog never comes,
// still ends when Slurm says the job ended, and leaves a final document
// that says everything is missing.
func TestAgentWithoutCgroupEndsWithTheJob(t *testing.T) {
	t.Parallel()
	slurm := &fakeSlurm{state: jobmodel.StateRunning}
	out := &memOutputs{}
	a := testAgent(t, slurm, out, noCgroup)
	runJob(t, a, slurm, Request{JobID: 42, UID: 1000})
	job, node := out.last()
	if !job.Final || job.State != jobmodel.StateCompleted {
		t.Errorf("job document final=%v state=%s", job.Final, job.State)
	}
	if !node.Final || !slices.Contains(node.MissingMetrics, "cpu") {
		t.Errorf("node document final=%v missing=%v", node.Final, node.MissingMetrics)
	}
}

// Exactly one agent per job per node: a second start returns at once.
func TestSecondStartForTheSameJobExits(t *testing.T) {
	t.Parallel()
	slurm := &fakeSlurm{state: jobmodel.StateRunning}
	out := &memOutputs{}
	a := testAgent(t, slurm, out, noCgroup)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { first <- a.Start(ctx, 7, 0) }()
	time.Sleep(300 * time.Millisecond)
	second := make(chan error, 1)
	go func() { second <- a.Start(context.Background(), 7, 0) }()
	select {
	case err := <-second:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a second agent for the same job kept running")
	}
	slurm.set(jobmodel.StateCompleted)
	cancel()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// stop with no live agent finalizes from the checkpoint: the samples the
// dead agent took are kept and the loss is named.
func TestStopFinalizesFromTheCheckpointOfADeadAgent(t *testing.T) {
	t.Parallel()
	slurm := &fakeSlurm{state: jobmodel.StateCompleted}
	out := &memOutputs{}
	a := testAgent(t, slurm, out, noCgroup)
	job, _ := slurm.Lookup(context.Background(), "c", 9, 0)
	state := monitor.NewNodeState(time.Unix(1_700_000_100, 0), time.Second, 0)
	for i := 0; i < 5; i++ {
		s := collector.Sample{Time: time.Unix(1_700_000_100+int64(i), 0), CPUUsageNanos: uint64(i) * 2e9,
			Missing: collector.AllMetrics &^ collector.MetricCPU}
		state.Add(&s)
	}
	f := jobFiles(a.Config.StateDir, "c", "n1", 9)
	if err := os.MkdirAll(a.Config.StateDir+"/jobs", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.saveCheckpoint(&Checkpoint{Job: job, Node: nodeTemplate(job, "n1"), State: state, Leader: true}); err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(context.Background(), 9); err != nil {
		t.Fatal(err)
	}
	got, node := out.last()
	if node.AgentState != jobmodel.AgentLost || !node.Final {
		t.Errorf("node agent_state %q final %v", node.AgentState, node.Final)
	}
	if got.CPU == nil || *got.CPU.CoreSeconds != 8 {
		t.Errorf("job cpu %+v, want the checkpointed 8 core-seconds", got.CPU)
	}
	if !slices.Contains(got.MissingMetrics, "samples_after_agent_loss:n1") || got.State != jobmodel.StateCompleted {
		t.Errorf("job state %s missing %v", got.State, got.MissingMetrics)
	}
	// The final document carries its analysis, also in the results index.
	if got.Analysis == nil || got.Analysis.Class == "" || len(out.results) != 1 || out.results[0].DocID != got.DocID ||
		out.results[0].Analysis.Class != got.Analysis.Class {
		t.Errorf("analysis %+v, results %+v", got.Analysis, out.results)
	}
	// A late start for the same job does nothing.
	n := len(out.jobs)
	if err := a.Start(context.Background(), 9, 0); err != nil {
		t.Fatal(err)
	}
	if len(out.jobs) != n {
		t.Errorf("a start after the job was finalized wrote %d more job documents", len(out.jobs)-n)
	}
}

// The agent's peak RSS is its own, not that of the process that exec'd it.
func TestSelfUsagePeakRSSIsPlausible(t *testing.T) {
	t.Parallel()
	u := ReadSelfUsage()
	if u.MaxRSSBytes < 1<<20 || u.MaxRSSBytes > 1<<30 {
		t.Fatalf("peak RSS %d bytes is implausible for this test process", u.MaxRSSBytes)
	}
}

// startAsync runs Start in the background and returns its result channel.
func startAsync(a *Agent, ctx context.Context, jobID uint64) chan error {
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx, jobID, 0) }()
	return done
}

// A stop marker left by an earlier job with the same id (Slurm reuses ids
// after a state reset) does not make the new job's agent finalize at once.
func TestLeftoverStopMarkerOfAnEarlierJobIsIgnored(t *testing.T) {
	t.Parallel()
	slurm := &fakeSlurm{state: jobmodel.StateRunning, start: time.Now()}
	out := &memOutputs{}
	a := testAgent(t, slurm, out, noCgroup)
	f := jobFiles(a.Config.StateDir, "c", "n1", 12)
	if err := ensureStateDirs(a.Config.StateDir); err != nil {
		t.Fatal(err)
	}
	if err := writeAtomic(f.stopped(), []byte("stop\n")); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(f.stopped(), old, old); err != nil {
		t.Fatal(err)
	}
	done := startAsync(a, context.Background(), 12)
	select {
	case err := <-done:
		t.Fatalf("the agent finalized the new job at once (%v): it took an earlier job's stop for its own", err)
	case <-time.After(500 * time.Millisecond):
	}
	if _, err := os.Stat(f.stopped()); !os.IsNotExist(err) {
		t.Errorf("the stale marker is still there: %v", err)
	}
	slurm.set(jobmodel.StateCompleted)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A fresh marker (this job's own epilog came first) still counts.
	slurm2 := &fakeSlurm{state: jobmodel.StateCompleted, start: time.Now()}
	b := testAgent(t, slurm2, &memOutputs{}, noCgroup)
	g := jobFiles(b.Config.StateDir, "c", "n1", 13)
	_ = ensureStateDirs(b.Config.StateDir)
	_ = writeAtomic(g.stopped(), []byte("stop\n"))
	select {
	case err := <-startAsync(b, context.Background(), 13):
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a job whose stop came before its agent was watched anyway")
	}
}

// The checkpoint of an earlier job with the same id, whose agent died and
// whose stop never came, is finalized as that job's (lost, state unknown
// since Slurm now knows another job by the id), and none of it is the new
// job's.
func TestEarlierJobsCheckpointIsFinalizedAsItsOwn(t *testing.T) {
	t.Parallel()
	earlierSubmit := time.Unix(1_600_000_000, 0)
	slurm := &fakeSlurm{state: jobmodel.StateRunning, submit: time.Unix(1_700_000_000, 0), start: time.Now()}
	out := &memOutputs{}
	a := testAgent(t, slurm, out, noCgroup)
	earlier, _ := (&fakeSlurm{state: jobmodel.StateRunning, submit: earlierSubmit}).Lookup(context.Background(), "c", 14, 0)
	earlier.DocID = "c:14@1600000000"
	state := monitor.NewNodeState(earlierSubmit.Add(time.Minute), time.Second, 0)
	for i := 0; i < 3; i++ {
		s := collector.Sample{Time: earlierSubmit.Add(time.Minute + time.Duration(i)*time.Second), CPUUsageNanos: uint64(i) * 1e9,
			Missing: collector.AllMetrics &^ collector.MetricCPU}
		state.Add(&s)
	}
	f := jobFiles(a.Config.StateDir, "c", "n1", 14)
	_ = ensureStateDirs(a.Config.StateDir)
	if err := f.saveCheckpoint(&Checkpoint{Job: earlier, Node: nodeTemplate(earlier, "n1"), State: state, Leader: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := startAsync(a, ctx, 14)
	time.Sleep(500 * time.Millisecond)
	out.mu.Lock()
	var found *jobmodel.Job
	for i := range out.jobs {
		if out.jobs[i].DocID == earlier.DocID && out.jobs[i].Final {
			found = &out.jobs[i]
		}
	}
	out.mu.Unlock()
	if found == nil {
		t.Fatalf("no final document for the earlier job %s: %+v", earlier.DocID, out.jobs)
	}
	if found.State != jobmodel.StateUnknown || !slices.Contains(found.MissingMetrics, "samples_after_agent_loss:n1") ||
		found.CPU == nil || *found.CPU.CoreSeconds != 2 {
		t.Errorf("earlier job: state %s, missing %v, cpu %+v; want UNKNOWN, lost, its own 2 core-seconds", found.State, found.MissingMetrics, found.CPU)
	}
	// The new job is watched, under its own submit time.
	select {
	case err := <-done:
		t.Fatalf("the new job's agent ended at once: %v", err)
	default:
	}
	ck, err := f.loadCheckpoint()
	if err != nil || !timeOf(ck.Job.SubmitTime).Equal(time.Unix(1_700_000_000, 0)) || ck.State.Count != 0 {
		t.Errorf("the checkpoint now: %v %+v", err, ck)
	}
	slurm.set(jobmodel.StateCompleted)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A stop for a job already finalized here leaves no marker behind.
func TestStopOfAFinalizedJobLeavesNoMarker(t *testing.T) {
	t.Parallel()
	slurm := &fakeSlurm{state: jobmodel.StateCompleted}
	a := testAgent(t, slurm, &memOutputs{}, noCgroup)
	f := jobFiles(a.Config.StateDir, "c", "n1", 15)
	_ = ensureStateDirs(a.Config.StateDir)
	f.markDone(time.Unix(1_700_000_000, 0))
	if err := a.Stop(context.Background(), 15); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.stopped()); !os.IsNotExist(err) {
		t.Errorf("stop left its marker: %v", err)
	}
}

// TestLabelsCarryTheRun: the series of two jobs that held one id differ by
// their run label; a job whose submit time is unknown has none.
func TestLabelsCarryTheRun(t *testing.T) {
	t.Parallel()
	submit := &jobmodel.Time{Time: time.Unix(1764072000, 0)}
	got := Labels("c", "7", "n1", submit)
	want := []monitor.Label{{Name: "cluster", Value: "c"}, {Name: "job_id", Value: "7"}, {Name: "node", Value: "n1"}, {Name: "run", Value: "1764072000"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Labels = %v, want %v", got, want)
	}
	if got := Labels("c", "7", "n1", nil); len(got) != 3 {
		t.Errorf("without a submit time: %v", got)
	}
}

// slowClaim is memOutputs whose claim (the reused-id check and the running
// job document) answers after a delay and names a reuse id, as a slow
// store that finds an older job under the plain id does.
type slowClaim struct {
	*memOutputs
	delay    time.Duration
	answered atomic.Int64 // unix nanoseconds of the claim's answer
}

func (s *slowClaim) ClaimDocID(ctx context.Context, j jobmodel.Job, at time.Time, create bool) (string, error) {
	time.Sleep(s.delay)
	j.DocID += "@reused"
	defer s.answered.Store(time.Now().UnixNano())
	return s.memOutputs.ClaimDocID(ctx, j, at, create)
}

// A store slow to answer the job's claim does not hold up its sampling:
// samples are taken while the claim is outstanding, the claim is not
// given up, and the final documents follow the running one, under the
// id the claim settled on.
// startWatch watches req's job in its own goroutine, as its process
// would; stop is the epilog's, done says how StartJob ended.
func startWatch(a *Agent, req Request) (stop context.CancelFunc, done <-chan error) {
	ctx, stop := context.WithCancel(context.Background())
	d := make(chan error, 1)
	go func() { d <- a.StartJob(ctx, req) }()
	return stop, d
}

func TestSlowClaimDoesNotDelaySampling(t *testing.T) {
	t.Parallel()
	slurm := &fakeSlurm{state: jobmodel.StateRunning}
	out := &slowClaim{memOutputs: &memOutputs{}, delay: 3 * time.Second}
	a := testAgent(t, slurm, out.memOutputs, busySources)
	a.Outputs, a.ClaimWait = out, 200*time.Millisecond
	started := time.Now()
	stop, done := startWatch(a, Request{Op: "start", JobID: 9, UID: 1000})
	defer stop()
	time.Sleep(2 * time.Second) // the claim still outstanding
	out.mu.Lock()
	pushed := len(out.series)
	out.mu.Unlock()
	if pushed == 0 {
		t.Errorf("no samples pushed %v after the start: sampling waited for the store's claim", time.Since(started).Round(time.Millisecond))
	}
	time.Sleep(2 * time.Second)
	slurm.set(jobmodel.StateCompleted)
	stop()
	waitDone(t, done, 20*time.Second, "the watch did not end after its job's stop")
	if out.answered.Load() == 0 {
		t.Fatal("the claim never answered")
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if len(out.jobs) < 2 || out.jobs[0].Final || !out.jobs[len(out.jobs)-1].Final {
		t.Fatalf("job documents in order: %d, want the running one first and the final one last", len(out.jobs))
	}
	final := out.jobs[len(out.jobs)-1]
	if final.DocID != "c:9@reused" || final.Sampling.Count < 3 {
		t.Errorf("final document %q with %d samples, want c:9@reused (the claim's id) with the samples taken meanwhile", final.DocID, final.Sampling.Count)
	}
	if n := out.nodes[len(out.nodes)-1]; n.JobDocID != "c:9@reused" || !n.Final {
		t.Errorf("final node document: job_doc_id %q final %v", n.JobDocID, n.Final)
	}
}
