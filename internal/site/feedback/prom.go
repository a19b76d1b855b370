package feedback

import (
	"context"
	"fmt"
	"github.com/jobsight/jobsight/internal/config"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/report"
)

// Series fetches a job's series for its report charts: per-GPU utilisation
// and per-node memory over the job's run, two range queries whatever the
// job's size. Nil, nil without a Prometheus URL or for a job without times.
type Series struct {
	api     promv1.API
	timeout time.Duration
}

// NewSeries connects to the Prometheus HTTP API of cfg (nil without a URL).
func NewSeries(cfg PrometheusQuery) (*Series, error) {
	if cfg.URL == "" {
		return nil, nil
	}
	token, pw, err := cfg.Secrets()
	if err != nil {
		return nil, err
	}
	var rt http.RoundTripper = http.DefaultTransport
	if cfg.CAFile != "" {
		// The private CA is trusted in addition to the system's.
		t, err := config.TrustTransport("prometheus.ca_file", cfg.CAFile)
		if err != nil {
			return nil, err
		}
		rt = t
	}
	if token != "" || cfg.Username != "" || cfg.Tenant != "" {
		header := cfg.TenantHeader
		if header == "" {
			header = config.DefaultTenantHeader
		}
		rt = authTransport{next: rt, token: token, user: cfg.Username, password: pw, tenant: cfg.Tenant, tenantHeader: header}
	}
	c, err := api.NewClient(api.Config{Address: cfg.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus.url: %w", err)
	}
	return &Series{api: promv1.NewAPI(c), timeout: cfg.Timeout}, nil
}

// authTransport adds the credentials and the tenant to every query.
type authTransport struct {
	next                  http.RoundTripper
	token, user, password string
	tenant, tenantHeader  string
}

func (a authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	switch {
	case a.token != "":
		r.Header.Set("Authorization", "Bearer "+a.token)
	case a.user != "":
		r.SetBasicAuth(a.user, a.password)
	}
	if a.tenant != "" {
		r.Header.Set(a.tenantHeader, a.tenant)
	}
	return a.next.RoundTrip(r)
}

// Job returns the job's series, or nil when there are none.
func (s *Series) Job(ctx context.Context, job jobmodel.Job) (*report.Series, error) {
	if s == nil || job.StartTime == nil || job.EndTime == nil || !job.EndTime.After(job.StartTime.Time) {
		return nil, nil
	}
	r := promv1.Range{Start: job.StartTime.Time, End: job.EndTime.Time}
	r.Step = max(15*time.Second, r.End.Sub(r.Start)/200).Truncate(time.Second)
	// Label values are quoted as PromQL strings (Go's escaping rules).
	sel := fmt.Sprintf("{cluster=%s,job_id=%s%s}", strconv.Quote(job.Cluster), strconv.Quote(job.JobID), jobmodel.RunMatcher(job.SubmitTime))
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var out report.Series
	gpu, _, _, err := s.api.QueryRange(ctx, "jobsight_job_gpu_utilization_ratio"+sel, r)
	if err != nil {
		return nil, fmt.Errorf("prometheus: GPU utilisation of %s: %w", job.DocID, err)
	}
	for _, ss := range asMatrix(gpu) {
		idx, _ := strconv.ParseInt(string(ss.Metric["gpu"]), 10, 64)
		out.GPUUtilization = append(out.GPUUtilization, report.GPUSeries{Node: string(ss.Metric["node"]), Index: idx, Points: points(ss)})
	}
	mem, _, _, err := s.api.QueryRange(ctx, "jobsight_job_memory_used_bytes"+sel, r)
	if err != nil {
		return nil, fmt.Errorf("prometheus: memory of %s: %w", job.DocID, err)
	}
	for _, ss := range asMatrix(mem) {
		out.MemoryUsed = append(out.MemoryUsed, report.NodeSeries{Node: string(ss.Metric["node"]), Points: points(ss)})
	}
	if len(out.GPUUtilization) == 0 && len(out.MemoryUsed) == 0 {
		return nil, nil
	}
	return &out, nil
}

func asMatrix(v model.Value) model.Matrix {
	m, _ := v.(model.Matrix)
	return m
}

func points(ss *model.SampleStream) []report.Point {
	out := make([]report.Point, 0, len(ss.Values))
	for _, p := range ss.Values {
		out = append(out, report.Point{Time: p.Timestamp.Time().UTC(), Value: float64(p.Value)})
	}
	return out
}

// Check makes the report's kind of query (a range query of the memory
// series) for a cluster no job has, so it returns nothing: the query API
// answers these credentials (the store check).
func (s *Series) Check(ctx context.Context, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	r := promv1.Range{Start: now.Add(-5 * time.Minute), End: now, Step: 15 * time.Second}
	_, _, _, err := s.api.QueryRange(ctx, `jobsight_job_memory_used_bytes{cluster="jobsight-store-check"}`, r)
	return err
}
