package monitor

import (
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobsight/jobsight/agent/rawio"
)

// Phase is a part of the node agent's work whose CPU time the health
// series count on their own, so that an operator (and docs/performance.md)
// can say where the agent's CPU goes on a busy node.
type Phase int

// The phases. Sampling, aggregation, push, flush and checkpoint run on
// the scheduler's wake-up; remote write and node documents on the
// sender's goroutine; Slurm lookups when a job starts or ends.
const (
	PhaseSample      Phase = iota // the collectors' reads of every job (cgroup, /proc, GPUs, energy)
	PhaseAggregate                // folding each sample into the job's aggregates and point buffers
	PhasePush                     // handing every job's buffered points to the sender
	PhaseFlush                    // rendering every job's node document
	PhaseCheckpoint               // writing every job's checkpoint file
	PhaseHealth                   // gathering the agent's own health series
	PhaseRemoteWrite              // encoding, compressing and sending the remote-write request
	PhaseNodeDocs                 // encoding and sending the node documents (bulk)
	PhaseSlurm                    // squeue lookups: reading their answers (squeue's own CPU is the children's)
	nPhases
)

var phaseNames = [nPhases]string{"sample", "aggregate", "push", "flush", "checkpoint", "health", "remote_write", "node_documents", "slurm"}

func (p Phase) String() string { return phaseNames[p] }

// Phases counts CPU time by phase, on the process's CPU clock (every
// thread's). The agent runs Go code on one thread at a time (GOMAXPROCS
// 1), so a span's CPU is its own work plus what the runtime's monitor
// thread and the kernel did for the process meanwhile. (A thread's own
// clock would be finer, but the scheduler's goroutine changes threads
// when a slow system call gives its processor away, and a difference of
// two threads' clocks means nothing.) A span that waits (the sender's
// request, a squeue run) lets other phases run meanwhile, and a phase may
// run inside another (the health gather inside a push): a span counts
// only what no phase it overlapped claimed, so each CPU second is counted
// once. What no phase claims — the Go runtime between phases (garbage
// collection, timers, goroutine hand-offs), the kernel's wake-up, the
// socket — is the process's CPU minus every phase, reported as "other".
type Phases struct {
	byPhase [nPhases]atomic.Int64 // nanoseconds
	claimed atomic.Int64          // every phase's, in all
}

// Span is the start of a timed phase (Begin). The clock is a raw system
// call (agent/rawio), so timing the wake-up does not itself wake the Go
// runtime's monitor thread.
type Span struct{ cpu, claimed time.Duration }

// Add counts d of CPU time to phase p.
func (ph *Phases) Add(p Phase, d time.Duration) {
	if ph == nil || d <= 0 {
		return
	}
	ph.byPhase[p].Add(int64(d))
	ph.claimed.Add(int64(d))
}

// Begin starts timing a phase.
func (ph *Phases) Begin() Span {
	if ph == nil {
		return Span{}
	}
	return Span{cpu: rawio.ProcessCPU(), claimed: time.Duration(ph.claimed.Load())}
}

// End counts to p the CPU used since s, less what other phases claimed
// meanwhile (nested in it, or run while it waited). A phase that both
// began before s and ended inside it is taken off whole: the figure
// errs low, never twice.
func (ph *Phases) End(p Phase, s Span) {
	if ph == nil {
		return
	}
	ph.Add(p, rawio.ProcessCPU()-s.cpu-(time.Duration(ph.claimed.Load())-s.claimed))
}

// phaseCollector exports the phases, the process's CPU, the remainder no
// phase claims, and what the Go runtime and the kernel say of the
// process's scheduling (GC, context switches), read when the health
// series are gathered (once a push, not once a sample).
type phaseCollector struct {
	ph                              *Phases
	cpu, byPhase, ctxsw, gcCPU, gcs *prometheus.Desc

	mu      sync.Mutex
	samples []metrics.Sample
	other   float64 // the last remainder shown: a counter never goes back
}

func newPhaseCollector(ph *Phases) *phaseCollector {
	return &phaseCollector{ph: ph,
		cpu: prometheus.NewDesc("jobsight_agent_cpu_seconds_total",
			"CPU time of the agent process (user + system, every thread).", nil, nil),
		byPhase: prometheus.NewDesc("jobsight_agent_phase_cpu_seconds_total",
			"CPU time of the agent by phase of its work; \"other\" is what no phase claims (the Go runtime: GC, timers, goroutine hand-offs; the wake-up itself).", []string{"phase"}, nil),
		ctxsw: prometheus.NewDesc("jobsight_agent_context_switches_total",
			"Context switches of the agent's threads (voluntary: it waited; involuntary: the kernel preempted it).", []string{"kind"}, nil),
		gcCPU: prometheus.NewDesc("jobsight_agent_go_gc_cpu_seconds_total",
			"The Go runtime's estimate of the CPU its garbage collector used (part of the phases and of other).", nil, nil),
		gcs:     prometheus.NewDesc("jobsight_agent_go_gc_cycles_total", "Garbage collections completed.", nil, nil),
		samples: []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/gc/cycles/total:gc-cycles"}},
	}
}

func (c *phaseCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.cpu, c.byPhase, c.ctxsw, c.gcCPU, c.gcs} {
		ch <- d
	}
}

func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	total := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	ch <- prometheus.MustNewConstMetric(c.cpu, prometheus.CounterValue, total.Seconds())
	var claimed time.Duration
	for p := range c.ph.byPhase {
		v := time.Duration(c.ph.byPhase[p].Load())
		claimed += v
		ch <- prometheus.MustNewConstMetric(c.byPhase, prometheus.CounterValue, v.Seconds(), Phase(p).String())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// The phases' clocks and getrusage's round differently: the remainder
	// is a counter, so it never goes below what it showed before.
	c.other = max(c.other, (total - claimed).Seconds())
	ch <- prometheus.MustNewConstMetric(c.byPhase, prometheus.CounterValue, c.other, "other")
	ch <- prometheus.MustNewConstMetric(c.ctxsw, prometheus.CounterValue, float64(ru.Nvcsw), "voluntary")
	ch <- prometheus.MustNewConstMetric(c.ctxsw, prometheus.CounterValue, float64(ru.Nivcsw), "involuntary")
	metrics.Read(c.samples)
	if s := c.samples[0]; s.Value.Kind() == metrics.KindFloat64 {
		ch <- prometheus.MustNewConstMetric(c.gcCPU, prometheus.CounterValue, s.Value.Float64())
	}
	if s := c.samples[1]; s.Value.Kind() == metrics.KindUint64 {
		ch <- prometheus.MustNewConstMetric(c.gcs, prometheus.CounterValue, float64(s.Value.Uint64()))
	}
}
