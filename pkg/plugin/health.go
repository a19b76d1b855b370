package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// BackendHealth is the outcome of checking one backend; CheckHealth returns
// one per backend in its JSONDetails, under "elasticsearch" and "prometheus".
type BackendHealth struct {
	OK      bool   `json:"ok"`
	Version string `json:"version,omitempty"`
	Message string `json:"message"`
	// jobs is whether the job indices hold any document (nil: not known);
	// noSeries that Prometheus answered but holds no Jobsight job series.
	jobs     *bool
	noSeries bool
}

// HealthDetails is the JSONDetails of a health check result.
type HealthDetails struct {
	Elasticsearch *BackendHealth `json:"elasticsearch,omitempty"`
	Prometheus    *BackendHealth `json:"prometheus,omitempty"`
}

// CheckHealth checks both backends, concurrently: that Elasticsearch answers
// and holds the job index, and that Prometheus answers its HTTP API. It never
// returns an error: every problem is a HealthStatusError with a message
// naming the backend and what to do. Messages never contain credentials.
func (d *Datasource) CheckHealth(ctx context.Context, _ *backend.CheckHealthRequest) (*backend.CheckHealthResult, error) {
	logger := log.DefaultLogger.FromContext(ctx).With("component", "health")
	if d.settingsErr != nil {
		return &backend.CheckHealthResult{
			Status:  backend.HealthStatusError,
			Message: "Invalid settings: " + oneLine(d.settingsErr),
		}, nil
	}

	var es, prom BackendHealth
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); es = d.checkElasticsearch(ctx) }()
	go func() { defer wg.Done(); prom = d.checkPrometheus(ctx) }()
	wg.Wait()
	// No job series is expected before the first job: with no job
	// document either, the datasource is set up right and nothing has run
	// yet (a site provisions Grafana before its first monitored job). Job
	// documents without series mean the series go elsewhere.
	if es.OK && !prom.OK && prom.noSeries && es.jobs != nil && !*es.jobs {
		prom.OK = true
		prom.Message = prom.Version + ": ready; no jobsight_job_* series yet, as no job has been recorded in Elasticsearch either (both fill from the first job)"
	}

	details, _ := json.Marshal(HealthDetails{Elasticsearch: &es, Prometheus: &prom})
	res := &backend.CheckHealthResult{
		Status:      backend.HealthStatusOk,
		Message:     es.Message + ". " + prom.Message + ".",
		JSONDetails: details,
	}
	if !es.OK || !prom.OK {
		res.Status = backend.HealthStatusError
		var failed []string
		for _, b := range []BackendHealth{es, prom} {
			if !b.OK {
				failed = append(failed, b.Message)
			}
		}
		res.Message = strings.Join(failed, ". ") + "."
		logger.Warn("Health check failed", "elasticsearch_ok", es.OK, "prometheus_ok", prom.OK, "message", res.Message)
	} else {
		logger.Debug("Health check passed", "message", res.Message)
	}
	return res, nil
}

