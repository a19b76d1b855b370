package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/test/stack"
)

// `jobsight-agent check-stores --config F`, as the README's install
// steps run it: against the real ZincSearch and Prometheus with the
// store's administrator, every call is ok and it exits 0; with both
// stores down, it names each unreachable URL and exits 1.
func TestCheckStoresCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	es, err := stack.StartElasticsearch(ctx, filepath.Join(t.TempDir(), "es"))
	if err != nil {
		stack.Unavailable(t, "needs the Elasticsearch-API server (ZincSearch): %v", err)
	}
	t.Cleanup(func() { _ = es.Stop() })
	prom, err := stack.StartPrometheus(ctx, filepath.Join(t.TempDir(), "prom"))
	if err != nil {
		stack.Unavailable(t, "needs Prometheus: %v", err)
	}
	t.Cleanup(func() { _ = prom.Stop() })
	root := t.TempDir()
	pw := filepath.Join(root, "pw")
	if err := os.WriteFile(pw, []byte(es.Password), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := func(esURL, promURL string) string {
		p := filepath.Join(root, fmt.Sprintf("agent-%d.yaml", time.Now().UnixNano()))
		if err := os.WriteFile(p, []byte(fmt.Sprintf(`
cluster: chk
node: cn1
spool:
  dir: %s
elasticsearch:
  urls: [%q]
  username: %q
  password_file: %s
  job_index: jobsight-test-chk-jobs
  node_index: jobsight-test-chk-nodes
  result_index: jobsight-test-chk-results
prometheus:
  remote_write_url: %s/api/v1/write
`, filepath.Join(root, "spool"), esURL, es.User, pw, promURL)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	var out, errb bytes.Buffer
	code := run([]string{"check-stores", "--config", conf(es.URL, prom.URL)}, &out, &errb)
	t.Logf("check-stores printed:\n%s%s", out.String(), errb.String())
	if code != 0 || !strings.Contains(out.String(), "store check: ok") {
		t.Errorf("as the administrator: exit %d, want 0 and \"store check: ok\"", code)
	}
	if strings.Contains(out.String()+errb.String(), es.Password) {
		t.Errorf("the output shows the password")
	}
	for _, want := range []string{"ok       elasticsearch bulk (POST /_bulk): wrote the empty document jobsight-check-cn1",
		"ok       prometheus remote write (POST " + prom.URL + "/api/v1/write)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q", want)
		}
	}

	port, _ := stack.FreePort()
	down := fmt.Sprintf("http://127.0.0.1:%d", port)
	out.Reset()
	errb.Reset()
	code = run([]string{"check-stores", "--config", conf(down, down)}, &out, &errb)
	t.Logf("check-stores printed:\n%s%s", out.String(), errb.String())
	if code != 1 {
		t.Errorf("with the stores down: exit %d, want 1", code)
	}
	for _, want := range []string{"MISSING  elasticsearch info (GET /): unreachable: " + down + ": connection refused",
		"MISSING  prometheus remote write (POST " + down + "/api/v1/write): unreachable: " + down + "/api/v1/write: connection refused",
		"store check: 2 of 2 calls failed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q", want)
		}
	}
}
