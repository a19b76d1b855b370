// Package clusterstate is the cluster-state collector: one process per
// cluster, on a controller or login node, that polls Slurm (`sinfo
// --json`, and a narrow `squeue -O` without any field a user writes:
// internal/slurm/squeuetext.go) once per
// interval and writes what the whole cluster is doing — node states with
// every flag, CPUs, memory and GPUs by type per node and partition,
// pending demand per partition — as Prometheus series (remote write) and
// a compact history document in Elasticsearch. It also serves the site's
// allocations and constants at /constants for the datasource's Allocation
// query. docs/cluster-state.md describes it for operators.
package clusterstate

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/jobsight/jobsight/internal/slurm"
	"github.com/jobsight/jobsight/internal/spool"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/store/promremote"
)

// Spool targets.
const (
	targetES   = "elasticsearch"
	targetProm = "prometheus"
)

// Source is where a poll reads the cluster from (a *slurm.Client, or
// captured answers in tests).
type Source interface {
	Nodes(ctx context.Context) ([]byte, error)
	Jobs(ctx context.Context) ([]byte, error)
	Calls() uint64
}

// Collector polls one cluster and writes its state.
type Collector struct {
	cfg   Config
	src   Source
	rw    *promremote.Client    // nil: no Prometheus
	es    *elasticsearch.Client // nil: no Elasticsearch
	spool *spool.Spool          // nil: neither store
	log   *slog.Logger
	now   func() time.Time

	metrics collectorMetrics

	mu          sync.Mutex
	stale       staleness
	lastBucket  time.Time
	indexReady  bool
	pollErrors  uint64
	lastSuccess time.Time
	lastLost    time.Time // the last check for lost jobs
	// The queue's last answer, when it was read, and when it is read next
	// (queue_cpu_budget); only the polling goroutine touches them.
	queue              *queueSummary // the last squeue read, summarised
	queueAt, nextQueue time.Time
	childCPU, selfCPU  func() time.Duration
	// nextRetention is when retention runs next (retention.go).
	nextRetention time.Time
	// The unreported check's log state: the nodes last reported, and
	// warnings given once.
	lastUnreported    []string
	warnedUnchecked   bool
	warnedNoNodeIndex bool
}

// collectorMetrics are the collector's own metrics on /metrics.
type collectorMetrics struct {
	duration    prometheus.Gauge
	calls       prometheus.CounterFunc
	errors      *prometheus.CounterVec
	lastSuccess prometheus.Gauge
	series      prometheus.Gauge
	spooled     prometheus.GaugeFunc
	lostClosed  prometheus.Counter
}

// Options are what New needs besides the configuration.
type Options struct {
	// Source is the cluster; a *slurm.Client built from Config.Slurm when
	// nil.
	Source Source
	// Registerer takes the collector's metrics; none when nil.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// ChildCPU is the CPU time the process's finished children used
	// (the Slurm commands it runs); getrusage(RUSAGE_CHILDREN) when nil.
	ChildCPU func() time.Duration
	// SelfCPU is the process's own CPU time; getrusage(RUSAGE_SELF) when
	// nil.
	SelfCPU func() time.Duration
}

