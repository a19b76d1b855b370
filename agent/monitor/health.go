package monitor

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/jobsight/jobsight/internal/store/promremote"
)

// Health is the agent's own health, as Prometheus metrics pushed with the
// job's series (and labelled like them), so operators see which source or
// sink fails on which node.
type Health struct {
	Registry        *prometheus.Registry
	Samples         prometheus.Counter
	SampleSeconds   prometheus.Counter
	CollectorErrors *prometheus.CounterVec
	// CollectorSuccess (1 or 0) and CollectorDuration are each
	// collector's last pass: which source fails on which node, and which
	// is slow.
	CollectorSuccess  *prometheus.GaugeVec
	CollectorDuration *prometheus.GaugeVec
	SinkFailures      *prometheus.CounterVec
	SpoolBytes        prometheus.Gauge
	SpoolItems        prometheus.Gauge
	SpoolDropped      *prometheus.CounterVec
	// SpoolSetAside counts spooled items moved to rejected/ (a store
	// refused them for good) or corrupt/ (unreadable), by reason.
	SpoolSetAside *prometheus.CounterVec
	// SpoolWaiting is how many items wait in the spool for each store,
	// by why (the last try's answer: unavailable, refused, store_error,
	// not_configured; pending before any try): a store's 400 for the
	// whole request or an index keeps items here, never in rejected/.
	SpoolWaiting *prometheus.GaugeVec
	// SpoolSetAsideItems is what rejected/ and corrupt/ hold now;
	// `jobsight-agent resend-rejected` sends rejected/ again.
	SpoolSetAsideItems *prometheus.GaugeVec
	// FinalUnsaved is how many jobs' final documents this process could
	// neither store nor spool (e.g. the spool's disk is full): their
	// checkpoint is kept, and the write is tried again.
	FinalUnsaved prometheus.Gauge
	// SinkRefused counts writes a store refused for the agent's
	// credentials (401/403), by sink: a configuration to fix; the data
	// waits in the spool.
	SinkRefused *prometheus.CounterVec
	// The node agent's own: jobs it watches, its wake-ups and how long
	// the last took (every job sampled), and the points waiting for the
	// sender.
	JobsWatched prometheus.Gauge
	Wakes       prometheus.Counter
	WakeSeconds prometheus.Gauge
	SendQueue   prometheus.Gauge
	// AcceptErrors counts failed accepts on the node agent's socket (out
	// of file descriptors, most often); the agent retries with back-off.
	AcceptErrors prometheus.Counter
	// ProcessesCapped counts processes the agent began to read without
	// keeping their /proc files open, their job being at its cap
	// (proc_max_open_per_job); ProcessesUnheld is how many it reads so now.
	ProcessesCapped prometheus.Counter
	ProcessesUnheld prometheus.Gauge
	// Phases counts the agent's CPU time by phase of its work
	// (jobsight_agent_phase_cpu_seconds_total), beside the process's
	// whole CPU, its context switches and the Go runtime's GC.
	Phases *Phases
}

