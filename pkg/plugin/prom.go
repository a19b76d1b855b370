package plugin

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// promQuote quotes a label value as a PromQL string literal. PromQL string
// literals follow Go's escaping rules, so strconv.Quote is exact: a quote,
// backslash or newline in the value cannot end the literal.
func promQuote(v string) string { return strconv.Quote(v) }

// promAnyOf is a regular-expression matcher value that matches exactly one
// of vs (each quoted as a literal, then the whole PromQL-quoted). Nil vs
// gives ".+" (any non-empty value).
func promAnyOf(vs []string) string {
	if len(vs) == 0 {
		return promQuote(".+")
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = regexp.QuoteMeta(v)
	}
	sort.Strings(parts)
	return promQuote(strings.Join(parts, "|"))
}

// selector builds a series selector: metric{cluster=~"...",job_id=~"..."}.
// Empty lists do not restrict.
func selector(metric string, clusters, jobIDs []string) string {
	var m []string
	if len(clusters) > 0 {
		m = append(m, "cluster=~"+promAnyOf(clusters))
	}
	if len(jobIDs) > 0 {
		m = append(m, "job_id=~"+promAnyOf(jobIDs))
	}
	return metric + "{" + strings.Join(m, ",") + "}"
}

// promAPI returns the Prometheus HTTP API client of the instance.
func (d *Datasource) promAPI() (promv1.API, error) {
	d.promOnce.Do(func() {
		c, err := promapi.NewClient(promapi.Config{Address: d.settings.PrometheusURL, Client: d.prom})
		if err != nil {
			d.promErr = fmt.Errorf("prometheusUrl: %w", err)
			return
		}
		d.promV1 = promv1.NewAPI(c)
	})
	return d.promV1, d.promErr
}

