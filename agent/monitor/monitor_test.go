package monitor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// scripted is a fake collector (for loop logic only; the real collectors
// are tested on captured trees in agent/collector): it replays readings,
// then reports the job gone.
type scripted struct {
	readings []collector.Sample
	i        int
}

func (s *scripted) Name() string { return "scripted" }
func (s *scripted) Close() error { return nil }
func (s *scripted) Collect(out *collector.Sample) error {
	if s.i >= len(s.readings) {
		return fmt.Errorf("job cgroup: %w", os.ErrNotExist)
	}
	r := s.readings[s.i]
	s.i++
	r.Time = out.Time
	*out = r
	return nil
}

// memSink records what the monitor sends.
type memSink struct {
	mu     sync.Mutex
	series []Series
	nodes  []jobmodel.Node
}

func (m *memSink) PushSeries(_ context.Context, s []Series) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, x := range s {
		x.Samples = slices.Clone(x.Samples)
		m.series = append(m.series, x)
	}
	return nil
}

func (m *memSink) PutNode(_ context.Context, d jobmodel.Node) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes = append(m.nodes, d)
	return nil
}

// fakeClock advances one second per call to Now, so each pass is 1 s apart.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time { c.t = c.t.Add(500 * time.Millisecond); return c.t }

func reading(cpuSec float64, used, rss uint64, procs uint32) collector.Sample {
	return collector.Sample{
		CPUUsageNanos: uint64(cpuSec * 1e9), MemoryUsedBytes: used, MemoryRSSBytes: rss,
		MemoryLimitBytes: 4 << 30, CPUsAllocated: 2, Processes: procs, Threads: procs * 2,
		IOReadBytes: 100, IOWriteBytes: 200,
		Missing: collector.MetricMemoryPeak,
	}
}

func TestNodeStateSummarisesAJob(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := NewNodeState(start, time.Second, 0.5)
	for i := 0; i <= 10; i++ {
		s := reading(float64(i)*1.5, uint64(1+i)<<20, uint64(i)<<20, 4)
		s.Time = start.Add(time.Duration(i) * time.Second)
		n.Add(&s)
	}
	var doc jobmodel.Node
	n.Fill(&doc, start.Add(10*time.Second))
	if got := *doc.CPU.CoreSeconds; got != 15 {
		t.Errorf("core_seconds = %v, want 15", got)
	}
	if got := *doc.CPU.AvgCores; math.Abs(got-1.5) > 1e-9 {
		t.Errorf("avg_cores = %v, want 1.5", got)
	}
	if got := *doc.CPU.ActiveSeconds; got != 10 {
		t.Errorf("active_seconds = %v, want 10 (1.5 cores > 0.5 threshold for 10 s)", got)
	}
	if got := *doc.CPU.Efficiency; math.Abs(got-0.75) > 1e-9 {
		t.Errorf("cpu efficiency = %v, want 0.75 (1.5 of 2 CPUs)", got)
	}
	if *doc.Memory.PeakBytes != 11<<20 || *doc.Memory.RSSPeakBytes != 10<<20 || *doc.Memory.LimitBytes != 4<<30 {
		t.Errorf("memory = %+v", *doc.Memory)
	}
	if *doc.Allocated.CPUs != 2 || *doc.Processes.Peak != 4 || *doc.Threads.Peak != 8 {
		t.Errorf("allocated %d, processes %+v, threads %+v", *doc.Allocated.CPUs, doc.Processes, doc.Threads)
	}
	if !slices.Equal(doc.MissingMetrics, []string{"memory_peak"}) {
		t.Errorf("missing = %v, want [memory_peak]", doc.MissingMetrics)
	}
	if doc.Sampling.Count != 11 {
		t.Errorf("sampling count = %d", doc.Sampling.Count)
	}
}

