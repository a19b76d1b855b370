package clusterstate

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestHandlerRequiresTheBearerToken: with a token, /constants and /metrics
// answer 401 to a request without it, with another one, or with it in the
// wrong scheme; /healthz stays open. Without a token (loopback) all answer.
func TestHandlerRequiresTheBearerToken(t *testing.T) {
	t.Parallel()
	c := &Collector{}
	consts := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"allocations":[]}`) })
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "jobsight_test_total", Help: "x"}))
	get := func(srv *httptest.Server, path, auth string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	secured := httptest.NewServer(c.Handler(consts, reg, "s3cret-token"))
	defer secured.Close()
	for _, path := range []string{"/constants", "/metrics"} {
		for _, auth := range []string{"", "Bearer wrong", "Basic czNjcmV0LXRva2Vu", "s3cret-token", "Bearer s3cret-token2", "Bearer s3cret-toke"} {
			if code, body := get(secured, path, auth); code != http.StatusUnauthorized || strings.Contains(body, "jobsight_test_total") || strings.Contains(body, "allocations") {
				t.Errorf("GET %s with %q: %d %q, want 401 and nothing served", path, auth, code, body)
			}
		}
	}
	if code, body := get(secured, "/constants", "Bearer s3cret-token"); code != 200 || !strings.Contains(body, "allocations") {
		t.Errorf("GET /constants with the token: %d %q", code, body)
	}
	if code, body := get(secured, "/metrics", "Bearer s3cret-token"); code != 200 || !strings.Contains(body, "jobsight_test_total") {
		t.Errorf("GET /metrics with the token: %d %q", code, body)
	}
	// /healthz: no poll yet, so 503, but not 401: it needs no token.
	if code, _ := get(secured, "/healthz", ""); code == http.StatusUnauthorized {
		t.Errorf("/healthz asks for the token")
	}
	open := httptest.NewServer(c.Handler(consts, reg, ""))
	defer open.Close()
	if code, _ := get(open, "/constants", ""); code != 200 {
		t.Errorf("no token configured: /constants answered %d", code)
	}
}