// promInstant runs an instant query at t.
func (d *Datasource) promInstant(ctx context.Context, st *stats, expr string, t time.Time) (model.Vector, error) {
	api, err := d.promAPI()
	if err != nil {
		return nil, err
	}
	st.prom.Add(1)
	v, _, _, err := api.Query(ctx, expr, t)
	if err != nil {
		return nil, d.promError(err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, &backendError{backend: "Prometheus", msg: fmt.Sprintf("Prometheus answered a %s, not a vector", v.Type())}
	}
	if len(vec) > d.settings.MaxSeries {
		return nil, &backendError{backend: "Prometheus", msg: fmt.Sprintf("Prometheus answered %d series, more than maxSeries (%d): narrow the query or raise maxSeries", len(vec), d.settings.MaxSeries)}
	}
	return vec, nil
}

// promRange runs a range query.
func (d *Datasource) promRange(ctx context.Context, st *stats, expr string, r promv1.Range) (model.Matrix, error) {
	api, err := d.promAPI()
	if err != nil {
		return nil, err
	}
	st.prom.Add(1)
	v, _, _, err := api.QueryRange(ctx, expr, r)
	if err != nil {
		return nil, d.promError(err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, &backendError{backend: "Prometheus", msg: fmt.Sprintf("Prometheus answered a %s, not a matrix", v.Type())}
	}
	if len(m) > d.settings.MaxSeries {
		return nil, &backendError{backend: "Prometheus", msg: fmt.Sprintf("Prometheus answered %d series, more than maxSeries (%d): narrow the query or raise maxSeries", len(m), d.settings.MaxSeries)}
	}
	return m, nil
}

func (d *Datasource) promError(err error) error {
	var pe *promv1.Error
	if errors.As(err, &pe) {
		msg := pe.Msg
		if pe.Type == promv1.ErrClient && (pe.Msg == "client error: 401" || pe.Msg == "client error: 403") {
			return &backendError{backend: "Prometheus", msg: fmt.Sprintf("Prometheus at %s refused the query (%s): check prometheusBearerToken, or prometheusUser and prometheusPassword", d.settings.PrometheusURL, msg)}
		}
		return &backendError{backend: "Prometheus", msg: fmt.Sprintf("Prometheus at %s: %s: %s", d.settings.PrometheusURL, pe.Type, msg)}
	}
	return &backendError{backend: "Prometheus", msg: fmt.Sprintf("Prometheus at %s is unreachable: %v", d.settings.PrometheusURL, rootCause(err))}
}

// labeled is a tagged sub-query: `label_replace(expr, "metric", tag, "", "")`,
// so several sub-queries joined with `or` come back in one answer and are
// told apart by their "metric" label.
func labeled(tag, expr string) string {
	return fmt.Sprintf(`label_replace(%s, "jobsight_metric", %s, "", "")`, expr, promQuote(tag))
}

// promStep chooses a range step giving at most about points points.
func promStep(from, to time.Time, points int) time.Duration {
	if points <= 0 {
		points = 300
	}
	step := to.Sub(from) / time.Duration(points)
	if step < 5*time.Second {
		step = 5 * time.Second
	}
	return step.Truncate(time.Second)
}

// promDuration writes a duration as PromQL's range syntax (whole seconds).
func promDuration(d time.Duration) string {
	s := int64(d / time.Second)
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10) + "s"
}

// rateWindow is the range of a rate() over samples taken every interval
// seconds, drawn every step: at least two steps and three samples, so
// that a job shorter than the window is not diluted over it (rate divides
// by the window, not by the span of the samples it found).
func rateWindow(step time.Duration, intervalSeconds float64) string {
	iv := time.Duration(intervalSeconds * float64(time.Second))
	if iv <= 0 {
		iv = 15 * time.Second
	}
	return promDuration(max(2*step, 3*iv))
}

// jobValues are the values of one job in a tagged answer, by tag.
type jobValues map[string]*float64

// jobBy is how job series are grouped: the job id and its run, so that two
// jobs that held one Slurm job id (series labelled with their own run,
// jobmodel.RunOf) are never summed together.
const jobBy = "cluster, job_id, " + jobmodel.RunLabel

// seriesByJob is a tagged answer split by job series (cluster, job id, run).
type seriesByJob map[string]jobValues

func seriesKey(cluster, jobID, run string) string { return cluster + ":" + jobID + "\x00" + run }

// of returns job j's values: those of the series labelled with its run,
// else those of series without a run label (written by agents before runs
// were labelled). Another run's series are never j's.
func (s seriesByJob) of(j *jobmodel.Job) jobValues {
	if run := jobmodel.RunOf(j.SubmitTime); run != "" {
		if v := s[seriesKey(j.Cluster, j.JobID, run)]; v != nil {
			return v
		}
	}
	return s[seriesKey(j.Cluster, j.JobID, "")]
}

// byJob splits a tagged instant answer (sub-queries joined with "or",
// see labeled) by job series and tag. Samples without a job_id label are
// left out.
func byJob(vec model.Vector) seriesByJob {
	out := seriesByJob{}
	for _, s := range vec {
		if s.Metric["job_id"] == "" {
			continue
		}
		k := sampleKey(s.Metric)
		if out[k] == nil {
			out[k] = jobValues{}
		}
		v := float64(s.Value)
		out[k][string(s.Metric["jobsight_metric"])] = &v
	}
	return out
}

// sampleKey is the job series key (cluster, job id, run) of a sample.
func sampleKey(m model.Metric) string {
	return seriesKey(string(m["cluster"]), string(m["job_id"]), string(m[jobmodel.RunLabel]))
}

// jobMatchers collects, for one batched selector, the clusters and job ids
// of the jobs keep accepts, and their longest sampling interval.
func jobMatchers(jobs []jobmodel.Job, keep func(*jobmodel.Job) bool) (clusters, ids []string, interval float64) {
	seen := map[string]bool{}
	for i := range jobs {
		j := &jobs[i]
		if !keep(j) {
			continue
		}
		interval = max(interval, j.Sampling.IntervalSeconds)
		ids = append(ids, j.JobID)
		if !seen[j.Cluster] {
			seen[j.Cluster] = true
			clusters = append(clusters, j.Cluster)
		}
	}
	return clusters, ids, interval
}
