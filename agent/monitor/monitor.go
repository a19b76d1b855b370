package monitor

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// Sink is where the monitor sends what it measures. Implementations never
// lose data: what a store does not take goes to the spool, and the error
// returned is only for the health counters and the log.
type Sink interface {
	// PushSeries sends a batch of series to Prometheus.
	PushSeries(ctx context.Context, series []Series) error
	// PutNode writes the node document.
	PutNode(ctx context.Context, doc jobmodel.Node) error
}

// Options tune the loop.
type Options struct {
	Interval        time.Duration
	FlushInterval   time.Duration
	PushInterval    time.Duration
	ActiveThreshold float64
	// Labels are the labels of every series: cluster, job_id, node.
	Labels []Label
	// Checkpoint, when set, is called with the state after every flush.
	Checkpoint func(*NodeState, jobmodel.Node) error
	// GoneAfter ends the loop when the job has been unreadable (its cgroup
	// or processes gone) this long after it was first seen. 0 disables.
	GoneAfter time.Duration
	Now       func() time.Time
}

// Monitor samples one job on this node.
type Monitor struct {
	opts   Options
	source collector.Collector
	sink   Sink
	health *Health
	log    *slog.Logger
	State  *NodeState
	// Doc is the node document template: identity and metadata; the
	// monitor fills in usage at each flush.
	Doc jobmodel.Node
	buf *Buffer
	// lastPushMs is the newest timestamp pushed (the health series'), so
	// that the staleness markers come after it.
	lastPushMs   int64
	perCollector map[string]collectorMetrics
	// unheld and capped are the proc collector's last FileCap, what this
	// monitor has added to the node's health series.
	unheld int
	capped uint64
	// snd delivers from its own goroutine (the monitor's own in Run, the
	// node's under a Scheduler); push and flush only hand over to it.
	snd *Sender
	// pushHealth: the agent's health series go out with the job's (Run);
	// under a Scheduler the node pushes them once, with the node's labels.
	pushHealth bool

	// held: the job's identity is not known yet (Slurm has not answered):
	// samples are taken and kept, nothing is pushed or written until Name
	// gives the labels and the node document (named, applied by the
	// monitor's own goroutine at its next pass).
	held  bool
	named atomic.Pointer[Identity]
	// endedHeld is why a watch that ended still held ended: its points
	// wait in the buffer for Late.
	endedHeld StopReason

	// The watch in progress (Begin … End).
	sampleBuf           collector.Sample
	lastFlush, lastPush time.Time
	goneSince           time.Time
}

// New makes a monitor. state may be a restored checkpoint or nil.
func New(opts Options, source collector.Collector, sink Sink, health *Health, doc jobmodel.Node, state *NodeState, log *slog.Logger) *Monitor {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if state == nil {
		state = NewNodeState(opts.Now(), opts.Interval, opts.ActiveThreshold)
	}
	perPush := int(opts.PushInterval/opts.Interval) + 2
	return &Monitor{opts: opts, source: source, sink: sink, health: health, log: log, State: state, Doc: doc, buf: NewBuffer(perPush)}
}

// Identity is what a held monitor waits for: its series' labels, its
// node document template and its checkpoint function (Options').
type Identity struct {
	Labels     []Label
	Doc        jobmodel.Node
	Checkpoint func(*NodeState, jobmodel.Node) error
}

// Hold makes a monitor, before it begins, sample without pushing series or
// writing its node document until Name: a job's samples need not wait for
// Slurm to say which job it is (an array task's id, its submit time).
// The points it takes meanwhile are pushed, under the labels Name gives,
// with the first push after it; if the watch ends still held, they wait
// for Late.
func (m *Monitor) Hold() { m.held = true }

// Name gives a held monitor its identity; it may be called from any
// goroutine, and takes effect at the monitor's next pass.
func (m *Monitor) Name(id Identity) { m.named.Store(&id) }

// adopt takes the identity Name gave, if any (the driving goroutine).
func (m *Monitor) adopt() {
	if id := m.named.Swap(nil); id != nil {
		m.opts.Labels, m.Doc, m.opts.Checkpoint = id.Labels, id.Doc, id.Checkpoint
		m.held = false
	}
}

// StopReason says why Run returned.
type StopReason string

// Reasons Run returns.
const (
	StopRequested StopReason = "stop requested" // ctx ended: the epilog or a signal asked
	StopJobGone   StopReason = "job gone"       // the job's cgroup and processes vanished
	// StopHandedOver: ctx ended with cause ErrHandover. A new agent
	// takes the job on from its checkpoint, so its series get a last
	// sample and no staleness marker: they go on under the new agent.
	StopHandedOver StopReason = "handed over"
)

// ErrHandover is the cause a watch's context is cancelled with when the
// node agent hands its jobs over to a new agent (an upgrade).
var ErrHandover = errors.New("handed over to a new agent")

