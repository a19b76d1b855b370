package grafana

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/test/alerting"
	"github.com/jobsight/jobsight/test/browser"
	"github.com/jobsight/jobsight/test/dashtest"
)

// A Grafana that a site or developer installed, named by these variables;
// this project never builds or runs Grafana's server itself (AGPL).
const (
	envGrafanaURL      = "JOBSIGHT_TEST_GRAFANA_URL"
	envGrafanaUser     = "JOBSIGHT_TEST_GRAFANA_USER"     // default admin
	envGrafanaPassword = "JOBSIGHT_TEST_GRAFANA_PASSWORD" // default admin
)

// realGrafana returns the named Grafana's admin client, or skips — also
// under CI=true, where no Grafana exists by rule.
func realGrafana(t *testing.T) client {
	t.Helper()
	base := os.Getenv(envGrafanaURL)
	if base == "" {
		t.Skipf("%s is not set: no Grafana server runs here (Grafana's server is AGPL; this project never builds or runs one). "+
			"The Grafana side is proven through the plugin host (TestGrafanaSide), the schema checks (test/schema) and the editors in Chromium (test/editors). "+
			"Set %s (and %s, %s) to a Grafana 11-13 with this build of the plugin installed to run these tests too.",
			envGrafanaURL, envGrafanaURL, envGrafanaUser, envGrafanaPassword)
	}
	user, pw := os.Getenv(envGrafanaUser), os.Getenv(envGrafanaPassword)
	if user == "" {
		user = "admin"
	}
	if pw == "" {
		pw = "admin"
	}
	return client{base: base, user: user, password: pw}
}

