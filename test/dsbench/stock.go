package dsbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/textfmt"
)

// Panel is one benchmarked panel: the Jobsight query and the requests
// Grafana's stock datasources would send to build the same panel.
type Panel struct {
	Name string
	// Query is the Jobsight query model (backend.DataQuery.JSON).
	Query string
	// MaxDataPoints is the panel's width in points.
	MaxDataPoints int64
	// Stock are the stock datasources' requests; StockNote says what the
	// stock panel cannot produce.
	Stock     []StockRequest
	StockNote string
}

// StockRequest is one HTTP request a stock datasource sends.
type StockRequest struct {
	Backend string // "elasticsearch" or "prometheus"
	What    string
	// Elasticsearch: the _msearch NDJSON body (Grafana's Elasticsearch
	// datasource sends every query of a panel in one _msearch).
	MSearch []string
	// Prometheus: an instant query at Time, or a range query when Step > 0.
	PromQL     string
	Time       time.Time
	Start, End time.Time
	Step       time.Duration
}

// Range is the dashboards' time range: the last 7 days.
func (e *Env) Range() (from, to time.Time) { return e.Now.Add(-FinishedSpan), e.Now }

// Panels returns the benchmarked panels for queries made at now (the
// dashboard's range ends at now).
func (e *Env) Panels(now time.Time) []Panel {
	from := now.Add(-FinishedSpan)
	fromMs, toMs := from.UnixMilli(), now.UnixMilli()
	header := `{"search_type":"query_then_fetch","ignore_unavailable":true,"index":"` + Index + `"}`
	// Grafana's raw-data query (Elasticsearch datasource, Grafana 10):
	// the time field in the dashboard's range, newest first. An empty
	// Lucene query adds no query_string filter (Grafana's
	// AddQueryStringFilter skips it), which matters here: ZincSearch runs
	// query_string "*" as a wildcard scan (~90 s on 10,200 documents, measured with the earlier seed)
	// where Elasticsearch rewrites it to match_all.
	raw := func(size int) string {
		return fmt.Sprintf(`{"size":%d,"query":{"bool":{"filter":[{"range":{"start_time":{"gte":%d,"lte":%d,"format":"epoch_millis"}}}]}},"sort":[{"start_time":{"order":"desc","unmapped_type":"boolean"}},{"_doc":{"order":"desc"}}],"script_fields":{}}`,
			size, fromMs, toMs)
	}
	instant := func(what, q string) StockRequest {
		return StockRequest{Backend: "prometheus", What: what, PromQL: q, Time: now}
	}
	liveNow := []StockRequest{
		instant("live cores", `sum by (cluster, job_id) (rate(jobsight_job_cpu_usage_seconds_total[2m]))`),
		instant("live memory", `sum by (cluster, job_id) (jobsight_job_memory_used_bytes)`),
		instant("live GPU utilisation", `avg by (cluster, job_id) (jobsight_job_gpu_utilization_ratio)`),
	}
	rng := strconv.FormatInt(int64(FinishedSpan/time.Second), 10) + "s" // $__range
	usedSoFar := []StockRequest{
		instant("running CPU-seconds", `sum by (cluster, job_id) (max_over_time(jobsight_job_cpu_usage_seconds_total[5m]))`),
		instant("running GPU utilisation", `avg by (cluster, job_id) (avg_over_time(jobsight_job_gpu_utilization_ratio[`+rng+`]))`),
		instant("running memory", `sum by (cluster, job_id) (avg_over_time(jobsight_job_memory_used_bytes[`+rng+`]))`),
	}
	var tl *jobmodel.Job
	for i := range e.Jobs {
		if e.Jobs[i].DocID == e.TimelineJob {
			tl = &e.Jobs[i]
		}
	}
	const width = 1000
	var timeline []StockRequest
	if tl != nil {
		start := tl.StartTime.Time
		step := max((now.Sub(start) / width).Truncate(time.Second), 5*time.Second) // Grafana: range / maxDataPoints, ≥ the scrape interval
		sel := `{cluster="` + tl.Cluster + `",job_id="` + tl.JobID + `"}`
		win := "1m"
		rq := func(what, q string) StockRequest {
			return StockRequest{Backend: "prometheus", What: what, PromQL: q, Start: start, End: now, Step: step}
		}
		timeline = []StockRequest{
			rq("CPU cores", `sum by (node) (rate(jobsight_job_cpu_usage_seconds_total`+sel+`[`+win+`]))`),
			rq("memory", `sum by (node) (jobsight_job_memory_used_bytes`+sel+`)`),
			rq("memory (resident)", `sum by (node) (jobsight_job_memory_rss_bytes`+sel+`)`),
			rq("storage read", `sum by (node) (rate(jobsight_job_io_read_bytes_total`+sel+`[`+win+`]))`),
			rq("storage write", `sum by (node) (rate(jobsight_job_io_written_bytes_total`+sel+`[`+win+`]))`),
			rq("GPU utilisation", `max by (node, gpu) (jobsight_job_gpu_utilization_ratio`+sel+`)`),
			rq("GPU memory", `max by (node, gpu) (jobsight_job_gpu_memory_used_bytes`+sel+`)`),
			{Backend: "elasticsearch", What: "the job's document (requested amounts → thresholds by 'Config from query results')",
				MSearch: []string{header, fmt.Sprintf(`{"size":1,"query":{"bool":{"filter":[{"range":{"start_time":{"gte":%d,"lte":%d,"format":"epoch_millis"}}},{"query_string":{"analyze_wildcard":true,"query":"job_id:%s AND cluster:%s"}}]}},"sort":[{"start_time":{"order":"desc","unmapped_type":"boolean"}},{"_doc":{"order":"desc"}}],"script_fields":{}}`,
					start.Add(-time.Minute).UnixMilli(), toMs, tl.JobID, tl.Cluster)}},
			{Backend: "elasticsearch", What: "annotation query (start/end events)",
				MSearch: []string{header, fmt.Sprintf(`{"query":{"bool":{"filter":[{"range":{"start_time":{"gte":%d,"lte":%d,"format":"epoch_millis"}}},{"query_string":{"query":"job_id:%s AND cluster:%s"}}]}},"size":10000}`,
					start.Add(-time.Minute).UnixMilli(), toMs, tl.JobID, tl.Cluster)}},
		}
	}
	sumAgg := func(id, field string) string { return fmt.Sprintf(`%q:{"sum":{"field":%q}}`, id, field) }
	byAccount := fmt.Sprintf(`{"size":0,"query":{"bool":{"filter":[{"range":{"start_time":{"gte":%d,"lte":%d,"format":"epoch_millis"}}}]}},"aggs":{"2":{"terms":{"field":"account","size":500,"order":{"_key":"asc"},"min_doc_count":1},"aggs":{%s}}}}`,
		fromMs, toMs, strings.Join([]string{
			sumAgg("3", "totals.core_hours_reserved"), sumAgg("4", "totals.core_hours_used"), sumAgg("5", "totals.core_hours_unused"),
			sumAgg("6", "totals.gpu_hours_reserved"), sumAgg("7", "totals.gpu_hours_used"), sumAgg("8", "totals.gpu_hours_unused"),
			sumAgg("9", "totals.memory_gib_hours_reserved"), sumAgg("10", "totals.memory_gib_hours_used"), sumAgg("11", "totals.memory_gib_hours_unused"),
			sumAgg("12", "totals.elapsed_hours"), sumAgg("13", "totals.time_limit_hours"),
		}, ","))

	esRaw := func(size int) StockRequest {
		return StockRequest{Backend: "elasticsearch", What: fmt.Sprintf("raw documents, size %d", size), MSearch: []string{header, raw(size)}}
	}
	hog := []StockRequest{
		instant("GPUs never above 5 %", `count by (cluster, job_id) (max_over_time(jobsight_job_gpu_utilization_ratio[1800s]) < 0.05)`),
		instant("cores: peak 1-min rate / allocated < 5 %", `max by (cluster, job_id) (max_over_time((sum by (cluster, job_id) (rate(jobsight_job_cpu_usage_seconds_total[1m])))[1800s:1m])) / sum by (cluster, job_id) (jobsight_job_allocated_cpus) < 0.05`),
		instant("memory: peak / limit < 5 %", `max by (cluster, job_id) (max_over_time((sum by (cluster, job_id) (jobsight_job_memory_used_bytes))[1800s:1m])) / sum by (cluster, job_id) (jobsight_job_memory_limit_bytes) < 0.05`),
	}
	return []Panel{
		{Name: "jobs_page100", Query: `{"queryType":"jobs","limit":100}`,
			Stock:     append([]StockRequest{esRaw(100)}, liveNow...),
			StockNote: "jobs started in the range only (the time field), not jobs overlapping it; the live columns come from separate Prometheus queries over all running jobs, joined in the browser by an outer-join transformation on job_id (not measured); efficiency of running jobs needs a further calculation transformation"},
		{Name: "jobs_10000", Query: `{"queryType":"jobs","limit":10000}`,
			Stock:     append([]StockRequest{esRaw(10000)}, liveNow...),
			StockNote: "as above; whole _source of each document (the raw-data query has no field list), 10,000 rows at most (max_result_window; Grafana does not page)"},
		{Name: "reservation_by_account", Query: `{"queryType":"reservation","groupBy":"account"}`,
			Stock:     []StockRequest{{Backend: "elasticsearch", What: "terms(account) + sums of the stored totals", MSearch: []string{header, byAccount}}},
			StockNote: "finished jobs only: running jobs have no totals yet and their series carry no account label, so their usage cannot be grouped by account; the jobs started in the range (the time field), not those overlapping it; a sum over jobs that lack a figure reads as 0, with no count of the jobs lacking it"},
		{Name: "reservation_per_job", Query: `{"queryType":"reservation"}`,
			Stock:     append([]StockRequest{esRaw(10000)}, usedSoFar...),
			StockNote: "at most 10,000 of the " + strconv.Itoa(e.Finished+len(e.Jobs)) + " jobs (one raw-data query, no paging); reserved hours per row need 'Add field from calculation' transformations in the browser (not measured); the running jobs' windows are the whole dashboard range ($__range), not each job's own run"},
		{Name: "hogging_1800s", Query: `{"queryType":"hogging","windowSeconds":1800}`,
			Stock:     hog,
			StockNote: "no user/account/partition labels (not on the series, and an alert rule cannot join Elasticsearch), no per-partition contention weight (the partition series cannot be matched to jobs), and no 'ran for the whole window' rule (a job started 10 minutes ago is judged on 10 minutes)"},
		{Name: "timeline_running_gpu_job", Query: `{"queryType":"jobTimeline","jobId":"` + e.TimelineJob + `","perNode":true}`, MaxDataPoints: width,
			Stock:     timeline,
			StockNote: "the dashboard's range must be set to the job's run by the link that opens it; one request per series query; requested amounts as thresholds need the job document as an extra query plus a 'Config from query results' transformation"},
	}
}

