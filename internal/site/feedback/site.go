package feedback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobsight/jobsight/internal/analysis"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/report"
	"github.com/jobsight/jobsight/internal/site/notify"
)

// Metrics are the site command's own: reports produced and missing, and
// how long after a job's end its report was made.
type Metrics struct {
	Reports        prometheus.Counter
	ReportsMissing *prometheus.CounterVec
	Latency        prometheus.Histogram
}

// NewMetrics registers the metrics in reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Reports: prometheus.NewCounter(prometheus.CounterOpts{Name: "jobsight_feedback_reports_total",
			Help: "Job reports produced."}),
		ReportsMissing: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobsight_feedback_reports_missing_total",
			Help: "Finished jobs whose report could not be produced, by reason."}, []string{"reason"}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "jobsight_feedback_report_latency_seconds",
			Help:    "Time from a job's end to its report being produced (analysis included).",
			Buckets: []float64{10, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600}}),
	}
	if reg != nil {
		reg.MustRegister(m.Reports, m.ReportsMissing, m.Latency)
	}
	return m
}

// Site is what the `jobsight` command does, with its clients.
type Site struct {
	Cfg     Config
	Store   *Store
	Series  *Series // nil: no Prometheus
	Metrics *Metrics
	Log     *slog.Logger
	Now     func() time.Time
}

func (s *Site) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Analyse runs the site's analysis rules on a final job document.
func (s *Site) Analyse(job jobmodel.Job) jobmodel.Analysis {
	return analysis.AnalyzeJob(job, s.now(), s.Cfg.Analysis)
}

// ReportInput assembles what a job's report is rendered from: its stored
// analysis (or a fresh one when there is none or reanalyse is set) and
// its series from Prometheus when they can be had (else the charts come
// from the document).
func (s *Site) ReportInput(ctx context.Context, job jobmodel.Job, reanalyse bool) report.Input {
	in := report.Input{Job: job, JobURL: s.jobURL(job)}
	if job.Analysis == nil || reanalyse {
		a := s.Analyse(job)
		in.Analysis = &a
	}
	if s.Series != nil {
		series, err := s.Series.Job(ctx, job)
		if err != nil {
			s.Log.Warn("no series for the report's charts; drawing them from the document", "doc_id", job.DocID, "err", err)
		}
		in.Series = series
	}
	return in
}

// jobURL expands job_url for a job.
func (s *Site) jobURL(job jobmodel.Job) string {
	if s.Cfg.JobURL == "" {
		return ""
	}
	return strings.NewReplacer("{cluster}", url.QueryEscape(job.Cluster), "{job_id}", url.QueryEscape(job.JobID),
		"{doc_id}", url.QueryEscape(job.DocID)).Replace(s.Cfg.JobURL)
}

