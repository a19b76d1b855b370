package notify

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Failure reasons (label "reason" of jobsight_notify_email_failures_total).
const (
	reasonTemporary = "temporary"
	reasonPermanent = "permanent"
)

// Drop reasons (label "reason" of jobsight_notify_reports_dropped_total).
const (
	dropOptOut         = "opt_out"
	dropFiltered       = "filtered"
	dropNoAddress      = "no_address"
	dropInvalidAddress = "invalid_address"
)

// metrics are the notifier's Prometheus collectors.
type metrics struct {
	sent     prometheus.Counter
	failures *prometheus.CounterVec
	dropped  *prometheus.CounterVec
	pending  prometheus.Gauge
}

// newMetrics creates the collectors and registers them on reg (when not
// nil). Every label value starts at zero so that it is exported at once.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		sent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "jobsight_notify_emails_sent_total",
			Help: "Report emails accepted by the SMTP server.",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jobsight_notify_email_failures_total",
			Help: "Report emails not sent, by reason: temporary (4xx reply, network or TLS error; the reports stay pending) or permanent (5xx reply).",
		}, []string{"reason"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jobsight_notify_reports_dropped_total",
			Help: "Reports not mailed, by reason: opt_out, filtered (gpu_jobs_only or classes), no_address, invalid_address.",
		}, []string{"reason"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "jobsight_notify_reports_pending",
			Help: "Reports in the spool waiting for their digest.",
		}),
	}
	for _, r := range []string{reasonTemporary, reasonPermanent} {
		m.failures.WithLabelValues(r)
	}
	for _, r := range []string{dropOptOut, dropFiltered, dropNoAddress, dropInvalidAddress} {
		m.dropped.WithLabelValues(r)
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.sent, m.failures, m.dropped, m.pending} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("notify: registering metrics: %w", err)
	}
	return m, nil
}