// checkElasticsearch asks for the cluster info (GET /) and whether the job
// index exists (HEAD /<index>).
func (d *Datasource) checkElasticsearch(ctx context.Context) BackendHealth {
	base := d.settings.ElasticsearchURL
	index := d.settings.ElasticsearchJobIndex

	var info struct {
		ClusterName string `json:"cluster_name"`
		Version     struct {
			Number       string `json:"number"`
			Distribution string `json:"distribution"`
		} `json:"version"`
	}
	status, body, err := send(ctx, d.es, http.MethodGet, base, "/")
	if err != nil {
		return BackendHealth{Message: fmt.Sprintf("Elasticsearch at %s is unreachable: %v", base, rootCause(err))}
	}
	if p := httpProblem("Elasticsearch", base, "GET /", status, body, "elasticsearchUser and elasticsearchPassword"); p != "" {
		return BackendHealth{Message: p}
	}
	if err := json.Unmarshal(body, &info); err != nil || info.Version.Number == "" {
		return BackendHealth{Message: fmt.Sprintf("Elasticsearch: %s does not look like Elasticsearch or OpenSearch (GET / has no version.number): check elasticsearchUrl", base)}
	}
	product := "Elasticsearch"
	if info.Version.Distribution == "opensearch" {
		product = "OpenSearch"
	}
	version := product + " " + info.Version.Number

	// The job documents are in monthly indices (this month's, or last
	// month's early in a month), or, written before 0.2, in the single
	// index: the first of these that exists is checked.
	now := time.Now()
	if d.now != nil {
		now = d.now()
	}
	thisMonth := jobmodel.MonthlyIndex(index, now)
	lastMonth := jobmodel.MonthlyIndex(index, time.Date(now.UTC().Year(), now.UTC().Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -1, 0))
	found := ""
	for _, candidate := range []string{thisMonth, lastMonth, index} {
		status, body, err = send(ctx, d.es, http.MethodHead, base, "/"+url.PathEscape(candidate))
		if err != nil {
			return BackendHealth{Version: version, Message: fmt.Sprintf("Elasticsearch at %s failed while checking job index %s: %v", base, candidate, rootCause(err))}
		}
		if status == http.StatusNotFound {
			continue
		}
		if p := httpProblem("Elasticsearch", base, "HEAD /"+candidate, status, body, "elasticsearchUser and elasticsearchPassword"); p != "" {
			return BackendHealth{Version: version, Message: p}
		}
		found = candidate
		break
	}
	if found == "" {
		return BackendHealth{Version: version, Message: fmt.Sprintf(
			"Elasticsearch: job index %s not found: has any agent run yet? (neither %s nor %s, this and last month's, nor %s, the index of releases before 0.2, exists; %s at %s answers; if agents have run, check elasticsearchJobIndex)",
			index, thisMonth, lastMonth, index, version, base)}
	}
	index = found
	if p := d.checkJobMapping(ctx, index); p != "" {
		return BackendHealth{Version: version, Message: p}
	}
	return BackendHealth{OK: true, Version: version, Message: fmt.Sprintf("%s: job index %s found with Jobsight's mapping", version, index),
		jobs: d.anyJob(ctx)}
}

// anyJob says whether the job indices hold any document; nil when the
// search fails (the health check then says nothing on its account).
func (d *Datasource) anyJob(ctx context.Context) *bool {
	status, body, err := sendJSON(ctx, d.es, http.MethodPost, d.settings.ElasticsearchURL,
		"/"+url.PathEscape(jobmodel.SearchIndices(d.settings.ElasticsearchJobIndex))+"/_search?ignore_unavailable=true&allow_no_indices=true",
		`{"size":0,"track_total_hits":true,"query":{"match_all":{}}}`)
	if err != nil || status != http.StatusOK {
		return nil
	}
	var ans struct {
		Hits struct {
			Total struct {
				Value int64 `json:"value"`
			} `json:"total"`
		} `json:"hits"`
	}
	if json.Unmarshal(body, &ans) != nil {
		return nil
	}
	found := ans.Hits.Total.Value > 0
	return &found
}

// mappedFields are the job-index fields every query relies on.
var mappedFields = []string{"cluster", "job_id", "user", "account", "partition", "state", "start_time", "end_time", "final", "requested"}

