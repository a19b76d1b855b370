package monitor

import (
	"context"
	"log/slog"
	"time"
)

// Scheduler samples every job a node agent watches on one timer: each
// wake-up runs every job's monitor in turn, so the node pays one wake-up
// per interval however many jobs it runs, and one Sender carries all of
// their series and documents in order.
type Scheduler struct {
	interval, pushInterval, flushInterval time.Duration
	snd                                   *Sender
	health                                *Health
	log                                   *slog.Logger
	labels                                []Label // the node's: cluster, node
	now                                   func() time.Time

	reqs chan schedReq
	// watching is the loop's own (never touched outside run).
	watching   map[*watch]bool
	lastPushMs int64
}

type watch struct {
	m    *Monitor
	done chan StopReason
}

type schedReq struct {
	w    *watch
	stop bool
	why  StopReason // stop's
}

// NewScheduler makes a scheduler waking every interval; every job's
// points, and the agent's health series labelled with labels (the
// node's), are pushed every pushInterval, and every job's node document
// written every flushInterval. Run runs it.
func NewScheduler(interval, pushInterval, flushInterval time.Duration, snd *Sender, health *Health, labels []Label, log *slog.Logger, now func() time.Time) *Scheduler {
	if now == nil {
		now = time.Now
	}
	return &Scheduler{interval: interval, pushInterval: pushInterval, flushInterval: flushInterval, snd: snd, health: health, labels: labels, log: log,
		now: now, reqs: make(chan schedReq), watching: map[*watch]bool{}}
}

// Run wakes every interval until ctx ends; then it ends every watch as
// stopped.
func (s *Scheduler) Run(ctx context.Context) {
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	lastPush := s.now()
	lastJobPush, lastFlush := lastPush, lastPush
	for {
		select {
		case <-ctx.Done():
			for w := range s.watching {
				s.end(w, StopRequested)
			}
			s.pushHealth(false)
			return
		case r := <-s.reqs:
			switch {
			case !r.stop:
				r.w.m.Begin(s.snd)
				s.watching[r.w] = true
			case s.watching[r.w]:
				s.end(r.w, r.why)
			}
			s.health.JobsWatched.Set(float64(len(s.watching)))
		case <-tick.C:
			start := s.now()
			// Every job's points go out on the same wake-up, and every
			// job's node document: one request each for the node.
			push := start.Sub(lastJobPush) >= s.pushInterval
			flush := start.Sub(lastFlush) >= s.flushInterval
			if push || flush {
				lastJobPush = start
			}
			if flush {
				lastFlush = start
			}
			for w := range s.watching {
				if w.m.TickAligned(push, flush) {
					s.end(w, StopJobGone)
				}
			}
			took := s.now().Sub(start)
			s.health.Wakes.Inc()
			s.health.WakeSeconds.Set(took.Seconds())
			s.health.JobsWatched.Set(float64(len(s.watching)))
			s.health.SendQueue.Set(float64(s.snd.Pending()))
			if start.Sub(lastPush) >= s.pushInterval {
				s.pushHealth(true)
				lastPush = start
			}
		}
	}
}

// end finishes one watch and tells its Watch why.
func (s *Scheduler) end(w *watch, why StopReason) {
	w.m.End(why)
	delete(s.watching, w)
	w.done <- why
}

// pushHealth sends the agent's health series with the node's labels
// (stale markers when the agent is about to exit).
func (s *Scheduler) pushHealth(live bool) {
	ts := max(s.now().UnixMilli(), s.lastPushMs+1)
	hs, err := s.health.Series(ts, s.labels)
	if err != nil {
		return
	}
	if !live {
		for i := range hs {
			hs[i].Samples = []Point{{TimestampMs: ts, Value: StaleNaN}}
		}
	}
	s.lastPushMs = ts
	s.snd.AddSeries(hs)
}

// Watch samples m on the scheduler's wake-ups until ctx ends (StopRequested:
// a last sample is taken) or the job is gone, and returns why. What m
// produced has been handed to the sender, not necessarily delivered
// (Sender.Flush waits for that). The scheduler's Run must be running.
func (s *Scheduler) Watch(ctx context.Context, m *Monitor) StopReason {
	w := &watch{m: m, done: make(chan StopReason, 1)}
	s.reqs <- schedReq{w: w}
	select {
	case why := <-w.done:
		return why
	case <-ctx.Done():
	}
	select {
	case s.reqs <- schedReq{w: w, stop: true, why: stopReason(ctx)}:
	case why := <-w.done:
		return why
	}
	return <-w.done
}
