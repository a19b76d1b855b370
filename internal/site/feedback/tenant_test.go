package feedback

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// The site command's queries (report charts) carry the configured tenant:
// a FAKE Prometheus (labelled: a real one ignores the header) records the
// headers of what it is asked.
func TestSeriesQueriesCarryTheTenant(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("X-Tenant"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
	}))
	defer srv.Close()
	s, err := NewSeries(PrometheusQuery{URL: srv.URL, Timeout: 5 * time.Second, Tenant: "team-a", TenantHeader: "X-Tenant"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, _, err := s.api.QueryRange(ctx, "up", promv1.Range{Start: time.Now().Add(-time.Hour), End: time.Now(), Step: time.Minute}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0] != "team-a" {
		t.Errorf("tenant headers sent: %q, want team-a", got)
	}
}
