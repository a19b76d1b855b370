package monitor

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jobsight/jobsight/pkg/jobmodel"
)

// maxPendingPoints bounds what waits for a stuck store in memory (about
// 30 MB); past it the oldest raw samples are dropped, as the spool drops
// raw samples first when it is full. Documents are never dropped: only the
// newest node document waits, and it supersedes the older ones.
const maxPendingPoints = 1 << 20

// sender delivers a monitor's series and node documents from a goroutine
// of its own, so that sampling never waits for a store: the sampler hands
// over what it has and goes on, and the sender sends everything pending,
// in order, whenever the store is ready. It is the only one of the
// monitor's writers to the sink, so series keep their order (the sink
// replays its spool before newer batches).
type sender struct {
	sink    Sink
	health  *Health
	log     *slog.Logger
	timeout time.Duration

	mu      sync.Mutex
	series  []Series // pending, oldest points first
	points  int
	node    *jobmodel.Node // the newest pending node document
	wake    chan struct{}
	closing bool
	done    chan struct{}
}

func newSender(sink Sink, health *Health, log *slog.Logger) *sender {
	s := &sender{sink: sink, health: health, log: log, timeout: 30 * time.Second,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	go s.run()
	return s
}

// addSeries hands series over (their points are copied: the caller's
// buffers are reused).
func (s *sender) addSeries(series []Series) {
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

// addNode hands over a node document, replacing an older pending one.
func (s *sender) addNode(doc jobmodel.Node) {
	s.mu.Lock()
	s.node = &doc
	s.mu.Unlock()
	s.signal()
}

func (s *sender) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *sender) run() {
	defer close(s.done)
	for range s.wake {
		for {
			s.mu.Lock()
			series, node, closing := s.series, s.node, s.closing
			s.series, s.points, s.node = nil, 0, nil
			s.mu.Unlock()
			if len(series) == 0 && node == nil {
				if closing {
					return
				}
				break
			}
			s.deliver(series, node)
		}
	}
}

// deliver sends one batch: the series first, then the node document.
func (s *sender) deliver(series []Series, node *jobmodel.Node) {
	if len(series) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		if err := s.sink.PushSeries(ctx, series); err != nil {
			s.health.SinkFailures.WithLabelValues("prometheus").Inc()
			s.log.Warn("pushing series; spooled", "err", err)
		}
		cancel()
	}
	if node != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		if err := s.sink.PutNode(ctx, *node); err != nil {
			s.health.SinkFailures.WithLabelValues("elasticsearch").Inc()
			s.log.Warn("writing node document; spooled", "err", err)
		}
		cancel()
	}
}

// close delivers what is pending and stops the sender; it returns once
// everything was handed to the sink (sent or spooled by it).
func (s *sender) close() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.signal()
	<-s.done
}