// Reanalyse analyses again every final job that ended in [from, to) with
// the site's rules and stores the result in the job document and the
// results index. It returns how many jobs it analysed.
func (s *Site) Reanalyse(ctx context.Context, from, to time.Time) (int, error) {
	jobs, err := s.Store.FinalJobs(ctx, ByEndTime, from, to)
	if err != nil {
		return 0, err
	}
	var errs []error
	n := 0
	for _, job := range jobs {
		if err := s.Store.PutAnalysis(ctx, job, s.Analyse(job), s.now()); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", job.DocID, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// History rolls up the period ending at end (and compares it with the
// period before) and stores the entries.
func (s *Site) History(ctx context.Context, end time.Time) ([]jobmodel.History, error) {
	if s.Cfg.Cluster == "" {
		return nil, errors.New("cluster: history is per cluster; set cluster in the configuration")
	}
	p := s.Cfg.History.Period
	cur, err := s.Store.Results(ctx, end.Add(-p), end)
	if err != nil {
		return nil, err
	}
	prev, err := s.Store.Results(ctx, end.Add(-2*p), end.Add(-p))
	if err != nil {
		return nil, err
	}
	hs := Rollup(s.Cfg.Cluster, end.Add(-p), end, cur, prev, s.Cfg.History.Advisory, s.now())
	return hs, s.Store.PutHistory(ctx, hs)
}

// notifyState is the notify command's progress: the end of the last window
// it read and the jobs it reported recently (the windows overlap, because a
// document can reach the store after its updated_at, when the store was
// down).
type notifyState struct {
	Until    time.Time            `json:"until"`
	Reported map[string]time.Time `json:"reported"`
}

// NotifyOverlap is how far back each notify pass looks again.
const NotifyOverlap = 2 * time.Hour

// Notify reads the jobs that became final since the last pass, renders
// their reports and queues them for their owners, then sends the digests
// that are due. A job is reported once.
func (s *Site) Notify(ctx context.Context, n *notify.Notifier) (queued, sent int, err error) {
	now := s.now()
	st := s.loadNotifyState(now)
	to := now // what is not searchable yet is found by the next pass's overlap
	jobs, err := s.Store.FinalJobs(ctx, ByUpdatedAt, st.Until.Add(-NotifyOverlap), to)
	if err != nil {
		return 0, 0, err
	}
	for _, job := range jobs {
		if _, done := st.Reported[job.DocID]; done {
			continue
		}
		if err := s.queue(ctx, n, job); err != nil {
			s.Metrics.ReportsMissing.WithLabelValues("queue").Inc()
			s.Log.Warn("report not queued", "doc_id", job.DocID, "err", err)
			continue
		}
		queued++
		st.Reported[job.DocID] = now
	}
	st.Until = to
	for id, at := range st.Reported {
		if now.Sub(at) > 2*NotifyOverlap {
			delete(st.Reported, id)
		}
	}
	if err := s.saveNotifyState(st); err != nil {
		return queued, 0, err
	}
	sent, err = n.Flush(ctx, s.now()) // after the reports just queued
	return queued, sent, err
}

// queue renders one job's report and hands it to the notifier.
func (s *Site) queue(ctx context.Context, n *notify.Notifier, job jobmodel.Job) error {
	in := s.ReportInput(ctx, job, false)
	a := in.Analysis
	if a == nil {
		a = job.Analysis
	}
	html, err := report.HTML(in)
	if err != nil {
		return err
	}
	r := notify.Report{
		JobDocID: job.DocID, Cluster: job.Cluster, JobID: job.JobID, User: job.User, Account: job.Account,
		Subject: fmt.Sprintf("Jobsight: job %s on %s: %s", job.JobID, job.Cluster, a.Class),
		Text:    report.Text(in, false), HTML: html, GPUJob: a.Kind == jobmodel.KindGPU, Class: a.Class,
	}
	if job.EndTime != nil {
		r.EndTime = job.EndTime.Time
		s.Metrics.Latency.Observe(s.now().Sub(job.EndTime.Time).Seconds())
	}
	s.Metrics.Reports.Inc()
	return n.Enqueue(r)
}

func (s *Site) statePath() string { return filepath.Join(s.Cfg.StateDir, "notify-state.json") }

func (s *Site) loadNotifyState(now time.Time) notifyState {
	st := notifyState{Until: now.Add(-time.Hour), Reported: map[string]time.Time{}}
	b, err := os.ReadFile(s.statePath())
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.Log.Warn("notify state unreadable; looking back one hour", "err", err)
		}
		return st
	}
	if err := json.Unmarshal(b, &st); err != nil || st.Until.IsZero() {
		s.Log.Warn("notify state corrupt; looking back one hour", "path", s.statePath(), "err", err)
		return notifyState{Until: now.Add(-time.Hour), Reported: map[string]time.Time{}}
	}
	if st.Reported == nil {
		st.Reported = map[string]time.Time{}
	}
	return st
}

func (s *Site) saveNotifyState(st notifyState) error {
	if err := os.MkdirAll(s.Cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("state_dir: %w", err)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := s.statePath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("state_dir: %w", err)
	}
	return os.Rename(tmp, s.statePath())
}