func TestNodeStateWithNoSamplesSaysEverythingIsMissing(t *testing.T) {
	t.Parallel()
	n := NewNodeState(time.Now(), time.Second, 0)
	var doc jobmodel.Node
	n.Fill(&doc, time.Now())
	if doc.CPU != nil || doc.Memory != nil || doc.IO != nil {
		t.Errorf("usage without samples: %+v", doc.Usage)
	}
	if len(doc.MissingMetrics) != len(collector.AllMetrics.Names()) {
		t.Errorf("missing = %v", doc.MissingMetrics)
	}
}

// steadyJob is a job busy one core for n readings, then gone, with a sink
// and a clock for its monitor.
func steadyJob(n int) (*scripted, *memSink, *fakeClock) {
	src := &scripted{}
	for i := 0; i < n; i++ {
		src.readings = append(src.readings, reading(float64(i), 1<<20, 1<<19, 3))
	}
	return src, &memSink{}, &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func TestRunStopsWhenTheJobIsGoneAndPushesLabelledSeries(t *testing.T) {
	t.Parallel()
	src, sink, clock := steadyJob(6)
	labels := []Label{{Name: "cluster", Value: "c"}, {Name: "job_id", Value: "7"}, {Name: "node", Value: "n1"}}
	checkpoints := 0
	m := New(Options{
		Interval: time.Millisecond, FlushInterval: 2 * time.Second, PushInterval: time.Second,
		Labels: labels, GoneAfter: 2 * time.Second, Now: clock.Now,
		Checkpoint: func(*NodeState, jobmodel.Node) error { checkpoints++; return nil },
	}, src, sink, NewHealth(), jobmodel.Node{DocID: "c:7/n1"}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if got := m.Run(ctx); got != StopJobGone {
		t.Fatalf("Run returned %q, want %q", got, StopJobGone)
	}
	if m.State.Count != 6 {
		t.Errorf("samples = %d, want 6", m.State.Count)
	}
	if len(sink.nodes) == 0 || sink.nodes[0].Final || sink.nodes[0].AgentState != jobmodel.AgentRunning {
		t.Errorf("node documents while running: %+v", sink.nodes)
	}
	if checkpoints == 0 {
		t.Error("no checkpoint was written")
	}
	found := map[string]bool{}
	for _, s := range sink.series {
		found[s.Name] = true
		if !slices.Equal(s.Labels[:3], labels) {
			t.Errorf("series %s has labels %v, want %v first", s.Name, s.Labels, labels)
		}
	}
	for _, name := range []string{"jobsight_job_cpu_usage_seconds_total", "jobsight_job_memory_used_bytes", "jobsight_agent_samples_total", "jobsight_agent_collector_errors_total"} {
		if !found[name] {
			t.Errorf("series %s was not pushed (have %v)", name, found)
		}
	}
	// Every series ends with a staleness marker, after its last sample.
	last := map[string]Point{}
	for _, s := range sink.series {
		key := s.Name + fmt.Sprint(s.Labels)
		for _, p := range s.Samples {
			if prev, ok := last[key]; ok && p.TimestampMs <= prev.TimestampMs {
				t.Errorf("%s: sample at %d after one at %d", key, p.TimestampMs, prev.TimestampMs)
			}
			last[key] = p
		}
	}
	for key, p := range last {
		if math.Float64bits(p.Value) != math.Float64bits(StaleNaN) {
			t.Errorf("series %s ends with %v, not a staleness marker", key, p.Value)
		}
	}
}

func BenchmarkNodeStateAdd(b *testing.B) {
	n := NewNodeState(time.Now(), time.Second, 0.05)
	s := reading(1, 1<<30, 1<<29, 64)
	t0 := time.Now()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		s.Time = t0.Add(time.Duration(i) * time.Second)
		s.CPUUsageNanos += 1e9
		n.Add(&s)
	}
}

// failing is a collector that always fails to read.
type failing struct{}

func (failing) Name() string { return "proc" }
func (failing) Close() error { return nil }
func (failing) Collect(*collector.Sample) error {
	return errors.New("reading /proc/42/stat: permission denied")
}

// Each collector of a job's set has its own health: errors are counted
// under the collector that failed, with its success and duration gauges.
func TestHealthPerCollector(t *testing.T) {
	t.Parallel()
	src := &scripted{}
	for i := 0; i < 3; i++ {
		src.readings = append(src.readings, reading(float64(i), 1<<20, 1<<19, 3))
	}
	h := NewHealth()
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	m := New(Options{Interval: time.Second, FlushInterval: time.Hour, PushInterval: time.Hour, Now: clock.Now},
		collector.Set{src, failing{}}, &memSink{}, h, jobmodel.Node{}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var s collector.Sample
	for i := 0; i < 3; i++ {
		_ = m.sample(&s)
	}
	got := map[string]float64{}
	series, err := h.Series(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range series {
		key := s.Name
		for _, l := range s.Labels {
			key += "," + l.Name + "=" + l.Value
		}
		got[key] = s.Samples[0].Value
	}
	for key, want := range map[string]float64{
		"jobsight_agent_collector_errors_total,collector=proc": 3,
		"jobsight_agent_collector_success,collector=proc":      0,
		"jobsight_agent_collector_success,collector=scripted":  1,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}
	if _, ok := got["jobsight_agent_collector_errors_total,collector=job"]; ok {
		t.Error(`errors still counted under collector="job"`)
	}
	if _, ok := got["jobsight_agent_collector_duration_seconds,collector=scripted"]; !ok {
		t.Errorf("no duration gauge: %v", got)
	}
}

// slowSink answers every write after a delay, like a store in trouble.
type slowSink struct {
	memSink
	delay time.Duration
}

func (s *slowSink) PushSeries(ctx context.Context, series []Series) error {
	time.Sleep(s.delay)
	return s.memSink.PushSeries(ctx, series)
}

func (s *slowSink) PutNode(ctx context.Context, n jobmodel.Node) error {
	time.Sleep(s.delay)
	return s.memSink.PutNode(ctx, n)
}

// Sampling keeps its interval while the store takes its time, and every
// sample still arrives, in order.
func TestSamplingNeverWaitsForTheStore(t *testing.T) {
	t.Parallel()
	src := &scripted{}
	for i := 0; i < 1000; i++ {
		src.readings = append(src.readings, reading(float64(i), 1<<20+uint64(i), 1<<19, 3))
	}
	sink := &slowSink{delay: 300 * time.Millisecond}
	m := New(Options{Interval: 10 * time.Millisecond, FlushInterval: 50 * time.Millisecond, PushInterval: 10 * time.Millisecond,
		Labels: []Label{{Name: "job_id", Value: "1"}}},
		src, sink, NewHealth(), jobmodel.Node{DocID: "c:1/n"}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	m.Run(ctx)
	took := time.Since(start)
	// About 100 passes in a second at 10 ms; a sampler waiting on a 300 ms
	// store would manage a handful.
	if m.State.Count < 50 {
		t.Errorf("%d samples in %s with a store answering in 300 ms, want about 100", m.State.Count, took)
	}
	var got []Point
	for _, s := range sink.series {
		if s.Name == "jobsight_job_memory_used_bytes" {
			for _, p := range s.Samples {
				if math.Float64bits(p.Value) != math.Float64bits(StaleNaN) {
					got = append(got, p)
				}
			}
		}
	}
	if int64(len(got)) != m.State.Count {
		t.Errorf("%d memory points delivered, %d samples taken", len(got), m.State.Count)
	}
	for i := 1; i < len(got); i++ {
		if got[i].TimestampMs < got[i-1].TimestampMs || got[i].Value <= got[i-1].Value {
			t.Fatalf("point %d out of order: %+v after %+v", i, got[i], got[i-1])
		}
	}
	if p, _ := m.State.Used.Max(); p != float64(1<<20+m.State.Count-1) {
		t.Errorf("memory peak %v, want the last sample's %d", p, 1<<20+m.State.Count-1)
	}
}

// A job whose memory is shared (/dev/shm) has a small RSS; its working set
// and shared memory carry it, and memory efficiency rests on the working
// set. Without a working set, efficiency falls back to RSS.
func TestNodeStateSharedMemoryAndWorkingSet(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := NewNodeState(start, time.Second, 0.5)
	for i := 0; i <= 10; i++ {
		shm := uint64(min(i, 5)) * 30 << 20 // 0 … 150 MiB
		s := reading(float64(i), shm+(12<<20), 1<<20, 1)
		s.MemoryLimitBytes = 400 << 20
		s.MemoryShmemBytes, s.MemoryMappedFileBytes, s.MemoryWorkingSetBytes = shm, 2<<20, shm+(10<<20)
		s.Time = start.Add(time.Duration(i) * time.Second)
		n.Add(&s)
	}
	var doc jobmodel.Node
	n.Fill(&doc, start.Add(10*time.Second))
	m := doc.Memory
	if deref(m.ShmemPeakBytes) != 150<<20 || deref(m.WorkingSetPeakBytes) != 160<<20 || deref(m.RSSPeakBytes) != 1<<20 ||
		deref(m.MappedFilePeakBytes) != 2<<20 || m.WorkingSetAvgBytes == nil || m.ShmemAvgBytes == nil || m.WorkingSetP95Bytes == nil {
		t.Errorf("memory = %+v", *m)
	}
	if got := deref(m.Efficiency); math.Abs(got-0.4) > 1e-9 {
		t.Errorf("memory efficiency = %v, want 0.4 (160 MiB working set of 400 MiB), not RSS's 0.0025", got)
	}
	if m.MaxNodeWorkingSetPeakBytes != nil {
		t.Errorf("max_node_working_set_peak_bytes belongs to job documents")
	}

	// An agent that cannot read memory.stat's newer lines: those fields
	// are absent and named, and efficiency is RSS over the limit.
	old := NewNodeState(start, time.Second, 0.5)
	s := reading(1, 100<<20, 50<<20, 1)
	s.MemoryLimitBytes = 400 << 20
	s.Missing |= collector.MetricMemoryShmem | collector.MetricMemoryMappedFile | collector.MetricMemoryWorkingSet
	s.Time = start
	old.Add(&s)
	doc = jobmodel.Node{}
	old.Fill(&doc, start.Add(time.Second))
	if doc.Memory.WorkingSetPeakBytes != nil || doc.Memory.ShmemPeakBytes != nil || deref(doc.Memory.Efficiency) != 0.125 {
		t.Errorf("without a working set: %+v", *doc.Memory)
	}
	for _, name := range []string{"memory_shmem", "memory_mapped_file", "memory_working_set"} {
		if !slices.Contains(doc.MissingMetrics, name) {
			t.Errorf("missing_metrics %v lacks %s", doc.MissingMetrics, name)
		}
	}
}

func deref[T any](p *T) T {
	var zero T
	if p != nil {
		return *p
	}
	return zero
}

// A spike between two samples (a process that grows by 200 MiB and exits
// within an interval) is missed by the sampled working set but not by the
// kernel's high-water mark: the working-set peak is raised to the mark less
// the inactive file cache around it. Page cache that grows steadily with the
// usage (a large file read) does not raise it.
func TestNodeStateWorkingSetPeakFromKernelMark(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := func(samples [][3]uint64) *jobmodel.MemoryUsage { // used, inactive file, kernel mark
		n := NewNodeState(start, time.Second, 0.5)
		for i, v := range samples {
			s := reading(float64(i), v[0], v[0]-v[1], 1)
			s.MemoryWorkingSetBytes, s.MemoryPeakBytes = v[0]-v[1], v[2]
			s.Missing = 0
			s.Time = start.Add(time.Duration(i) * time.Second)
			n.Add(&s)
		}
		var doc jobmodel.Node
		n.Fill(&doc, start.Add(time.Duration(len(samples))*time.Second))
		return doc.Memory
	}
	spike := run([][3]uint64{{10 * mib, 1 * mib, 10 * mib}, {12 * mib, 2 * mib, 212 * mib}, {11 * mib, 2 * mib, 212 * mib}})
	if got := deref(spike.WorkingSetPeakBytes); got != 211*mib {
		t.Errorf("spike: working_set_peak_bytes = %d MiB, want 211 (mark 212 less the smaller cache, 1)", got/mib)
	}
	if deref(spike.PeakBytes) != 212*mib {
		t.Errorf("spike: peak_bytes = %d", deref(spike.PeakBytes))
	}
	// A file read: cache and usage grow together, the mark is the usage.
	read := run([][3]uint64{{100 * mib, 0, 100 * mib}, {1100 * mib, 1000 * mib, 1100 * mib}, {2100 * mib, 2000 * mib, 2100 * mib}})
	if got := deref(read.WorkingSetPeakBytes); got != 100*mib {
		t.Errorf("file read: working_set_peak_bytes = %d MiB, want the 100 without the cache", got/mib)
	}
	if got := deref(read.Efficiency); math.Abs(got-100.0/4096) > 1e-9 {
		t.Errorf("file read: efficiency %v, want 100 MiB of the 4 GiB limit", got)
	}
}

// hungSink never answers: each write returns only when its context ends,
// and then "spools" what it carried (counted), as deliver.Outputs does.
type hungSink struct {
	mu      sync.Mutex
	spooled int
}

func (s *hungSink) PushSeries(ctx context.Context, _ []Series) error { return s.wait(ctx) }
func (s *hungSink) PutNode(ctx context.Context, _ jobmodel.Node) error {
	return s.wait(ctx)
}
func (s *hungSink) wait(ctx context.Context) error {
	<-ctx.Done()
	s.mu.Lock()
	s.spooled++
	s.mu.Unlock()
	return ctx.Err()
}

// CloseBy gives a hung store until its deadline: the writes under way
// and pending are cut short (the sink spools them) and it returns, where
// Close would wait the sender's 30 s timeout per write.
func TestSenderCloseByCutsAHungStoreShort(t *testing.T) {
	t.Parallel()
	sink := &hungSink{}
	s := NewSender(sink, NewHealth(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.AddSeries([]Series{{Name: "a", Samples: []Point{{TimestampMs: 1, Value: 1}}}})
	time.Sleep(20 * time.Millisecond) // the first write is under way
	s.AddSeries([]Series{{Name: "a", Samples: []Point{{TimestampMs: 2, Value: 2}}}})
	s.AddNode(jobmodel.Node{DocID: "c:1/n"})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	s.CloseBy(ctx)
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("CloseBy took %s with a 200 ms deadline", took)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.spooled != 3 {
		t.Errorf("%d writes handed to the sink, want 3 (two batches of series, one node document): nothing is dropped", sink.spooled)
	}
}

// isHeld reports whether m is still without its identity (once its
// driving goroutine is done with it).
func isHeld(m *Monitor) bool {
	m.adopt()
	return m.held
}

// heldMonitor is a steady job's monitor, held, begun and ticked ticks
// times (each a second on its clock).
func heldMonitor(ticks int) (*Monitor, *memSink, *Sender) {
	src, sink, clock := steadyJob(10)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := New(Options{Interval: time.Second, FlushInterval: time.Second, PushInterval: time.Second, GoneAfter: 2 * time.Second, Now: clock.Now},
		src, sink, NewHealth(), jobmodel.Node{}, nil, log)
	m.Hold()
	snd := NewSender(sink, NewHealth(), log)
	m.Begin(snd)
	for i := 0; i < ticks; i++ {
		m.Tick()
	}
	return m, sink, snd
}

// A held monitor (the job's identity not known yet) samples but sends
// nothing; once named, its first push carries every point taken before,
// under the labels it was given, and its node documents and checkpoints
// begin.
func TestHeldMonitorSendsNothingUntilNamed(t *testing.T) {
	t.Parallel()
	m, sink, snd := heldMonitor(4)
	snd.Flush()
	sink.mu.Lock()
	if len(sink.series)+len(sink.nodes) > 0 {
		t.Errorf("held: %d series and %d node documents sent without the job's identity", len(sink.series), len(sink.nodes))
	}
	sink.mu.Unlock()
	if !isHeld(m) {
		t.Fatal("not held before Name")
	}
	labels := []Label{{Name: "cluster", Value: "c"}, {Name: "job_id", Value: "11_1"}, {Name: "node", Value: "n1"}}
	checkpoints := 0
	m.Name(Identity{Labels: labels, Doc: jobmodel.Node{DocID: "c:11_1/n1", JobDocID: "c:11_1"},
		Checkpoint: func(*NodeState, jobmodel.Node) error { checkpoints++; return nil }})
	for i := 0; i < 3; i++ {
		m.Tick()
	}
	m.End(StopRequested)
	snd.Close()
	if isHeld(m) {
		t.Error("still held after Name")
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	points := 0
	for _, s := range sink.series {
		if !slices.Equal(s.Labels[:3], labels) {
			t.Errorf("series %s labelled %v", s.Name, s.Labels)
		}
		if s.Name == "jobsight_job_cpu_usage_seconds_total" {
			for _, p := range s.Samples {
				if !math.IsNaN(p.Value) {
					points++
				}
			}
		}
	}
	if points != int(m.State.Count) || points != 9 {
		t.Errorf("%d CPU points pushed of %d samples (want 9: those taken while held too)", points, m.State.Count)
	}
	if len(sink.nodes) == 0 || sink.nodes[0].JobDocID != "c:11_1" || checkpoints == 0 {
		t.Errorf("after Name: %d node documents (first %+v), %d checkpoints", len(sink.nodes), sink.nodes, checkpoints)
	}
}

// A watch that ends still held keeps its points; once named, Late sends
// them under the job's labels, ended by staleness markers, except after a
// handover (the new agent goes on with the series). Late sends once.
func TestLateSendsWhatAnEndedHeldWatchKept(t *testing.T) {
	t.Parallel()
	for _, why := range []StopReason{StopRequested, StopHandedOver} {
		m, sink, snd := heldMonitor(3)
		m.End(why)
		snd.Close()
		if m.Late() {
			t.Errorf("%s: Late sent before the monitor was named", why)
		}
		labels := []Label{{Name: "cluster", Value: "c"}, {Name: "job_id", Value: "7"}, {Name: "node", Value: "n1"}}
		m.Name(Identity{Labels: labels, Doc: jobmodel.Node{DocID: "c:7/n1", JobDocID: "c:7"}})
		if !m.Late() {
			t.Errorf("%s: Late had nothing to send", why)
		}
		if m.Late() {
			t.Errorf("%s: Late sent twice", why)
		}
		sink.mu.Lock()
		points, stale := 0, 0
		for _, s := range sink.series {
			if s.Name != "jobsight_job_cpu_usage_seconds_total" {
				continue
			}
			if !slices.Equal(s.Labels[:3], labels) {
				t.Errorf("%s: series %s labelled %v", why, s.Name, s.Labels)
			}
			for _, p := range s.Samples {
				if math.Float64bits(p.Value) == math.Float64bits(StaleNaN) {
					stale++
				} else {
					points++
				}
			}
		}
		sink.mu.Unlock()
		wantStale := 1
		if why == StopHandedOver {
			wantStale = 0
		}
		if points != int(m.State.Count) || stale != wantStale {
			t.Errorf("%s: %d CPU points of %d samples and %d staleness markers sent late, want all and %d", why, points, m.State.Count, stale, wantStale)
		}
	}
}