// NewHealth registers the agent's health metrics in a registry of its own.
func NewHealth() *Health {
	h := &Health{
		Registry: prometheus.NewRegistry(),
		Samples: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "jobsight_agent_samples_total", Help: "Sampling passes taken."}),
		SampleSeconds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "jobsight_agent_sample_duration_seconds_total", Help: "Wall time spent in sampling passes."}),
		CollectorErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jobsight_agent_collector_errors_total", Help: "Sampling passes in which a collector failed to read something."},
			[]string{"collector"}),
		CollectorSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "jobsight_agent_collector_success", Help: "Whether the collector's last pass read everything it reads (1) or not (0)."},
			[]string{"collector"}),
		CollectorDuration: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "jobsight_agent_collector_duration_seconds", Help: "Wall time of the collector's last pass."},
			[]string{"collector"}),
		SinkFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jobsight_agent_sink_failures_total", Help: "Writes a sink did not take (the data went to the spool)."},
			[]string{"sink"}),
		SpoolBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "jobsight_agent_spool_bytes", Help: "Bytes waiting in this node's spool."}),
		SpoolItems: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "jobsight_agent_spool_items", Help: "Items waiting in this node's spool."}),
		SpoolDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jobsight_agent_spool_dropped_total", Help: "Spooled items dropped because the spool was full, by kind."},
			[]string{"kind"}),
	}
	h.SpoolSetAside = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobsight_agent_spool_set_aside_total", Help: "Spooled items moved to rejected/ (refused for good) or corrupt/ (unreadable), by reason."},
		[]string{"reason"})
	h.SinkRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobsight_agent_sink_refused_total", Help: "Writes a store refused for the agent's credentials (401/403); the data waits in the spool."},
		[]string{"sink"})
	h.SpoolWaiting = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "jobsight_agent_spool_waiting_items", Help: "Items waiting in this node's spool for a store, by the reason its last try gave (unavailable, refused, store_error, not_configured, pending)."},
		[]string{"sink", "reason"})
	h.SpoolSetAsideItems = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "jobsight_agent_spool_set_aside_items", Help: "Files in the spool's rejected/ (send again with jobsight-agent resend-rejected) and corrupt/ directories, by reason."},
		[]string{"reason"})
	h.FinalUnsaved = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jobsight_agent_unsaved_final_jobs", Help: "Jobs whose final documents could neither be stored nor spooled (e.g. the spool's disk is full); their checkpoint is kept and the write retried."})
	h.JobsWatched = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jobsight_agent_jobs_watched", Help: "Jobs the node agent samples now."})
	h.Wakes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobsight_agent_wakes_total", Help: "Wake-ups of the node agent's sampling timer (each samples every job)."})
	h.WakeSeconds = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jobsight_agent_wake_duration_seconds", Help: "Wall time of the last wake-up: every watched job sampled once."})
	h.SendQueue = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jobsight_agent_send_queue_points", Help: "Points waiting in memory for the sender (a slow store makes this grow; past its bound they are dropped, oldest first)."})
	h.AcceptErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobsight_agent_accept_errors_total", Help: "Failed accepts on the node agent's socket (e.g. out of file descriptors); it retries with back-off."})
	h.ProcessesCapped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobsight_agent_processes_capped_total", Help: "Processes read without kept-open /proc files because their job reached proc_max_open_per_job."})
	h.ProcessesUnheld = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jobsight_agent_processes_unheld", Help: "Processes read now without kept-open /proc files (beyond their job's proc_max_open_per_job)."})
	h.Phases = &Phases{}
	h.Registry.MustRegister(newPhaseCollector(h.Phases))
	h.Registry.MustRegister(h.JobsWatched, h.Wakes, h.WakeSeconds, h.SendQueue, h.AcceptErrors, h.ProcessesCapped, h.ProcessesUnheld)
	h.Registry.MustRegister(h.Samples, h.SampleSeconds, h.CollectorErrors, h.CollectorSuccess, h.CollectorDuration,
		h.SinkFailures, h.SpoolBytes, h.SpoolItems, h.SpoolDropped, h.SpoolSetAside, h.SinkRefused,
		h.SpoolWaiting, h.SpoolSetAsideItems, h.FinalUnsaved)
	for _, s := range []string{"elasticsearch", "prometheus"} {
		h.SinkFailures.WithLabelValues(s)
	}
	return h
}

// Series returns the health metrics as series with one point at tsMs,
// carrying the job's labels plus each metric's own.
func (h *Health) Series(tsMs int64, labels []Label) ([]Series, error) {
	defer h.Phases.End(PhaseHealth, h.Phases.Begin())
	families, err := h.Registry.Gather()
	if err != nil {
		return nil, err
	}
	var out []Series
	for _, f := range families {
		for _, m := range f.GetMetric() {
			ls := append([]Label(nil), labels...)
			for _, lp := range m.GetLabel() {
				ls = append(ls, Label{Name: lp.GetName(), Value: lp.GetValue()})
			}
			out = append(out, Series{Name: f.GetName(), Labels: ls, Samples: []Point{{TimestampMs: tsMs, Value: value(f.GetType(), m)}}})
		}
	}
	return out, nil
}

func value(t dto.MetricType, m *dto.Metric) float64 {
	if t == dto.MetricType_COUNTER {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// Label is one Prometheus label.
type Label = promremote.Label

// Series is one time series with its points, ready for remote write.
type Series = promremote.Series