// stopReason is why a watch whose ctx ended stops.
func stopReason(ctx context.Context) StopReason {
	if errors.Is(context.Cause(ctx), ErrHandover) {
		return StopHandedOver
	}
	return StopRequested
}

// Run samples until ctx ends or the job is gone, on a ticker and a sender
// of its own (the standalone mode; on a node the Scheduler drives every
// job's monitor from one timer), then takes a last sample and pushes the
// series. It returns why it stopped; the caller writes the final node
// document.
//
// Series and node documents go out from a goroutine of their own, so a
// slow or hung store never holds sampling up; Run returns once everything
// it produced has been handed to the sink (delivered or spooled).
func (m *Monitor) Run(ctx context.Context) StopReason {
	snd := NewSender(m.sink, m.health, m.log)
	defer snd.Close()
	m.pushHealth = true
	m.Begin(snd)
	tick := time.NewTicker(m.opts.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			why := stopReason(ctx)
			m.End(why)
			return why
		case <-tick.C:
		}
		if m.Tick() {
			m.End(StopJobGone)
			return StopJobGone
		}
	}
}

// Begin starts watching: the first sample. What the monitor produces goes
// to snd.
func (m *Monitor) Begin(snd *Sender) {
	m.snd = snd
	m.lastFlush, m.lastPush = m.opts.Now(), m.opts.Now()
	m.goneSince = time.Time{}
	m.sample(&m.sampleBuf)
}

// Tick takes one sampling pass, pushes and flushes when they are due, and
// reports whether the job is gone (unreadable for GoneAfter).
func (m *Monitor) Tick() (gone bool) {
	return m.tick(func(now time.Time) (bool, bool) {
		return now.Sub(m.lastPush) >= m.opts.PushInterval, now.Sub(m.lastFlush) >= m.opts.FlushInterval
	})
}

// TickAligned is Tick with pushes and flushes when the caller says: the
// node agent pushes every job's points, and writes every job's node
// document, on the same wake-up, so they leave in one request each.
func (m *Monitor) TickAligned(push, flush bool) (gone bool) {
	return m.tick(func(time.Time) (bool, bool) { return push, flush })
}

func (m *Monitor) tick(due func(now time.Time) (push, flush bool)) (gone bool) {
	s := &m.sampleBuf
	err := m.sample(s)
	now := s.Time
	if errors.Is(err, os.ErrNotExist) && s.Missing == collector.AllMetrics && m.State.Count > 0 {
		if m.goneSince.IsZero() {
			m.goneSince = now
		}
		if m.opts.GoneAfter > 0 && now.Sub(m.goneSince) >= m.opts.GoneAfter {
			return true
		}
	} else {
		m.goneSince = time.Time{}
	}
	push, flush := due(now)
	if m.adopt(); m.held {
		return false
	}
	if push || flush {
		m.push()
		m.lastPush = now
	}
	if flush {
		m.flush(true)
		m.lastFlush = now
	}
	return false
}

// End finishes the watch: a last sample when the job may still run (the
// watch was asked to stop, or hands over), the buffered points, and a
// staleness marker for every series of the job unless another agent goes
// on with them (StopHandedOver).
func (m *Monitor) End(why StopReason) {
	if why != StopJobGone {
		m.sample(&m.sampleBuf)
	}
	m.health.ProcessesUnheld.Sub(float64(m.unheld)) // its collectors close
	m.unheld = 0
	if m.adopt(); m.held {
		m.endedHeld = why // no labels to push under yet: Late sends them
		return
	}
	m.push()
	if why != StopHandedOver {
		m.pushStale()
	}
}

// Late delivers what a watch that ended still held kept back, once Name
// has given its identity: the points sampled (a job of seconds can end
// before Slurm says which job it was) and, unless it was handed over,
// the staleness markers. It returns once they were handed to the sink
// (sent or spooled), and reports whether there was anything to send. Only
// once the watch has ended.
func (m *Monitor) Late() bool {
	if m.adopt(); m.held || m.endedHeld == "" {
		return false
	}
	snd := NewSender(m.sink, m.health, m.log)
	defer snd.Close()
	m.snd = snd
	m.push()
	if m.endedHeld != StopHandedOver {
		m.pushStale()
	}
	m.endedHeld = ""
	return true
}

// sample takes one pass over the collectors.
func (m *Monitor) sample(s *collector.Sample) error {
	span := m.health.Phases.Begin()
	start := m.opts.Now()
	s.Reset(start)
	var err error
	if set, ok := m.source.(collector.Set); ok {
		// Each collector on its own, so errors and time are its own.
		var errs []error
		for _, c := range set {
			t0 := m.opts.Now()
			cerr := c.Collect(s)
			m.collected(c.Name(), m.opts.Now().Sub(t0), cerr)
			m.noteFileCap(c)
			if cerr != nil {
				errs = append(errs, cerr)
			}
		}
		err = errors.Join(errs...)
	} else {
		err = m.source.Collect(s)
		m.collected(m.source.Name(), m.opts.Now().Sub(start), err)
		m.noteFileCap(m.source)
	}
	m.health.Samples.Inc()
	m.health.SampleSeconds.Add(m.opts.Now().Sub(start).Seconds())
	m.health.Phases.End(PhaseSample, span)
	span = m.health.Phases.Begin()
	m.State.Add(s)
	m.buf.Add(s)
	if m.State.Energy != nil {
		m.buf.addEnergy(s.Time.UnixMilli(), m.State)
	}
	m.health.Phases.End(PhaseAggregate, span)
	return err
}

