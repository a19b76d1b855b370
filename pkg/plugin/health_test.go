package plugin_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store/promremote"
	"github.com/jobsight/jobsight/pkg/plugin"
	"github.com/jobsight/jobsight/test/stack"
)

// servers are the real backends the health checks run against.
type servers struct {
	es   *stack.ESServer
	prom *stack.Server
}

// startServers starts Prometheus and the Elasticsearch-API server (ZincSearch,
// or the real cluster named by JOBSIGHT_TEST_ES_URL) for one test.
func startServers(t *testing.T) servers {
	t.Helper()
	stack.Require(t, stack.PrometheusBin)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	prom, err := stack.StartPrometheus(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("starting Prometheus: %v", err)
	}
	t.Cleanup(func() { _ = prom.Stop() })

	es, err := stack.StartElasticsearch(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("starting the Elasticsearch-API server: %v", err)
	}
	t.Cleanup(func() { _ = es.Stop() })
	return servers{es: es, prom: prom}
}

// uniqueIndex returns an index name no other test (or data on an external
// cluster) uses.
func uniqueIndex(t *testing.T, what string) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "jobsight-test-" + what + "-" + hex.EncodeToString(b[:])
}

// createIndex creates an index the way the agent will (explicit mappings),
// removes it at the end on an external cluster, and waits until the server
// reports it.
func createIndex(t *testing.T, es *stack.ESServer, index string) {
	t.Helper()
	createIndexWith(t, es, index, string(jobmodel.JobMapping()))
}

