package stack

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

func TestStartPrometheusWithRemoteWriteReceiver(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := StartPrometheus(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()

	var flags struct {
		Data map[string]string `json:"data"`
	}
	promGetJSON(t, p.URL+"/api/v1/status/flags", &flags)
	if flags.Data["web.enable-remote-write-receiver"] != "true" {
		t.Errorf("remote-write receiver flag is %q, want true", flags.Data["web.enable-remote-write-receiver"])
	}
	// The receiver answers (400 for an empty body, 404 if it were off).
	resp, err := http.Post(p.URL+"/api/v1/write", "application/x-protobuf", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		t.Errorf("POST /api/v1/write: 404, the receiver is off")
	}

	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if !p.Exited() {
		t.Error("Prometheus still runs after Stop")
	}
	if _, err := http.Get(p.URL + "/-/ready"); err == nil {
		t.Error("Prometheus still answers after Stop")
	}
}

// promGetJSON decodes the JSON answer of GET url into v.
func promGetJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// TestPrometheusRetention: a history longer than Prometheus' default 15
// days needs its retention raised, or the older part is deleted.
func TestPrometheusRetention(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := StartPrometheusWith(ctx, t.TempDir(), PrometheusOptions{Retention: 37 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	var flags struct {
		Data map[string]string `json:"data"`
	}
	promGetJSON(t, p.URL+"/api/v1/status/flags", &flags)
	if got := flags.Data["storage.tsdb.retention.time"]; got != "37d1h" {
		t.Errorf("retention %q, want 37d1h (37 days and the hour rounded up)", got)
	}
}
