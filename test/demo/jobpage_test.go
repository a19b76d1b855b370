package demo

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/internal/demo"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/store/promremote"
	"github.com/jobsight/jobsight/test/browser"
	"github.com/jobsight/jobsight/test/pluginhost"
	"github.com/jobsight/jobsight/test/stack"
)

var shot = flag.String("jobpage-screenshot", "", "TestDemoJobPage: run, and save the job page's screenshot here (relative to the module root, e.g. docs/job-page.png)")

// TestDemoJobPage takes docs/job-page.png: a multi-node GPU job of the
// demo history (`jobsight-stack up --history 30d`: the same generator,
// seed, clusters and rate), its document indexed into ZincSearch and its
// series written to Prometheus (no Slurm), its page served by the real
// plugin executable through the plugin host and rendered by headless
// Chromium with JavaScript off. It runs only with -jobpage-screenshot:
//
//	go test -count=1 ./test/demo -jobpage-screenshot docs/job-page.png
func TestDemoJobPage(t *testing.T) {
	if *shot == "" {
		t.Skip("run with -jobpage-screenshot docs/job-page.png to retake the job page's screenshot")
	}
	stack.Require(t, stack.PrometheusBin)
	chromium := browser.Path()
	if chromium == "" {
		t.Skip("chromium not found (install Debian's chromium or set JOBSIGHT_CHROMIUM)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// The demo history of --history 30d, generated in memory; the job
	// shown: a finished multi-node GPU job of a few hours with readable
	// figures and causes to read.
	span := 30 * 24 * time.Hour
	n, err := demo.HistoryJobs(span, demo.DefaultPerDay)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Truncate(time.Second)
	g, err := demo.New(demo.Config{Seed: demo.DemoSeed, End: end, Span: span, Jobs: n, Running: demo.DefaultRunning, Clusters: demo.DemoClusters})
	if err != nil {
		t.Fatal(err)
	}
	var job *jobmodel.Job
	for !g.Done() {
		for _, j := range g.Next(1000) {
			el := *j.ElapsedSeconds
			if j.NodeCount != 2 || *j.Requested.GPUs != 8 || j.GPU == nil || j.GPU.UtilizationAvg == nil || j.Memory == nil || j.CPU == nil ||
				el < 3*3600 || el > 20*3600 || j.State != jobmodel.StateCompleted || j.Analysis.Class != jobmodel.ClassInefficient {
				continue
			}
			// The one whose GPU use falls the most within its run (the
			// charts then show why the class is what it is).
			if job == nil || drop(&j) > drop(job) {
				j := j
				job = &j
			}
		}
	}
	if job == nil {
		t.Fatal("the demo history has no finished 2-node 8-GPU job of 3-20 hours classed inefficient")
	}
	t.Logf("job %s: %s, %d nodes, %d GPUs, %.1f h, class %s, %d causes", job.DocID, job.Name, job.NodeCount, *job.Requested.GPUs, *job.ElapsedSeconds/3600, job.Analysis.Class, len(job.Analysis.Causes))

	dir := t.TempDir()
	es, err := stack.StartElasticsearch(ctx, filepath.Join(dir, "es"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !es.External {
			_ = es.Stop()
		}
	})
	prom, err := stack.StartPrometheusWith(ctx, filepath.Join(dir, "prometheus"), stack.PrometheusOptions{Retention: span})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prom.Stop() })
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{es.URL}, Username: es.User, Password: es.Password, CACertFile: es.CACertFile, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	const index = "jobsight-demo-jobs"
	none, err := demo.New(demo.Config{End: end, Clusters: demo.DemoClusters})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := demo.IndexJobs(ctx, c, index, none, []jobmodel.Job{*job}, demo.IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := promremote.New(promremote.Config{URL: prom.URL + "/api/v1/write", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := demo.WriteHistory(ctx, w, g.Site(), []jobmodel.Job{*job}, end); err != nil {
		t.Fatal(err)
	}
	if err := demo.WaitCount(ctx, c, index, 1, 2*time.Minute); err != nil {
		t.Fatal(err)
	}

	// The real plugin, as Grafana runs it.
	h := pluginhost.BuildAndStart(t, ctx)
	jd, _ := json.Marshal(map[string]any{"elasticsearchUrl": es.URL, "elasticsearchUser": es.User, "elasticsearchJobIndex": index, "prometheusUrl": prom.URL})
	ds := pluginhost.Datasource{ID: 1, UID: "jobsight", Name: "Jobsight", JSONData: jd, SecureJSONData: map[string]string{"elasticsearchPassword": es.Password}}
	admin := pluginhost.Caller{User: &backend.User{Login: "admin", Name: "Admin", Email: "admin@example.org", Role: "Admin"}}
	// The job-detail dashboard's timeline panels: every series of the
	// job, per node, over its run.
	resp, err := h.QueryData(ctx, ds, admin, pluginhost.Query{RefID: "A",
		Model: map[string]any{"queryType": "jobTimeline", "jobId": job.DocID, "perNode": true},
		From:  job.StartTime.Add(-time.Hour), To: job.EndTime.Add(time.Hour), MaxDataPoints: 500})
	if err != nil {
		t.Fatal(err)
	}
	dr := resp.Responses["A"]
	if dr.Error != nil {
		t.Fatalf("jobTimeline: %v", dr.Error)
	}
	seen := map[string]int{}
	for _, f := range dr.Frames {
		if n, _ := f.RowLen(); n > 0 {
			seen[f.Name]++
		}
	}
	t.Logf("jobTimeline frames with data: %v", seen)
	if len(seen) < 5 {
		t.Errorf("jobTimeline of %s: frames with data %v, want its CPU, memory, I/O and GPU series", job.DocID, seen)
	}

	// Chromium reads the page over HTTP, as Grafana forwards it.
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		resp, err := h.CallResource(r.Context(), ds, admin, r.Method, strings.TrimPrefix(r.URL.RequestURI(), "/"), nil)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		for k, v := range resp.Headers {
			rw.Header()[k] = v
		}
		rw.WriteHeader(resp.Status)
		_, _ = rw.Write(resp.Body)
	}))
	t.Cleanup(srv.Close)
	pageURL := srv.URL + "/job?job=" + url.QueryEscape(job.DocID)

	b := browser.New(chromium, t.TempDir(), t.Logf)
	dom, err := b.DOM(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{job.JobID, job.Cluster, "<svg", "GPU"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the job page lacks %q", want)
		}
	}
	if strings.Contains(dom, "Time series are missing") {
		t.Errorf("the job page says its series are missing:\n%.2000s", dom)
	}
	png, err := b.Screenshot(pageURL, 1000, 2700) // the whole page, charts included
	if err != nil {
		t.Fatal(err)
	}
	dst := *shot
	if !filepath.IsAbs(dst) {
		root, err := stack.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		dst = filepath.Join(root, dst)
	}
	if err := os.WriteFile(dst, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("job page of %s saved to %s", job.DocID, dst)
}

// drop is how far a job's GPU utilisation timeline falls from its first
// to its last quarter.
func drop(j *jobmodel.Job) float64 {
	tl := j.GPU.UtilizationTimeline
	q := len(tl) / 4
	if q == 0 {
		return 0
	}
	mean := func(vs []*float64) float64 {
		var s float64
		for _, v := range vs {
			if v != nil {
				s += *v
			}
		}
		return s / float64(len(vs))
	}
	return mean(tl[:q]) - mean(tl[len(tl)-q:])
}