// StockResult is one execution of a panel's stock requests.
type StockResult struct {
	ES, Prom int // requests
	Bytes    int // answer bytes
	Rows     int // Elasticsearch hits or buckets, Prometheus series
	// Detail says per request: what, rows, bytes, time.
	Detail []string
}

// StockClient sends the stock requests.
type StockClient struct {
	ESURL, ESUser, ESPassword string
	PromURL                   string
	HTTP                      *http.Client
}

// NewStockClient returns a client for the env's servers.
func (e *Env) NewStockClient() *StockClient {
	return &StockClient{ESURL: e.ESURL(), ESUser: e.ESUser(), ESPassword: e.ESPassword(), PromURL: e.PromURL(),
		HTTP: &http.Client{Timeout: 2 * time.Minute}}
}

// Run sends a panel's stock requests as Grafana 10 would: the
// Elasticsearch queries and the Prometheus queries go as two concurrent
// /api/ds/query calls (one per datasource); within the Prometheus one the
// queries run one after another. Every answer is read and JSON-decoded
// (a stand-in for Grafana turning it into frames).
func (c *StockClient) Run(ctx context.Context, p Panel) (StockResult, error) {
	var res StockResult
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	run := func(reqs []StockRequest) {
		defer wg.Done()
		for _, r := range reqs {
			t0 := time.Now()
			n, rows, err := c.do(ctx, r)
			took := time.Since(t0)
			mu.Lock()
			res.Bytes += n
			res.Rows += rows
			res.Detail = append(res.Detail, fmt.Sprintf("%s %q: %d rows, %s, %s", r.Backend, r.What, rows, textfmt.Bytes(n), took.Round(100*time.Microsecond)))
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("%s (%s): %w", r.What, r.Backend, err)
			}
			mu.Unlock()
		}
	}
	var es, prom []StockRequest
	for _, r := range p.Stock {
		if r.Backend == "elasticsearch" {
			es = append(es, r)
			res.ES++
		} else {
			prom = append(prom, r)
			res.Prom++
		}
	}
	wg.Add(2)
	go run(es)
	go run(prom)
	wg.Wait()
	return res, firstErr
}

