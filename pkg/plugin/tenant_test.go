package plugin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/pkg/plugin"
)

// TestPrometheusTenantHeaderOnEveryRequest: with prometheusTenant set, every
// Prometheus request (the health check's and a query's) carries the tenant
// in prometheusTenantHeader (X-Scope-OrgID by default), besides the bearer
// token; without it, none carries a tenant header.
func TestPrometheusTenantHeaderOnEveryRequest(t *testing.T) {
	// A fake Prometheus that records headers: a real one ignores tenant
	// headers, so only a recorder shows they are sent. It answers what
	// Prometheus answers for these calls with no series stored.
	type seen struct{ path, tenant, thanos, auth string }
	var mu sync.Mutex
	var reqs []seen
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		reqs = append(reqs, seen{r.URL.Path, r.Header.Get("X-Scope-OrgID"), r.Header.Get("THANOS-TENANT"), r.Header.Get("Authorization")})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/status/buildinfo":
			_, _ = io.WriteString(w, `{"status":"success","data":{"version":"3.0.0"}}`)
		case "/api/v1/query_range":
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
		case "/api/v1/query":
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		default:
			_, _ = io.WriteString(w, `{"status":"success","data":[]}`)
		}
	}))
	defer prom.Close()

	run := func(jsonData map[string]any, secure map[string]string) []seen {
		t.Helper()
		mu.Lock()
		reqs = nil
		mu.Unlock()
		jsonData["elasticsearchUrl"] = deadURL(t)
		jsonData["prometheusUrl"] = prom.URL
		jd, _ := json.Marshal(jsonData)
		ctx := context.Background()
		i, err := plugin.NewDatasource(ctx, backend.DataSourceInstanceSettings{UID: "t", JSONData: jd, DecryptedSecureJSONData: secure})
		if err != nil {
			t.Fatal(err)
		}
		ds := i.(*plugin.Datasource)
		defer ds.Dispose()
		if _, err := ds.CheckHealth(ctx, &backend.CheckHealthRequest{}); err != nil {
			t.Fatal(err)
		}
		admin := backend.PluginContext{User: &backend.User{Login: "admin", Role: "Admin"}}
		now := time.Now()
		resp, err := ds.QueryData(ctx, &backend.QueryDataRequest{PluginContext: admin, Queries: []backend.DataQuery{{
			RefID: "A", QueryType: "clusterSeries", TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now},
			MaxDataPoints: 100, Interval: time.Minute,
			JSON: []byte(`{"queryType":"clusterSeries","series":"partition_pending_gpus"}`),
		}}})
		if err != nil {
			t.Fatal(err)
		}
		if r := resp.Responses["A"]; r.Error != nil {
			t.Fatalf("clusterSeries: %v", r.Error)
		}
		mu.Lock()
		defer mu.Unlock()
		return append([]seen(nil), reqs...)
	}

	check := func(name string, got []seen, tenant, thanos, auth string) {
		t.Helper()
		var query bool
		for _, r := range got {
			query = query || r.path == "/api/v1/query_range"
			if r.tenant != tenant || r.thanos != thanos || r.auth != auth {
				t.Errorf("%s: %s carried X-Scope-OrgID %q, THANOS-TENANT %q, Authorization %q; want %q, %q, %q",
					name, r.path, r.tenant, r.thanos, r.auth, tenant, thanos, auth)
			}
		}
		if len(got) < 2 || !query {
			t.Errorf("%s: requests %v; want the health check's and the query's", name, got)
		}
	}
	got := run(map[string]any{"prometheusTenant": "team-a"}, map[string]string{"prometheusBearerToken": "tok"})
	check("default header", got, "team-a", "", "Bearer tok")
	got = run(map[string]any{"prometheusTenant": "team-b", "prometheusTenantHeader": "THANOS-TENANT", "prometheusUser": "u"},
		map[string]string{"prometheusPassword": "pw"})
	check("own header", got, "", "team-b", "Basic dTpwdw==")
	got = run(map[string]any{}, nil)
	check("no tenant", got, "", "", "")
}