// noteFileCap adds what changed in a capped collector's count of
// processes read without kept-open files to the health series, which sum
// every job the agent watches.
func (m *Monitor) noteFileCap(c collector.Collector) {
	fc, ok := c.(collector.FileCapper)
	if !ok {
		return
	}
	unheld, capped := fc.FileCap()
	if unheld != m.unheld {
		m.health.ProcessesUnheld.Add(float64(unheld - m.unheld))
		m.unheld = unheld
	}
	if capped > m.capped {
		m.health.ProcessesCapped.Add(float64(capped - m.capped))
		m.capped = capped
	}
}

// collectorMetrics are one collector's health series, looked up once.
type collectorMetrics struct {
	errors            prometheus.Counter
	success, duration prometheus.Gauge
}

// collected records one collector's pass in the health metrics.
func (m *Monitor) collected(name string, took time.Duration, err error) {
	cm, ok := m.perCollector[name]
	if !ok {
		cm = collectorMetrics{errors: m.health.CollectorErrors.WithLabelValues(name),
			success: m.health.CollectorSuccess.WithLabelValues(name), duration: m.health.CollectorDuration.WithLabelValues(name)}
		if m.perCollector == nil {
			m.perCollector = map[string]collectorMetrics{}
		}
		m.perCollector[name] = cm
	}
	cm.duration.Set(took.Seconds())
	if err != nil {
		cm.errors.Inc()
		cm.success.Set(0)
		m.log.Debug("sampling", "collector", name, "err", err)
		return
	}
	cm.success.Set(1)
}

// push sends buffered points and the health metrics to Prometheus.
func (m *Monitor) push() {
	defer m.health.Phases.End(PhasePush, m.health.Phases.Begin())
	series := make([]Series, 0, len(JobMetrics)+16)
	for i, pts := range m.buf.Points {
		if len(pts) > 0 {
			series = append(series, Series{Name: JobMetrics[i].Name, Labels: m.opts.Labels, Samples: pts})
		}
	}
	series = m.buf.gpuSeries(series, m.opts.Labels)
	series = m.buf.energySeries(series, m.opts.Labels)
	ts := max(m.opts.Now().UnixMilli(), m.lastPushMs+1)
	if m.pushHealth {
		if hs, err := m.health.Series(ts, m.opts.Labels); err == nil {
			series = append(series, hs...)
		}
	}
	m.lastPushMs = ts
	m.snd.AddSeries(series)
	m.buf.Reset()
}

// pushStale ends every series of the job with a staleness marker, so that
// the job leaves instant queries (running jobs, hogging alerts) when it
// ends rather than five minutes later.
func (m *Monitor) pushStale() {
	ts := max(m.opts.Now().UnixMilli(), m.lastPushMs+1)
	series := m.buf.staleSeries(m.opts.Labels, ts)
	if m.pushHealth {
		if hs, err := m.health.Series(ts, m.opts.Labels); err == nil {
			for i := range hs {
				hs[i].Samples = []Point{{TimestampMs: ts, Value: StaleNaN}}
			}
			series = append(series, hs...)
		}
	}
	m.lastPushMs = ts
	m.snd.AddSeries(series)
}

// flush pushes what is buffered, writes the node document (running says
// whether the job is still being watched) and checkpoints.
func (m *Monitor) flush(running bool) {
	m.push()
	span := m.health.Phases.Begin()
	m.snd.AddNode(m.NodeDoc(running))
	m.health.Phases.End(PhaseFlush, span)
	if m.opts.Checkpoint != nil {
		span = m.health.Phases.Begin()
		if err := m.opts.Checkpoint(m.State, m.Doc); err != nil {
			m.log.Warn("writing checkpoint", "err", err)
		}
		m.health.Phases.End(PhaseCheckpoint, span)
	}
}

// NodeDoc renders the node document as of now.
func (m *Monitor) NodeDoc(running bool) jobmodel.Node {
	doc := m.Doc
	now := m.opts.Now()
	m.State.Fill(&doc, now)
	doc.UpdatedAt = jobmodel.At(now)
	doc.AgentState = jobmodel.AgentFinished
	doc.Final = !running
	if running {
		doc.AgentState = jobmodel.AgentRunning
		doc.EndTime = nil
	}
	return doc
}
