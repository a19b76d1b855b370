package monitor

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// stalls are a sample's pressure totals in seconds, in
// jobmodel.PressureFamilies order.
type stalls [5]float64

// pressureSample is a sample at t0+sec with CPU time and the given stall
// totals; read says which pressure metrics it read.
func pressureSample(t0 time.Time, sec float64, st stalls, read collector.Metric) *collector.Sample {
	var s collector.Sample
	s.Reset(t0.Add(time.Duration(sec * float64(time.Second))))
	ns := func(v float64) uint64 { return uint64(math.Round(v * 1e9)) }
	s.CPUUsageNanos = ns(sec)
	s.CPUStallSomeNanos, s.MemoryStallSomeNanos, s.MemoryStallFullNanos = ns(st[0]), ns(st[1]), ns(st[2])
	s.IOStallSomeNanos, s.IOStallFullNanos = ns(st[3]), ns(st[4])
	s.Missing &^= collector.MetricCPU | read
	return &s
}

// stallReading is a sample sec seconds after t0 with stall totals st.
type stallReading struct {
	sec float64
	st  stalls
}

// feed adds samples that read every pressure file.
func feed(st *NodeState, t0 time.Time, readings ...stallReading) {
	for _, r := range readings {
		st.Add(pressureSample(t0, r.sec, r.st, collector.MetricPressure))
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// checkFamily compares one family of a document's pressure figures.
func checkFamily(t *testing.T, p *jobmodel.PressureUsage, family int, seconds, ratio, peak float64) {
	t.Helper()
	f := p.Families()[family]
	name := jobmodel.PressureFamilies[family]
	if *f.Seconds == nil || !near(**f.Seconds, seconds) {
		t.Errorf("%s_seconds = %v, want %v", name, deref(*f.Seconds), seconds)
	}
	if *f.Ratio == nil || !near(**f.Ratio, ratio) {
		t.Errorf("%s_ratio = %v, want %v", name, deref(*f.Ratio), ratio)
	}
	if *f.PeakRatio == nil || !near(**f.PeakRatio, peak) {
		t.Errorf("%s_peak_ratio = %v, want %v", name, deref(*f.PeakRatio), peak)
	}
}

// The node document's pressure figures are the kernel's stall totals at
// the last sample that read them (since the job's cgroup was made, as
// cpu.core_seconds is), the share of the watched time stalled (what the
// totals grew by over it), and the worst single interval.
func TestPressureShareOfWatchedTime(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	st := NewNodeState(t0, 10*time.Second, 0.05)
	// The job's cgroup had stalled 5 s (I/O some) before the first
	// sample: counted in the total, as the kernel counts it, not in the
	// share of the 40 s watched (a watch that began late would otherwise
	// call a job stalled for the stalls of its start).
	feed(st, t0,
		stallReading{0, stalls{1, 0, 0, 5, 1}},
		stallReading{10, stalls{1, 0, 0, 6, 1}},  // I/O 10 %
		stallReading{20, stalls{2, 0, 0, 15, 4}}, // I/O 90 %: the worst interval
		stallReading{30, stalls{2, 1, 0.5, 17, 4}},
		stallReading{40, stalls{3, 2, 0.5, 19, 4}})
	var doc jobmodel.Node
	st.Fill(&doc, t0.Add(40*time.Second))
	p := doc.Pressure
	if p == nil || p.WatchedSeconds == nil || *p.WatchedSeconds != 40 {
		t.Fatalf("pressure %+v, want 40 s watched", p)
	}
	checkFamily(t, p, 0, 3, 0.05, 0.1)
	checkFamily(t, p, 1, 2, 0.05, 0.1)
	checkFamily(t, p, 2, 0.5, 0.0125, 0.05)
	checkFamily(t, p, 3, 19, 0.35, 0.9)
	checkFamily(t, p, 4, 4, 0.075, 0.3)
	for _, m := range []string{"cpu_pressure", "memory_pressure", "io_pressure"} {
		if slices.Contains(doc.MissingMetrics, m) {
			t.Errorf("%s named missing: %v", m, doc.MissingMetrics)
		}
	}
}

// A counter that goes back (the cgroup recreated) gives no negative
// figure, and an interval that shows more stall than its length (the
// total is read a little after the sample's time) is clamped to 1.
func TestPressureResetAndOvershootStayWithin0And1(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	st := NewNodeState(t0, 10*time.Second, 0.05)
	feed(st, t0,
		stallReading{0, stalls{100, 100, 100, 100, 100}},
		stallReading{10, stalls{110.02, 101, 100, 110.02, 100}}, // 10.02 s of stall in 10 s
		stallReading{20, stalls{3, 1, 0, 3, 0}},                 // reset: counted from 0 again
		stallReading{30, stalls{13, 1, 0, 4, 0}})
	var doc jobmodel.Node
	st.Fill(&doc, t0.Add(30*time.Second))
	p := doc.Pressure
	if p == nil {
		t.Fatal("no pressure figures")
	}
	for i, f := range p.Families() {
		for what, v := range map[string]*float64{"ratio": *f.Ratio, "peak_ratio": *f.PeakRatio, "seconds": *f.Seconds} {
			if v == nil || *v < 0 || (what != "seconds" && *v > 1) || math.IsNaN(*v) {
				t.Errorf("%s_%s = %v: want a value within 0–1 (seconds: ≥ 0)", jobmodel.PressureFamilies[i], what, deref(v))
			}
		}
	}
	// CPU some: 110.02 before the reset and 13 after it, 123.02 s in all;
	// 100 of them before the first sample, so 23.02 of the 30 s watched.
	checkFamily(t, p, 0, 123.02, 23.02/30, 1)
}

// A sample that read only some pressure files counts for none (every
// family stays over the same watched time), and a job whose pressure was
// never read in full names all three missing, without a pressure object.
func TestPressureOnlyFromSamplesThatReadEveryFile(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	st := NewNodeState(t0, 10*time.Second, 0.05)
	st.Add(pressureSample(t0, 0, stalls{1, 1, 1, 1, 1}, collector.MetricCPUPressure|collector.MetricIOPressure))
	st.Add(pressureSample(t0, 10, stalls{2, 2, 2, 2, 2}, collector.MetricCPUPressure))
	var doc jobmodel.Node
	st.Fill(&doc, t0.Add(10*time.Second))
	if doc.Pressure != nil {
		t.Errorf("pressure from partial samples: %+v", doc.Pressure)
	}
	for _, m := range []string{"cpu_pressure", "memory_pressure", "io_pressure"} {
		if !slices.Contains(doc.MissingMetrics, m) {
			t.Errorf("%s not named missing: %v", m, doc.MissingMetrics)
		}
	}
	feed(st, t0, stallReading{20, stalls{3, 3, 3, 3, 3}}, stallReading{30, stalls{4, 4, 4, 9, 4}})
	st.Add(pressureSample(t0, 40, stalls{5, 5, 5, 10, 5}, collector.MetricCPUPressure))
	st.Fill(&doc, t0.Add(40*time.Second))
	if p := doc.Pressure; p == nil || p.WatchedSeconds == nil || *p.WatchedSeconds != 10 {
		t.Fatalf("pressure %+v, want the 10 s between the two full samples", doc.Pressure)
	}
	checkFamily(t, doc.Pressure, 3, 9, 0.6, 0.6)
}

// A checkpoint written before pressure, OOM kills and the threads' kernel
// peak existed still loads: the job goes on with them missing until read,
// and a checkpoint with them restores them.
func TestCheckpointWithoutPressureStillLoads(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	st := NewNodeState(t0, 10*time.Second, 0.05)
	s := pressureSample(t0, 0, stalls{}, 0)
	s.Threads, s.Missing = 4, s.Missing&^collector.MetricThreads
	st.Add(s)
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"pressure", "oom_kills", "threads_kernel_peak"} {
		if _, ok := fields[k]; ok {
			t.Errorf("a state that never read %s writes it to the checkpoint", k)
		}
	}
	// That is what an older agent wrote: no new keys, and no bit for the
	// new metrics in the seen set.
	old := b
	var resumed NodeState
	if err := json.Unmarshal(old, &resumed); err != nil {
		t.Fatalf("an older checkpoint does not load: %v", err)
	}
	var doc jobmodel.Node
	resumed.Fill(&doc, t0.Add(10*time.Second))
	if doc.Pressure != nil || (doc.Memory != nil && doc.Memory.OOMKills != nil) {
		t.Errorf("figures never read appear: pressure %+v, memory %+v", doc.Pressure, doc.Memory)
	}
	for _, m := range []string{"cpu_pressure", "memory_pressure", "io_pressure", "oom_kills", "threads_peak"} {
		if !slices.Contains(doc.MissingMetrics, m) {
			t.Errorf("%s not named missing after resuming an older checkpoint: %v", m, doc.MissingMetrics)
		}
	}
	// The resumed job reads them now; through a new checkpoint too.
	feed(&resumed, t0, stallReading{20, stalls{}}, stallReading{30, stalls{0, 0, 0, 5, 0}})
	b, _ = json.Marshal(&resumed)
	var again NodeState
	if err := json.Unmarshal(b, &again); err != nil {
		t.Fatal(err)
	}
	feed(&again, t0, stallReading{40, stalls{0, 0, 0, 10, 0}})
	again.Fill(&doc, t0.Add(40*time.Second))
	if doc.Pressure == nil {
		t.Fatal("no pressure figures after the restore")
	}
	checkFamily(t, doc.Pressure, 3, 10, 0.5, 0.5)
}

// OOM kills are the kernel's count since the cgroup was created (the first
// reading counts), and the threads' peak is raised to the kernel's mark
// where it saw more than the samples.
func TestOOMKillsAndThreadsKernelPeak(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	st := NewNodeState(t0, 10*time.Second, 0.05)
	for i, r := range []struct {
		kills          uint64
		threads, peaks uint32
	}{{1, 10, 12}, {1, 20, 40}, {3, 15, 40}} {
		s := pressureSample(t0, float64(10*i), stalls{}, 0)
		s.OOMKills, s.Threads, s.ThreadsPeak = r.kills, r.threads, r.peaks
		s.Missing &^= collector.MetricOOMKills | collector.MetricThreads | collector.MetricThreadsPeak
		st.Add(s)
	}
	var doc jobmodel.Node
	st.Fill(&doc, t0.Add(20*time.Second))
	if doc.Memory == nil || doc.Memory.OOMKills == nil || *doc.Memory.OOMKills != 3 {
		t.Errorf("memory.oom_kills = %+v, want 3", doc.Memory)
	}
	if doc.Threads == nil || doc.Threads.Peak == nil || *doc.Threads.Peak != 40 {
		t.Errorf("threads = %+v, want peak 40 (the kernel's mark; sampled at most 20)", doc.Threads)
	}
}