func createIndexWith(t *testing.T, es *stack.ESServer, index, body string) {
	t.Helper()
	if code := esDo(t, es, http.MethodPut, "/"+index, body); code != http.StatusOK {
		t.Fatalf("creating index %s: HTTP %d", index, code)
	}
	if es.External {
		t.Cleanup(func() { esDo(t, es, http.MethodDelete, "/"+index, "") })
	}
	deadline := time.Now().Add(30 * time.Second)
	for esDo(t, es, http.MethodHead, "/"+index, "") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("index %s was created but does not exist after 30 s", index)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func esDo(t *testing.T, es *stack.ESServer, method, path, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, es.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(es.User, es.Password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// deadURL is a base URL where nothing listens.
func deadURL(t *testing.T) string {
	port, err := stack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "http://127.0.0.1:" + strconv.Itoa(port)
}

// instance is what Grafana passes to NewDatasource for a datasource
// configured against the given URLs.
func instance(esURL, user, jobIndex, promURL string, secure map[string]string) backend.DataSourceInstanceSettings {
	jd, _ := json.Marshal(map[string]any{
		"elasticsearchUrl":      esURL,
		"elasticsearchUser":     user,
		"elasticsearchJobIndex": jobIndex,
		"prometheusUrl":         promURL,
		"timeoutSeconds":        10,
	})
	return backend.DataSourceInstanceSettings{UID: "test", Name: "Jobsight", JSONData: jd, DecryptedSecureJSONData: secure}
}

func checkHealth(t *testing.T, inst backend.DataSourceInstanceSettings) (*backend.CheckHealthResult, plugin.HealthDetails) {
	t.Helper()
	ctx := context.Background()
	i, err := plugin.NewDatasource(ctx, inst)
	if err != nil {
		t.Fatalf("NewDatasource: %v", err)
	}
	ds := i.(*plugin.Datasource)
	defer ds.Dispose()
	res, err := ds.CheckHealth(ctx, &backend.CheckHealthRequest{})
	if err != nil {
		t.Fatalf("CheckHealth returned an error instead of a result: %v", err)
	}
	var details plugin.HealthDetails
	if len(res.JSONDetails) > 0 {
		if err := json.Unmarshal(res.JSONDetails, &details); err != nil {
			t.Fatalf("JSONDetails %s: %v", res.JSONDetails, err)
		}
	}
	t.Logf("health: %s: %s", res.Status, res.Message)
	return res, details
}

func wantContains(t *testing.T, msg string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("message %q does not contain %q", msg, p)
		}
	}
}

func TestCheckHealthAgainstRealServers(t *testing.T) {
	srv := startServers(t)
	jobIndex := uniqueIndex(t, "jobs")
	createIndex(t, srv.es, jobIndex)
	password := map[string]string{"elasticsearchPassword": srv.es.Password}

	// Grafana set up before the first job (the README's order): no series
	// and no job document is a datasource set up right, not an error.
	t.Run("no job yet", func(t *testing.T) {
		res, details := checkHealth(t, instance(srv.es.URL, srv.es.User, jobIndex, srv.prom.URL, password))
		if res.Status != backend.HealthStatusOk || !details.Prometheus.OK || !details.Elasticsearch.OK {
			t.Fatalf("status %s, want OK before the first job: %s", res.Status, res.Message)
		}
		wantContains(t, res.Message, "no jobsight_job_* series yet", "no job has been recorded")
	})
	// A job recorded but no series: the series go to another Prometheus.
	withJob := uniqueIndex(t, "withjob")
	indexJobs(t, srv.es, withJob, jobmodel.Job{DocID: "c:1", Cluster: "c", JobID: "1", User: "alice", State: jobmodel.StateRunning,
		StartTime: jobmodel.At(time.Now().Add(-time.Minute))})
	t.Run("no Jobsight series for a recorded job", func(t *testing.T) {
		res, details := checkHealth(t, instance(srv.es.URL, srv.es.User, withJob, srv.prom.URL, password))
		if res.Status != backend.HealthStatusError || details.Prometheus.OK || !details.Elasticsearch.OK {
			t.Fatalf("status %s: %s", res.Status, res.Message)
		}
		wantContains(t, res.Message, "holds no jobsight_job_* series", "remote-write")
	})
	pushSeries(t, srv.prom.URL)

	t.Run("index of another shape", func(t *testing.T) {
		other := uniqueIndex(t, "other")
		createIndexWith(t, srv.es, other, `{"mappings":{"properties":{"job_id":{"type":"keyword"},"cluster":{"type":"keyword"}}}}`)
		res, _ := checkHealth(t, instance(srv.es.URL, srv.es.User, other, srv.prom.URL, password))
		if res.Status != backend.HealthStatusError {
			t.Fatalf("status %s, want error: %s", res.Status, res.Message)
		}
		wantContains(t, res.Message, "lacks the fields user, account, partition, state, start_time, end_time, final, requested", "not created by a Jobsight agent")
	})

	t.Run("both up", func(t *testing.T) {
		res, details := checkHealth(t, instance(srv.es.URL, srv.es.User, jobIndex, srv.prom.URL, password))
		if res.Status != backend.HealthStatusOk {
			t.Fatalf("status %s, want OK: %s", res.Status, res.Message)
		}
		wantContains(t, res.Message, "job index "+jobIndex+" found", "Prometheus 2.", "ready")
		if !details.Elasticsearch.OK || !details.Prometheus.OK {
			t.Errorf("details %+v %+v: want both ok", details.Elasticsearch, details.Prometheus)
		}
		if !strings.HasPrefix(details.Elasticsearch.Version, "Elasticsearch ") && !strings.HasPrefix(details.Elasticsearch.Version, "OpenSearch ") {
			t.Errorf("Elasticsearch version %q", details.Elasticsearch.Version)
		}
	})

	t.Run("job index missing", func(t *testing.T) {
		missing := uniqueIndex(t, "missing")
		res, details := checkHealth(t, instance(srv.es.URL, srv.es.User, missing, srv.prom.URL, password))
		if res.Status != backend.HealthStatusError {
			t.Fatalf("status %s, want error: %s", res.Status, res.Message)
		}
		wantContains(t, res.Message, "job index "+missing+" not found: has any agent run yet?", "elasticsearchJobIndex")
		if !details.Prometheus.OK {
			t.Errorf("Prometheus reported down although it is up: %s", details.Prometheus.Message)
		}
	})

	t.Run("Elasticsearch down", func(t *testing.T) {
		dead := deadURL(t)
		res, details := checkHealth(t, instance(dead, "", jobIndex, srv.prom.URL, nil))
		if res.Status != backend.HealthStatusError {
			t.Fatalf("status %s, want error: %s", res.Status, res.Message)
		}
		wantContains(t, res.Message, "Elasticsearch at "+dead+" is unreachable", "connection refused")
		if strings.Contains(res.Message, "Prometheus") {
			t.Errorf("message blames Prometheus, which is up: %q", res.Message)
		}
		if details.Elasticsearch.OK || !details.Prometheus.OK {
			t.Errorf("details %+v %+v: want only Elasticsearch failed", details.Elasticsearch, details.Prometheus)
		}
	})

	t.Run("Prometheus down", func(t *testing.T) {
		dead := deadURL(t)
		res, _ := checkHealth(t, instance(srv.es.URL, srv.es.User, jobIndex, dead, password))
		if res.Status != backend.HealthStatusError {
			t.Fatalf("status %s, want error: %s", res.Status, res.Message)
		}
		wantContains(t, res.Message, "Prometheus at "+dead+" is unreachable")
		if strings.Contains(res.Message, "Elasticsearch") {
			t.Errorf("message blames Elasticsearch, which is up: %q", res.Message)
		}
	})

	t.Run("both down", func(t *testing.T) {
		res, _ := checkHealth(t, instance(deadURL(t), "", jobIndex, deadURL(t), nil))
		if res.Status != backend.HealthStatusError {
			t.Fatalf("status %s, want error: %s", res.Status, res.Message)
		}
		wantContains(t, res.Message, "Elasticsearch at", "Prometheus at", "unreachable")
	})

	t.Run("wrong Elasticsearch password", func(t *testing.T) {
		const wrong = "not-the-password-4711"
		res, _ := checkHealth(t, instance(srv.es.URL, srv.es.User, jobIndex, srv.prom.URL, map[string]string{"elasticsearchPassword": wrong}))
		if res.Status != backend.HealthStatusError {
			t.Fatalf("status %s, want error: %s", res.Status, res.Message)
		}
		wantContains(t, res.Message, "HTTP 401", "check elasticsearchUser and elasticsearchPassword")
		for _, secret := range []string{wrong, srv.es.Password} {
			if strings.Contains(res.Message, secret) || bytes.Contains(res.JSONDetails, []byte(secret)) {
				t.Errorf("health result leaks a password: %q %s", res.Message, res.JSONDetails)
			}
		}
	})

	t.Run("Prometheus URL points at Elasticsearch", func(t *testing.T) {
		res, _ := checkHealth(t, instance(srv.es.URL, srv.es.User, jobIndex, srv.es.URL, password))
		if res.Status != backend.HealthStatusError {
			t.Fatalf("status %s, want error: %s", res.Status, res.Message)
		}
		wantContains(t, res.Message, "Prometheus", srv.es.URL)
	})
}

func TestCheckHealthBadSettingsNamesTheField(t *testing.T) {
	cases := []struct {
		name     string
		jsonData string
		secure   map[string]string
		want     []string
	}{
		{"not JSON", `{"elasticsearchUrl": `, nil, []string{"Invalid settings", "jsonData"}},
		{"missing URLs", `{}`, nil, []string{"elasticsearchUrl: is required", "prometheusUrl: is required"}},
		{"URL without scheme", `{"elasticsearchUrl":"es:9200","prometheusUrl":"http://p:9090"}`, nil, []string{"elasticsearchUrl", "http://"}},
		{"timeout as string", `{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p:9090","timeoutSeconds":"30"}`, nil, []string{"timeoutSeconds", "number"}},
		{"unknown key", `{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p:9090","elasticsearchIndex":"x"}`, nil, []string{"elasticsearchIndex", "unknown setting"}},
		{"password in jsonData", `{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p:9090","elasticsearchPassword":"hunter2"}`, nil, []string{"elasticsearchPassword", "unknown setting"}},
		{"credentials in URL", `{"elasticsearchUrl":"http://u:hunter2@es:9200","prometheusUrl":"http://p:9090"}`, nil, []string{"elasticsearchUrl", "must not contain credentials"}},
		{"bad index", `{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p:9090","elasticsearchJobIndex":"Jobs"}`, nil, []string{"elasticsearchJobIndex", "lowercase"}},
		{"token and basic auth", `{"elasticsearchUrl":"http://es:9200","prometheusUrl":"http://p:9090","prometheusUser":"u"}`,
			map[string]string{"prometheusBearerToken": "hunter2"}, []string{"prometheusBearerToken", "cannot be combined"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, _ := checkHealth(t, backend.DataSourceInstanceSettings{JSONData: []byte(c.jsonData), DecryptedSecureJSONData: c.secure})
			if res.Status != backend.HealthStatusError {
				t.Fatalf("status %s, want error: %s", res.Status, res.Message)
			}
			wantContains(t, res.Message, c.want...)
			if strings.Contains(res.Message, "hunter2") {
				t.Errorf("message leaks a secret: %q", res.Message)
			}
		})
	}
}

func TestQueryDataAnswersEachQuery(t *testing.T) {
	ctx := context.Background()
	i, err := plugin.NewDatasource(ctx, instance("http://127.0.0.1:9200", "", "", "http://127.0.0.1:9090", nil))
	if err != nil {
		t.Fatal(err)
	}
	ds := i.(*plugin.Datasource)
	defer ds.Dispose()

	admin := backend.PluginContext{User: &backend.User{Login: "admin", Role: "Admin"}}
	resp, err := ds.QueryData(ctx, &backend.QueryDataRequest{PluginContext: admin, Queries: []backend.DataQuery{
		{RefID: "A", QueryType: "jobs", JSON: []byte(`{"queryType":"jobs"}`)},
		{RefID: "B", JSON: []byte(`{"queryType":`)},
		{RefID: "C", JSON: []byte(`{}`)},
		{RefID: "D", JSON: []byte(`{"queryType":"jobs","user":["a\nb"],"limit":-1}`)},
		{RefID: "E", JSON: []byte(`{"queryType":"jobs","user":"alice"}`)},
	}})
	if err != nil {
		t.Fatalf("QueryData: %v", err)
	}
	want := map[string]struct {
		status backend.Status
		msg    string
	}{
		"A": {backend.StatusBadGateway, "Elasticsearch at http://127.0.0.1:9200 is unreachable"},
		"B": {backend.StatusBadRequest, "decoding the query model"},
		"C": {backend.StatusBadRequest, "no query type selected (one of jobs, jobTimeline, reservation"},
		"D": {backend.StatusBadRequest, `user value "a\nb" contains a control character; limit must be between 1 and 10000, got -1`},
		"E": {backend.StatusBadRequest, "query field user must be a JSON array"},
	}
	for ref, w := range want {
		r, ok := resp.Responses[ref]
		if !ok {
			t.Errorf("no response for query %s", ref)
			continue
		}
		if r.Status != w.status || r.Error == nil || !strings.Contains(r.Error.Error(), w.msg) {
			t.Errorf("query %s: status %d error %v; want status %d and %q", ref, r.Status, r.Error, w.status, w.msg)
		}
	}
}

func TestQueryDataWithoutUserIsRefused(t *testing.T) {
	ctx := context.Background()
	i, err := plugin.NewDatasource(ctx, instance("http://127.0.0.1:9200", "", "", "http://127.0.0.1:9090", nil))
	if err != nil {
		t.Fatal(err)
	}
	ds := i.(*plugin.Datasource)
	defer ds.Dispose()
	resp, _ := ds.QueryData(ctx, &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A", JSON: []byte(`{"queryType":"jobs"}`)}}})
	if r := resp.Responses["A"]; r.Status != backend.StatusForbidden || !strings.Contains(r.Error.Error(), "no Grafana user") {
		t.Errorf("no user: status %d, error %v; want 403", r.Status, r.Error)
	}
}

func TestQueryDataWithBadSettingsNamesTheField(t *testing.T) {
	ctx := context.Background()
	i, err := plugin.NewDatasource(ctx, backend.DataSourceInstanceSettings{JSONData: []byte(`{"prometheusUrl":"http://p:9090"}`)})
	if err != nil {
		t.Fatal(err)
	}
	ds := i.(*plugin.Datasource)
	defer ds.Dispose()
	resp, err := ds.QueryData(ctx, &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A", JSON: []byte(`{"queryType":"jobs"}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Responses["A"]
	if r.Error == nil || !strings.Contains(r.Error.Error(), "elasticsearchUrl") {
		t.Errorf("got %v, want an error naming elasticsearchUrl", r.Error)
	}
}

// Example of what a user sees for a datasource pointed at nothing.
func ExampleDatasource_CheckHealth() {
	ctx := context.Background()
	i, _ := plugin.NewDatasource(ctx, backend.DataSourceInstanceSettings{JSONData: []byte(`{"elasticsearchUrl":"http://es:9200"}`)})
	res, _ := i.(*plugin.Datasource).CheckHealth(ctx, &backend.CheckHealthRequest{})
	fmt.Println(res.Status, res.Message)
	// Output: ERROR Invalid settings: setting prometheusUrl: is required (e.g. http://localhost:9090)
}

// pushSeries writes one Jobsight job sample to Prometheus by remote write,
// as an agent does, and waits until Prometheus lists it.
func pushSeries(t *testing.T, promURL string) {
	t.Helper()
	c, err := promremote.New(promremote.Config{URL: promURL + "/api/v1/write"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Write(context.Background(), []promremote.Series{{Name: "jobsight_job_cpu_usage_seconds_total",
		Labels:  []promremote.Label{{Name: "cluster", Value: "c"}, {Name: "job_id", Value: "1"}, {Name: "node", Value: "n1"}},
		Samples: []promremote.Sample{{TimestampMs: time.Now().UnixMilli(), Value: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, ok, _ := stack.PromQuery(context.Background(), promURL, "jobsight_job_cpu_usage_seconds_total"); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the pushed series is not queryable after 30 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
