package monitor

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/spool"
)

// maxPendingPoints bounds what waits for a stuck store in memory (about
// 30 MB); past it the oldest raw samples are dropped, as the spool drops
// raw samples first when it is full. Documents are never dropped: only the
// newest node document waits, and it supersedes the older ones.
const maxPendingPoints = 1 << 20

// Sender delivers series and node documents from a goroutine of its own,
// so that sampling never waits for a store: the sampler hands over what it
// has and goes on, and the sender sends everything pending, in order,
// whenever the store is ready. On a node it is the one writer of series
// for every job the agent watches, so series keep their order (the sink
// replays its spool before newer batches) and all jobs' points of one
// wake-up go out in one remote-write request.
type Sender struct {
	sink    Sink
	health  *Health
	log     *slog.Logger
	timeout time.Duration
	// base is every delivery's parent context; CloseBy cancels it when
	// its deadline passes, so a store that does not answer is given up
	// on (the sink then spools) instead of holding the agent's exit.
	base       context.Context
	cancelBase context.CancelFunc

	mu       sync.Mutex
	series   []Series // pending, oldest points first
	points   int
	nodes    []jobmodel.Node // the newest pending document of each node document id
	barriers []chan struct{}
	wake     chan struct{}
	closing  bool
	done     chan struct{}
}

// NewSender starts a sender writing to sink.
func NewSender(sink Sink, health *Health, log *slog.Logger) *Sender {
	s := &Sender{sink: sink, health: health, log: log, timeout: 30 * time.Second,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.base, s.cancelBase = context.WithCancel(context.Background())
	go s.run()
	return s
}

// AddSeries hands series over (their points are copied: the caller's
// buffers are reused).
func (s *Sender) AddSeries(series []Series) {
	if len(series) == 0 {
		return
	}
	s.mu.Lock()
	for _, in := range series {
		s.series = append(s.series, Series{Name: in.Name, Labels: in.Labels, Samples: append([]Point(nil), in.Samples...)})
		s.points += len(in.Samples)
	}
	for s.points > maxPendingPoints && len(s.series) > 0 {
		s.points -= len(s.series[0].Samples)
		s.series = s.series[1:]
		s.health.SpoolDropped.WithLabelValues("samples").Inc()
	}
	s.mu.Unlock()
	s.signal()
}

// AddNode hands over a node document, replacing an older pending one of
// the same id.
func (s *Sender) AddNode(doc jobmodel.Node) {
	s.mu.Lock()
	replaced := false
	for i := range s.nodes {
		if s.nodes[i].DocID == doc.DocID {
			s.nodes[i], replaced = doc, true
		}
	}
	if !replaced {
		s.nodes = append(s.nodes, doc)
	}
	s.mu.Unlock()
	s.signal()
}

// Pending is how many points wait to be sent.
func (s *Sender) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.points
}

// Flush returns once everything handed over before it was handed to the
// sink (sent, or spooled by the sink).
func (s *Sender) Flush() {
	ch := make(chan struct{})
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.barriers = append(s.barriers, ch)
	s.mu.Unlock()
	s.signal()
	<-ch
}

func (s *Sender) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Sender) run() {
	defer close(s.done)
	for range s.wake {
		for {
			s.mu.Lock()
			series, nodes, barriers, closing := s.series, s.nodes, s.barriers, s.closing
			s.series, s.points, s.nodes, s.barriers = nil, 0, nil, nil
			s.mu.Unlock()
			if len(series) == 0 && len(nodes) == 0 {
				for _, b := range barriers {
					close(b)
				}
				if closing {
					return
				}
				break
			}
			s.deliver(series, nodes)
			for _, b := range barriers {
				close(b)
			}
		}
	}
}

// logFailure logs a write the store did not take: spooled (the error
// wraps spool.ErrSpooled), or — the spool's disk full — nowhere.
func (s *Sender) logFailure(what string, err error) {
	if errors.Is(err, spool.ErrSpooled) {
		s.log.Warn(what+": the store did not take it; spooled", "err", err)
		return
	}
	s.log.Error(what+": neither stored nor spooled", "err", err)
}

// deliver sends one batch: the series first, then the node documents.
func (s *Sender) deliver(series []Series, nodes []jobmodel.Node) {
	if len(series) > 0 {
		span := s.health.Phases.Begin()
		ctx, cancel := context.WithTimeout(s.base, s.timeout)
		if err := s.sink.PushSeries(ctx, series); err != nil {
			s.health.SinkFailures.WithLabelValues("prometheus").Inc()
			s.logFailure("pushing series", err)
		}
		cancel()
		s.health.Phases.End(PhaseRemoteWrite, span)
	}
	if len(nodes) == 0 {
		return
	}
	defer s.health.Phases.End(PhaseNodeDocs, s.health.Phases.Begin())
	ctx, cancel := context.WithTimeout(s.base, s.timeout)
	defer cancel()
	if b, ok := s.sink.(NodeBatchSink); ok {
		if err := b.PutNodes(ctx, nodes); err != nil {
			s.health.SinkFailures.WithLabelValues("elasticsearch").Inc()
			s.logFailure("writing node documents", err)
		}
		return
	}
	for _, node := range nodes {
		if err := s.sink.PutNode(ctx, node); err != nil {
			s.health.SinkFailures.WithLabelValues("elasticsearch").Inc()
			s.logFailure("writing node document", err)
		}
	}
}

// NodeBatchSink is a Sink that writes several node documents in one
// request (the node agent's flush of every job).
type NodeBatchSink interface {
	PutNodes(ctx context.Context, docs []jobmodel.Node) error
}

// Close delivers what is pending and stops the sender; it returns once
// everything was handed to the sink (sent or spooled by it).
func (s *Sender) Close() {
	s.CloseBy(context.Background())
}

// CloseBy is Close with a deadline: when ctx ends first, the deliveries
// still under way or pending are cut short, so that the sink spools what
// they carry, and CloseBy returns once it has.
func (s *Sender) CloseBy(ctx context.Context) {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.signal()
	select {
	case <-s.done:
	case <-ctx.Done():
		s.cancelBase()
		<-s.done
	}
	s.cancelBase()
}
