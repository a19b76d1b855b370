package pluginhost

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// The host against the real executable, without stores: the handshake,
// the three services, what the plugin reads of the plugin context, and
// the caller's deadline reaching a query that waits on a store that does
// not answer. The stores' own tests are in test/grafana.

func startHost(t *testing.T) *Host {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return BuildAndStart(t, ctx)
}

// silentStore accepts connections and never answers: a store that hangs.
func silentStore(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(done)
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

func TestHost(t *testing.T) {
	h := startHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := Caller{User: &backend.User{Login: "admin", Name: "Admin", Email: "admin@example.org", Role: "Admin"}}

	t.Run("the plugin process's memory is read", func(t *testing.T) {
		rss, peak, err := h.Memory()
		if err != nil || rss <= 0 || peak < rss || h.Pid() == os.Getpid() {
			t.Errorf("pid %d: rss %d, peak %d, %v", h.Pid(), rss, peak, err)
		}
	})

	t.Run("health names the missing setting", func(t *testing.T) {
		ds := Datasource{ID: 1, UID: "js", Name: "Jobsight", JSONData: json.RawMessage(`{"prometheusUrl":"http://127.0.0.1:1"}`)}
		r, err := h.CheckHealth(ctx, ds, admin)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != backend.HealthStatusError || !strings.Contains(r.Message, "elasticsearchUrl") {
			t.Errorf("health without an Elasticsearch URL: %v %q", r.Status, r.Message)
		}
	})

	t.Run("secure JSON reaches the plugin decrypted", func(t *testing.T) {
		// A store that records the credentials it is sent: the password
		// comes from secure JSON only.
		var auth atomic.Value
		es := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, pw, _ := r.BasicAuth()
			auth.Store(pw)
			http.Error(w, `{"error":"no"}`, http.StatusUnauthorized)
		}))
		defer es.Close()
		ds := Datasource{ID: 2, UID: "js2", Name: "Jobsight", JSONData: json.RawMessage(`{"elasticsearchUrl":"` + es.URL + `","elasticsearchUser":"u","prometheusUrl":"http://127.0.0.1:1"}`),
			SecureJSONData: map[string]string{"elasticsearchPassword": "s3cret"}}
		r, err := h.CheckHealth(ctx, ds, admin)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := auth.Load().(string); got != "s3cret" {
			t.Errorf("the store got password %q", got)
		}
		if r.Status != backend.HealthStatusError || !strings.Contains(r.Message, "Elasticsearch") || strings.Contains(r.Message, "s3cret") {
			t.Errorf("health with a refused password: %v %q", r.Status, r.Message)
		}
		if strings.Contains(h.Log(), "s3cret") {
			t.Errorf("the plugin logged the password")
		}
	})

	t.Run("several queries, one bad, each answered alone", func(t *testing.T) {
		ds := Datasource{ID: 3, UID: "js3", Name: "Jobsight", JSONData: json.RawMessage(`{"elasticsearchUrl":"http://127.0.0.1:1","prometheusUrl":"http://127.0.0.1:1"}`)}
		now := time.Now()
		resp, err := h.QueryData(ctx, ds, admin,
			Query{RefID: "A", Model: map[string]any{"queryType": "nonsense"}, From: now.Add(-time.Hour), To: now},
			Query{RefID: "B", Model: map[string]any{"queryType": "jobTimeline"}, From: now.Add(-time.Hour), To: now},
		)
		if err != nil {
			t.Fatal(err)
		}
		if a := resp.Responses["A"]; a.Error == nil || !strings.Contains(a.Error.Error(), `"nonsense"`) {
			t.Errorf("A: %v", a.Error)
		}
		if b := resp.Responses["B"]; b.Error == nil || !strings.Contains(b.Error.Error(), "jobId") {
			t.Errorf("B: %v", b.Error)
		}
	})

	t.Run("no user and no FromAlert is refused", func(t *testing.T) {
		ds := Datasource{ID: 4, UID: "js4", Name: "Jobsight", JSONData: json.RawMessage(`{"elasticsearchUrl":"http://127.0.0.1:1","prometheusUrl":"http://127.0.0.1:1"}`)}
		now := time.Now()
		resp, err := h.QueryData(ctx, ds, Caller{}, Query{Model: map[string]any{"queryType": "jobs"}, From: now.Add(-time.Hour), To: now})
		if err != nil {
			t.Fatal(err)
		}
		if a := resp.Responses["A"]; a.Error == nil || !strings.Contains(a.Error.Error(), "no Grafana user") {
			t.Errorf("a query without a user: %v", a.Error)
		}
		r, err := h.CallResource(ctx, ds, Caller{}, "GET", "options?kind=users", nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusForbidden {
			t.Errorf("a resource call without a user: %d %s", r.Status, r.Body)
		}
	})

	t.Run("the caller's deadline reaches a query on a hanging store", func(t *testing.T) {
		hang := silentStore(t)
		ds := Datasource{ID: 5, UID: "js5", Name: "Jobsight", JSONData: json.RawMessage(`{"elasticsearchUrl":"` + hang + `","prometheusUrl":"` + hang + `","timeoutSeconds":120}`)}
		qctx, qcancel := context.WithTimeout(ctx, 2*time.Second)
		defer qcancel()
		now := time.Now()
		start := time.Now()
		resp, err := h.QueryData(qctx, ds, admin, Query{Model: map[string]any{"queryType": "jobs"}, From: now.Add(-time.Hour), To: now})
		took := time.Since(start)
		// Either the call itself ends with the deadline, or the plugin
		// answers the query with the context's error: never the store's
		// 120 s.
		if err == nil && resp.Responses["A"].Error == nil {
			t.Errorf("a query on a hanging store answered without an error")
		}
		if took > 30*time.Second {
			t.Errorf("the query ran %s past its caller's 2 s deadline", took)
		}
		if h.Exited() {
			t.Fatal("the plugin exited")
		}
		// The plugin still serves the next call.
		r, err := h.CheckHealth(ctx, Datasource{ID: 1, UID: "js", JSONData: json.RawMessage(`{}`)}, admin)
		if err != nil || r.Status != backend.HealthStatusError {
			t.Errorf("after the cancelled query: %v %v", r, err)
		}
	})
}