// TestRealGrafana provisions the test stack's stores, the shipped
// dashboards and alert rules into the named Grafana through its HTTP API,
// checks the plugin loaded, the health check, every panel through
// /api/ds/query, and then runs the @grafana/plugin-e2e browser specs
// (plugin-e2e/) against it. The Grafana must reach this machine's
// 127.0.0.1 (run it on the same host).
func TestRealGrafana(t *testing.T) {
	adm := realGrafana(t)
	e := need(t)
	// A finished job for the job-timeline and job-detail specs.
	from := time.Now().Add(-time.Minute)
	job := e.submit(t, "--mem=50M", "-J", "real-grafana", "--wrap", "timeout 8 sh -c 'while :; do :; done'")
	e.finalJob(t, job)
	jobRange := fmt.Sprintf("from=%d&to=%d", from.UnixMilli(), time.Now().Add(time.Minute).UnixMilli())

	var ps struct {
		ID      string `json:"id"`
		Enabled bool   `json:"enabled"`
		Info    struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	adm.mustDo(t, "GET", "/api/plugins/jobsight-slurm-datasource/settings", nil, &ps)
	if ps.ID != "jobsight-slurm-datasource" {
		t.Fatalf("the plugin is not installed in %s: %+v", adm.base, ps)
	}
	var health struct {
		Version string `json:"version"`
	}
	adm.mustDo(t, "GET", "/api/health", nil, &health)
	t.Logf("Grafana %s, plugin %s", health.Version, ps.Info.Version)

	// The datasource as the provisioning file configures it, under its
	// fixed uid; replaced when it exists.
	var jd map[string]any
	if err := json.Unmarshal(e.ds.JSONData, &jd); err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"name": "Jobsight (e2e)", "type": "jobsight-slurm-datasource", "uid": e.ds.UID, "access": "proxy",
		"jsonData": jd, "secureJsonData": e.ds.SecureJSONData}
	if adm.do(t, "GET", "/api/datasources/uid/"+e.ds.UID, nil, nil) == http.StatusOK {
		adm.mustDo(t, "PUT", "/api/datasources/uid/"+e.ds.UID, body, nil)
	} else {
		adm.mustDo(t, "POST", "/api/datasources", body, nil)
	}
	prom := map[string]any{"name": "Jobsight Prometheus (e2e)", "type": "prometheus", "uid": prometheusUID, "access": "proxy", "url": e.st.Prometheus.URL}
	if adm.do(t, "GET", "/api/datasources/uid/"+prometheusUID, nil, nil) == http.StatusOK {
		adm.mustDo(t, "PUT", "/api/datasources/uid/"+prometheusUID, prom, nil)
	} else {
		adm.mustDo(t, "POST", "/api/datasources", prom, nil)
	}
	var h struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	adm.mustDo(t, "GET", "/api/datasources/uid/"+e.ds.UID+"/health", nil, &h)
	if h.Status != "OK" {
		t.Errorf("health check in Grafana: %+v", h)
	}

	// The shipped dashboards, imported as an admin imports them.
	dashboards := dashtest.Load(t, dashboardsDir)
	for file := range dashboards {
		raw, err := os.ReadFile(filepath.Join(dashboardsDir, file))
		if err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		d["id"] = nil
		adm.mustDo(t, "POST", "/api/dashboards/db", map[string]any{"dashboard": d, "overwrite": true}, nil)
	}
	r := dashtest.Runner{JobsightUID: e.ds.UID, PrometheusUID: prometheusUID,
		Jobsight: func(t testing.TB, where string, model map[string]any) data.Frames {
			m := map[string]any{}
			for k, v := range model {
				m[k] = v
			}
			m["datasource"] = map[string]any{"uid": e.ds.UID, "type": "jobsight-slurm-datasource"}
			return adm.queryDS(t, m)
		},
		Prometheus: func(t testing.TB, where, expr string) int {
			n := 0
			for _, f := range adm.queryDS(t, map[string]any{"datasource": map[string]any{"uid": prometheusUID, "type": "prometheus"}, "expr": expr, "range": true}) {
				if f.Rows() > 0 {
					n++
				}
			}
			return n
		},
		Quiet: true, // the jobs of TestGrafanaSide may be older than the panels' range
	}
	for file, d := range dashboards {
		t.Run(file, func(t *testing.T) { r.Run(t, file, d) })
	}

	// The shipped alert rules, provisioned through the API into a folder.
	rules, err := alerting.LoadRules(filepath.Join(repoRoot, "provisioning", "alerting", "hogging.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	folder := "jobsight-e2e"
	if adm.do(t, "GET", "/api/folders/"+folder, nil, nil) != http.StatusOK {
		adm.mustDo(t, "POST", "/api/folders", map[string]any{"uid": folder, "title": "Jobsight (e2e)"}, nil)
	}
	for _, rule := range rules {
		var data []map[string]any
		for _, q := range rule.Data {
			data = append(data, map[string]any{"refId": q.RefID, "queryType": q.QueryType, "datasourceUid": q.DatasourceUID, "model": q.Model,
				"relativeTimeRange": map[string]any{"from": q.RelativeTimeRange.From.Seconds(), "to": q.RelativeTimeRange.To.Seconds()}})
		}
		body := map[string]any{"uid": rule.UID, "title": rule.Title, "condition": rule.Condition, "data": data, "folderUID": folder,
			"ruleGroup": rule.Group, "noDataState": rule.NoDataState, "execErrState": rule.ExecErrState, "for": rule.For.String(),
			"labels": rule.Labels, "annotations": rule.Annotations, "orgID": 1}
		if adm.do(t, "GET", "/api/v1/provisioning/alert-rules/"+rule.UID, nil, nil) == http.StatusOK {
			adm.mustDo(t, "PUT", "/api/v1/provisioning/alert-rules/"+rule.UID, body, nil)
		} else {
			adm.mustDo(t, "POST", "/api/v1/provisioning/alert-rules", body, nil)
		}
	}

	t.Run("plugin-e2e", func(t *testing.T) { e.pluginE2E(t, adm, e.docID(job), jobRange) })
}

// pluginE2E runs the @grafana/plugin-e2e specs with Debian's Chromium.
func (e *env) pluginE2E(t *testing.T, adm client, job, jobRange string) {
	chromium := browser.Path()
	if chromium == "" {
		t.Fatal("the browser specs need Chromium (Debian's chromium, or JOBSIGHT_CHROMIUM)")
	}
	root, _ := filepath.Abs(repoRoot)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npx", "playwright", "test", "--config", "test/grafana/plugin-e2e/playwright.config.ts")
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"GRAFANA_URL="+adm.base, "GRAFANA_ADMIN_USER="+adm.user, "GRAFANA_ADMIN_PASSWORD="+adm.password,
		"JOBSIGHT_CHROMIUM="+chromium,
		"JOBSIGHT_ES_URL="+e.st.Elasticsearch.URL, "JOBSIGHT_ES_USER="+e.st.Elasticsearch.User, "JOBSIGHT_ES_PASSWORD="+e.st.Elasticsearch.Password,
		"JOBSIGHT_PROMETHEUS_URL="+e.st.Prometheus.URL,
		"JOBSIGHT_TEST_JOB="+job, "JOBSIGHT_TEST_JOB_RANGE="+jobRange,
		"JOBSIGHT_SCREENSHOTS="+os.Getenv("JOBSIGHT_SCREENSHOTS"),
		"PLAYWRIGHT_HTML_OPEN=never",
	)
	out, err := cmd.CombinedOutput()
	t.Logf("playwright:\n%s", out)
	if err != nil {
		t.Fatalf("the plugin-e2e specs failed: %v", err)
	}
}

// client is a Grafana HTTP API client logged in as one user.
type client struct {
	base, user, password string
}

// do sends a JSON request and decodes a JSON answer into out (when not
// nil), returning the status code.
func (c client) do(t testing.TB, method, path string, body, out any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(c.user, c.password)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d, answer does not decode: %v\n%.2000s", method, path, resp.StatusCode, err, b)
		}
	}
	return resp.StatusCode
}

// mustDo is do that fails the test unless the status is 2xx.
func (c client) mustDo(t testing.TB, method, path string, body, out any) {
	t.Helper()
	var raw json.RawMessage
	if code := c.do(t, method, path, body, &raw); code/100 != 2 {
		t.Fatalf("%s %s as %s: status %d: %.2000s", method, path, c.user, code, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// queryDS posts one query to /api/ds/query over the last 30 minutes and
// returns its frames, failing the test on an error.
func (c client) queryDS(t testing.TB, q map[string]any) data.Frames {
	t.Helper()
	q["refId"] = "A"
	if q["maxDataPoints"] == nil {
		q["maxDataPoints"] = 300
	}
	if q["intervalMs"] == nil {
		q["intervalMs"] = 15000
	}
	var raw json.RawMessage
	code := c.do(t, "POST", "/api/ds/query", map[string]any{"queries": []any{q}, "from": "now-30m", "to": "now"}, &raw)
	var resp backend.QueryDataResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatalf("/api/ds/query as %s: %d, %v\n%.2000s", c.user, code, err, raw)
	}
	r, ok := resp.Responses["A"]
	if code != http.StatusOK || !ok || r.Error != nil {
		t.Fatalf("/api/ds/query as %s: status %d, error %v\nquery %v", c.user, code, r.Error, q)
	}
	return r.Frames
}