// New builds a collector; credentials are read from their files here and
// errors name the option, never the secret. It contacts no server.
func New(cfg Config, opts Options) (*Collector, error) {
	c := &Collector{cfg: cfg, src: opts.Source, log: opts.Logger, now: opts.Now, childCPU: opts.ChildCPU}
	if c.childCPU == nil {
		c.childCPU = childrenCPU
	}
	c.selfCPU = opts.SelfCPU
	if c.selfCPU == nil {
		c.selfCPU = ownCPU
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.log = c.log.With("component", "clusterstate", "cluster", cfg.Cluster)
	if c.now == nil {
		c.now = time.Now
	}
	if c.src == nil {
		timeout := cfg.Slurm.Timeout
		if cfg.Interval > 0 {
			timeout = min(timeout, cfg.Interval)
		}
		s := &slurm.Client{Options: slurm.Options{Sinfo: cfg.Slurm.Sinfo, Squeue: cfg.Slurm.Squeue, Timeout: timeout}}
		if cfg.Slurm.Conf != "" {
			s.Env = []string{"SLURM_CONF=" + cfg.Slurm.Conf}
		}
		c.src = s
	}
	if cfg.Prometheus.RemoteWriteURL != "" {
		var err error
		if c.rw, err = promremote.FromConfig(cfg.Prometheus.RemoteWrite, c.log); err != nil {
			return nil, err
		}
	}
	if len(cfg.Elasticsearch.URLs) > 0 {
		var err error
		if c.es, err = elasticsearch.FromConfig(cfg.Elasticsearch.Elasticsearch, c.log); err != nil {
			return nil, err
		}
	}
	if c.rw != nil || c.es != nil {
		var err error
		if c.spool, err = spool.Open(cfg.Spool.Dir, spool.Options{MaxBytes: int64(cfg.Spool.MaxBytes), Logger: c.log}); err != nil {
			return nil, fmt.Errorf("spool.dir: %w", err)
		}
	}
	c.metrics = collectorMetrics{
		duration: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricPollDuration,
			Help: "Seconds the last poll took (Slurm calls, parsing, writing)."}),
		calls: prometheus.NewCounterFunc(prometheus.CounterOpts{Name: MetricSlurmCalls,
			Help: "Slurm controller calls (sinfo, squeue) made."}, func() float64 { return float64(c.src.Calls()) }),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPollErrors,
			Help: "Polls that failed, by stage (slurm, parse, prometheus, elasticsearch)."}, []string{"stage"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "jobsight_clusterstate_last_success_timestamp_seconds",
			Help: "When the last poll read Slurm successfully (Unix time)."}),
		series: prometheus.NewGauge(prometheus.GaugeOpts{Name: "jobsight_clusterstate_series",
			Help: "Series the last poll wrote."}),
		lostClosed: prometheus.NewCounter(prometheus.CounterOpts{Name: "jobsight_clusterstate_lost_jobs_closed_total",
			Help: "Job documents no agent finalized that the collector wrote final as lost."}),
		spooled: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "jobsight_clusterstate_spool_items",
			Help: "Batches and documents waiting in the spool."}, func() float64 {
			if c.spool == nil {
				return 0
			}
			st, err := c.spool.Stats()
			if err != nil {
				return 0
			}
			return float64(st.Items)
		}),
	}
	for _, stage := range []string{"slurm", "parse", "prometheus", "elasticsearch"} {
		c.metrics.errors.WithLabelValues(stage)
	}
	if opts.Registerer != nil {
		for _, m := range []prometheus.Collector{c.metrics.duration, c.metrics.calls, c.metrics.errors,
			c.metrics.lastSuccess, c.metrics.series, c.metrics.spooled, c.metrics.lostClosed} {
			if err := opts.Registerer.Register(m); err != nil {
				return nil, fmt.Errorf("registering metrics: %w", err)
			}
		}
	}
	return c, nil
}