func (c *StockClient) do(ctx context.Context, r StockRequest) (int, int, error) {
	var req *http.Request
	var err error
	if r.Backend == "elasticsearch" {
		body := strings.Join(r.MSearch, "\n") + "\n"
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, c.ESURL+"/_msearch?max_concurrent_shard_requests=5", strings.NewReader(body))
		if err != nil {
			return 0, 0, err
		}
		req.Header.Set("Content-Type", "application/x-ndjson")
		req.SetBasicAuth(c.ESUser, c.ESPassword)
	} else {
		form := url.Values{"query": {r.PromQL}}
		path := "/api/v1/query"
		if r.Step > 0 {
			path = "/api/v1/query_range"
			form.Set("start", strconv.FormatInt(r.Start.Unix(), 10))
			form.Set("end", strconv.FormatInt(r.End.Unix(), 10))
			form.Set("step", strconv.FormatFloat(r.Step.Seconds(), 'f', -1, 64))
		} else {
			form.Set("time", strconv.FormatInt(r.Time.Unix(), 10))
		}
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, c.PromURL+path, strings.NewReader(form.Encode()))
		if err != nil {
			return 0, 0, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return len(b), 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return len(b), 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, clip(b))
	}
	var ans any
	if err := json.Unmarshal(b, &ans); err != nil {
		return len(b), 0, fmt.Errorf("decoding: %w", err)
	}
	rows, err := countRows(r.Backend, ans)
	if err != nil {
		return len(b), 0, fmt.Errorf("%w: %s", err, clip(b))
	}
	return len(b), rows, nil
}

// countRows counts hits or buckets (Elasticsearch) or series
// (Prometheus), and finds errors hidden in a 200 answer.
func countRows(backend string, ans any) (int, error) {
	m, _ := ans.(map[string]any)
	if backend == "prometheus" {
		if m["status"] != "success" {
			return 0, fmt.Errorf("prometheus: %v", m["error"])
		}
		d, _ := m["data"].(map[string]any)
		r, _ := d["result"].([]any)
		return len(r), nil
	}
	resps, _ := m["responses"].([]any)
	n := 0
	for _, r := range resps {
		rm, _ := r.(map[string]any)
		if e, ok := rm["error"]; ok && e != nil && e != "" {
			return 0, fmt.Errorf("elasticsearch: %v", e)
		}
		if aggs, ok := rm["aggregations"].(map[string]any); ok {
			for _, a := range aggs {
				am, _ := a.(map[string]any)
				b, _ := am["buckets"].([]any)
				n += len(b)
			}
			continue
		}
		h, _ := rm["hits"].(map[string]any)
		hh, _ := h["hits"].([]any)
		n += len(hh)
	}
	return n, nil
}

func clip(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