// checkJobMapping reads the job index's mapping and names the fields the
// datasource needs that it lacks, or returns "".
func (d *Datasource) checkJobMapping(ctx context.Context, index string) string {
	base := d.settings.ElasticsearchURL
	status, body, err := send(ctx, d.es, http.MethodGet, base, "/"+url.PathEscape(index)+"/_mapping")
	if err != nil {
		return fmt.Sprintf("Elasticsearch at %s failed while reading the mapping of %s: %v", base, index, rootCause(err))
	}
	if p := httpProblem("Elasticsearch", base, "GET /"+index+"/_mapping", status, body, "elasticsearchUser and elasticsearchPassword"); p != "" {
		return p
	}
	var ans map[string]struct {
		Mappings struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"mappings"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return fmt.Sprintf("Elasticsearch: the mapping of %s is not JSON: %v", index, err)
	}
	props := map[string]bool{}
	for _, idx := range ans {
		for k := range idx.Mappings.Properties {
			props[k] = true
		}
	}
	var missing []string
	for _, f := range mappedFields {
		if !props[f] {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("Elasticsearch: index %s lacks the fields %s of Jobsight's job mapping: it was not created by a Jobsight agent (check elasticsearchJobIndex)",
			index, strings.Join(missing, ", "))
	}
	return ""
}

// checkPrometheus asks for the build info; servers that do not serve it
// (some Prometheus-compatible stores) are asked for a trivial query instead.
func (d *Datasource) checkPrometheus(ctx context.Context) BackendHealth {
	base := d.settings.PrometheusURL
	const credHint = "prometheusBearerToken, or prometheusUser and prometheusPassword"

	status, body, err := send(ctx, d.prom, http.MethodGet, base, "/api/v1/status/buildinfo")
	if err != nil {
		return BackendHealth{Message: fmt.Sprintf("Prometheus at %s is unreachable: %v", base, rootCause(err))}
	}
	if status == http.StatusNotFound {
		status, body, err = send(ctx, d.prom, http.MethodGet, base, "/api/v1/query?query=vector(1)")
		if err != nil {
			return BackendHealth{Message: fmt.Sprintf("Prometheus at %s is unreachable: %v", base, rootCause(err))}
		}
		if status == http.StatusNotFound {
			return BackendHealth{Message: fmt.Sprintf("Prometheus: %s does not serve the Prometheus HTTP API (/api/v1/query answers 404): check prometheusUrl (for Mimir, include its /prometheus prefix)", base)}
		}
		if p := httpProblem("Prometheus", base, "GET /api/v1/query", status, body, credHint); p != "" {
			return BackendHealth{Message: p}
		}
		return BackendHealth{OK: true, Message: "Prometheus-compatible API: ready"}
	}
	if p := httpProblem("Prometheus", base, "GET /api/v1/status/buildinfo", status, body, credHint); p != "" {
		return BackendHealth{Message: p}
	}
	var bi struct {
		Status string `json:"status"`
		Data   struct {
			Version string `json:"version"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &bi); err != nil || bi.Status != "success" {
		return BackendHealth{Message: fmt.Sprintf("Prometheus: %s does not look like Prometheus (its build info is not a Prometheus API answer): check prometheusUrl", base)}
	}
	version := strings.TrimSpace("Prometheus " + bi.Data.Version)
	return d.checkSeries(ctx, BackendHealth{OK: true, Version: version, Message: version + ": ready"})
}

// checkSeries asks whether Prometheus holds any Jobsight job series (the
// metric names matching jobsight_job_*).
func (d *Datasource) checkSeries(ctx context.Context, h BackendHealth) BackendHealth {
	base := d.settings.PrometheusURL
	path := "/api/v1/label/__name__/values?match[]=" + url.QueryEscape(`{__name__=~"jobsight_job_.+"}`)
	status, body, err := send(ctx, d.prom, http.MethodGet, base, path)
	if err != nil {
		return BackendHealth{Version: h.Version, Message: fmt.Sprintf("Prometheus at %s failed while listing Jobsight series: %v", base, rootCause(err))}
	}
	if p := httpProblem("Prometheus", base, "GET /api/v1/label/__name__/values", status, body, "prometheusBearerToken, or prometheusUser and prometheusPassword"); p != "" {
		return BackendHealth{Version: h.Version, Message: p}
	}
	var ans struct {
		Data []string `json:"data"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return BackendHealth{Version: h.Version, Message: fmt.Sprintf("Prometheus: the list of series names is not JSON: %v", err)}
	}
	if len(ans.Data) == 0 {
		return BackendHealth{Version: h.Version, noSeries: true, Message: fmt.Sprintf(
			"Prometheus at %s holds no jobsight_job_* series: have agents run, and can they remote-write to it (--web.enable-remote-write-receiver)? Check prometheusUrl", base)}
	}
	h.Message = fmt.Sprintf("%s with %d Jobsight job metrics", h.Message, len(ans.Data))
	return h
}

// send sends one request to base+path and returns the status and (bounded)
// body. Only transport failures are errors.
func send(ctx context.Context, c *http.Client, method, base, path string) (int, []byte, error) {
	return sendJSON(ctx, c, method, base, path, "")
}

// sendJSON is send with a JSON body ("" for none).
func sendJSON(ctx context.Context, c *http.Client, method, base, path, body string) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(base, "/")+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	ans, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("reading the answer to %s %s: %w", method, path, err)
	}
	return resp.StatusCode, ans, nil
}