// Run polls every Interval until ctx ends. A failed poll is logged and
// counted; the next one comes on time.
func (c *Collector) Run(ctx context.Context) error {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := c.Poll(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("poll failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Background runs a collector for cfg in a goroutine until the returned
// stop is called (or ctx ends); stop waits for it to finish. The local
// stack and the Grafana tests run one beside their cluster this way.
func Background(ctx context.Context, cfg Config, opts Options) (stop func(), err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := New(cfg, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = c.Run(ctx); close(done) }()
	return func() { cancel(); <-done }, nil
}

// Poll reads the cluster once (two Slurm calls), asks the node index which
// running jobs lack an agent's report (one search; unreported.go), and
// writes the series and, at the start of each document bucket, the
// document. It returns the
// snapshot; an error says which stage failed. A store that is down is not
// an error of the poll: what it did not take waits in the spool.
func (c *Collector) Poll(ctx context.Context) (*Snapshot, error) {
	start := c.now()
	callsBefore := c.src.Calls()
	// The Slurm stage never runs into the next poll, whatever hangs: polls
	// never overlap (Run waits for this one), and a poll cut short keeps
	// the last good state (its series are not rewritten).
	readCtx, cancel := ctx, context.CancelFunc(func() {})
	if c.cfg.Interval > 0 {
		readCtx, cancel = context.WithTimeout(ctx, c.cfg.Interval)
	}
	snap, err := c.read(readCtx, start)
	cancel()
	elapsed := c.now().Sub(start).Seconds()
	calls := c.src.Calls() - callsBefore
	c.metrics.duration.Set(elapsed)

	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.pollErrors++
		h := Health{PollSeconds: elapsed, SlurmCalls: c.src.Calls(), PollErrors: c.pollErrors, LastSuccess: c.lastSuccess}
		// Only the health series: the cluster's series are neither
		// rewritten with old values nor ended.
		c.push(ctx, Series(&Snapshot{Cluster: c.cfg.Cluster, Time: start}, h, false))
		return nil, err
	}
	c.lastSuccess = start
	c.metrics.lastSuccess.Set(float64(start.UnixMilli()) / 1000)
	c.checkUnreported(ctx, snap)
	for _, p := range snap.Problems {
		c.log.Warn("partial data", "problem", p)
	}
	h := Health{PollSeconds: elapsed, SlurmCalls: c.src.Calls(), PollErrors: c.pollErrors, LastSuccess: start}
	series := c.stale.mark(Series(snap, h, c.cfg.NodeSeries), start.UnixMilli())
	c.metrics.series.Set(float64(len(series)))
	c.push(ctx, series)
	if bucket := start.Truncate(c.cfg.DocumentInterval); !bucket.Equal(c.lastBucket) {
		c.lastBucket = bucket
		c.store(ctx, NewDocument(snap, bucket, h, int64(calls))) // #nosec G115 -- the growth of a call counter over one poll: a few calls
	}
	c.checkLost(ctx, snap)
	c.checkRetention(ctx, start)
	return snap, nil
}

// checkLost closes lost jobs (closeLost) at most once per
// document_interval: lost_after is much longer, and each check is two
// searches. A store that fails is counted and tried at the next check.
func (c *Collector) checkLost(ctx context.Context, snap *Snapshot) {
	if c.es == nil || c.cfg.Elasticsearch.LostAfter <= 0 || (!c.lastLost.IsZero() && snap.Time.Sub(c.lastLost) < c.cfg.DocumentInterval) {
		return
	}
	c.lastLost = snap.Time
	n, err := c.closeLost(ctx, snap)
	c.metrics.lostClosed.Add(float64(n))
	if err != nil {
		c.metrics.errors.WithLabelValues("elasticsearch").Inc()
		c.log.Warn("lost jobs: not checked", "err", err)
	}
}

// read makes the poll's Slurm calls and builds the snapshot.
func (c *Collector) read(ctx context.Context, now time.Time) (*Snapshot, error) {
	nodes, err := c.src.Nodes(ctx)
	if err != nil {
		c.metrics.errors.WithLabelValues("slurm").Inc()
		return nil, err
	}
	jobs, at := c.queue, c.queueAt
	if jobs == nil || !now.Before(c.nextQueue) {
		// The read's cost: squeue's CPU and the collector's own for
		// decoding and summing its answer (a queue printing a line a
		// job is MiBs).
		cpu := c.childCPU() + c.selfCPU()
		out, err := c.src.Jobs(ctx)
		if err != nil {
			c.metrics.errors.WithLabelValues("slurm").Inc()
			return nil, err
		}
		sq, err := decodeJobs(out)
		if err != nil {
			c.metrics.errors.WithLabelValues("parse").Inc()
			c.queue = nil // read again at the next poll
			return nil, err
		}
		jobs, at = summarise(sq), now
		if b := c.cfg.QueueCPUBudget; b > 0 {
			// The next read once this one's CPU, spread over the time
			// until then, fits the budget.
			c.nextQueue = now.Add(time.Duration(float64(c.childCPU()+c.selfCPU()-cpu) / b))
		}
	}
	snap, err := build(c.cfg.Cluster, now, nodes, jobs)
	if err != nil {
		c.metrics.errors.WithLabelValues("parse").Inc()
		return nil, err
	}
	c.queue, c.queueAt = jobs, at
	snap.QueueTime = at
	return snap, nil
}

// childrenCPU and ownCPU are the user and system CPU time of the
// process's finished children and of the process itself.
func childrenCPU() time.Duration { return rusageCPU(syscall.RUSAGE_CHILDREN) }
func ownCPU() time.Duration      { return rusageCPU(syscall.RUSAGE_SELF) }

func rusageCPU(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// push writes series by remote write; a batch refused for a reason that
// may pass is spooled, after what already waits is replayed (Prometheus
// refuses samples older than a series' newest).
func (c *Collector) push(ctx context.Context, series []promremote.Series) {
	if c.rw == nil {
		return
	}
	payload, err := promremote.Encode(series)
	if err != nil || payload == nil {
		if err != nil {
			c.metrics.errors.WithLabelValues("prometheus").Inc()
			c.log.Error("encoding series", "err", err)
		}
		return
	}
	c.replayIfWaiting(ctx)
	err = c.rw.WriteEncoded(ctx, payload)
	switch {
	case err == nil:
	case errors.Is(err, promremote.ErrPermanent):
		c.metrics.errors.WithLabelValues("prometheus").Inc()
		c.log.Error("prometheus refused the batch", "err", err)
	default:
		c.metrics.errors.WithLabelValues("prometheus").Inc()
		c.log.Warn("prometheus unavailable; spooling the batch", "err", err)
		if serr := c.spool.EnqueueSamples(targetProm, payload); serr != nil {
			c.log.Error("spooling series", "err", serr)
		}
	}
}

// store writes a document; one that could not be written for a reason
// that may pass is spooled.
func (c *Collector) store(ctx context.Context, d Document) {
	if c.es == nil {
		return
	}
	body, err := json.Marshal(d)
	if err != nil {
		c.log.Error("encoding document", "err", err)
		return
	}
	doc := store.Doc{Kind: store.KindNodeDoc, Index: c.cfg.Elasticsearch.Index, ID: DocID(d.Cluster, d.BucketStart.Time), Body: body}
	c.replayIfWaiting(ctx)
	err = c.index(ctx, doc)
	if err == nil {
		return
	}
	c.metrics.errors.WithLabelValues("elasticsearch").Inc()
	if errors.Is(err, elasticsearch.ErrUnavailable) || errors.Is(err, store.ErrAccessDenied) {
		c.log.Warn("elasticsearch unavailable; spooling the document", "err", err)
		if serr := c.spool.EnqueueDoc(targetES, doc); serr != nil {
			c.log.Error("spooling document", "err", serr)
		}
		return
	}
	c.log.Error("elasticsearch refused the document", "id", doc.ID, "err", err)
}

// index makes sure the index exists (once per process) and writes doc.
func (c *Collector) index(ctx context.Context, doc store.Doc) error {
	if !c.indexReady {
		if err := c.es.EnsureIndex(ctx, c.cfg.Elasticsearch.Index, Mapping()); err != nil {
			return err
		}
		c.indexReady = true
	}
	return c.es.Index(ctx, doc)
}

// replayIfWaiting sends what the spool holds, oldest first; a store still
// down keeps its items.
func (c *Collector) replayIfWaiting(ctx context.Context) {
	if c.spool == nil {
		return
	}
	if st, err := c.spool.Stats(); err != nil || st.Items == 0 {
		return
	}
	senders := map[string]spool.Sender{targetES: nil, targetProm: nil}
	if c.rw != nil {
		senders[targetProm] = func(ctx context.Context, it spool.Item) error {
			err := c.rw.WriteEncoded(ctx, it.Body)
			if errors.Is(err, promremote.ErrPermanent) {
				return fmt.Errorf("%w: %v", spool.ErrReject, err)
			}
			return err
		}
	}
	if c.es != nil {
		senders[targetES] = func(ctx context.Context, it spool.Item) error {
			err := c.index(ctx, it.Doc())
			if err != nil && !errors.Is(err, elasticsearch.ErrUnavailable) && !errors.Is(err, store.ErrAccessDenied) {
				return fmt.Errorf("%w: %v", spool.ErrReject, err)
			}
			return err
		}
	}
	err := c.spool.ReplayTo(ctx, senders, nil)
	if err != nil && !errors.Is(err, spool.ErrBusy) {
		c.log.Info("spool replay stopped; will retry", "err", err)
	}
}

// Healthy reports whether a poll succeeded within the last three intervals.
func (c *Collector) Healthy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.lastSuccess.IsZero() && c.now().Sub(c.lastSuccess) <= 3*c.cfg.Interval
}

// Handler serves /constants (the allocations and constants), /metrics
// (the collector's own metrics from gatherer) and /healthz. A non-empty
// token is required on /constants and /metrics as "Authorization: Bearer
// <token>"; /healthz, which says only whether polls succeed, stays open
// for load balancers and systemd checks.
func (c *Collector) Handler(constants http.Handler, gatherer prometheus.Gatherer, token string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/constants", requireBearer(token, constants))
	if gatherer != nil {
		mux.Handle("/metrics", requireBearer(token, promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{})))
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !c.Healthy() {
			http.Error(w, "no successful poll in the last three intervals", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

// requireBearer answers 401 unless the request carries the token (compared
// in constant time); an empty token lets every request through.
func requireBearer(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="jobsight cluster-state"`)
			http.Error(w, "a bearer token is required (listen_token_file)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
