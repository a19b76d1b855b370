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

// `jobsight check-stores` and `jobsight cluster-state --check-stores`
// against the real ZincSearch and Prometheus: after `jobsight setup`, the
// site command's calls pass with the administrator; a report credential
// whose ZincSearch role may not search is named as lacking `read` on the
// job indices (exit 1); the collector's calls pass and its sample is
// written.
func TestCheckStoresCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	es, err := stack.StartZinc(ctx, filepath.Join(dir, "zinc"))
	if err != nil {
		stack.Unavailable(t, "ZincSearch: %v", err)
	}
	defer es.Stop()
	prom, err := stack.StartPrometheus(ctx, filepath.Join(dir, "prom"))
	if err != nil {
		stack.Unavailable(t, "Prometheus: %v", err)
	}
	defer prom.Stop()
	secret := func(name, v string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	adminPW := secret("admin-pw", es.Password)
	reader, err := es.ZincUser("jobsight-nosearch", "nosearch-Pw-1", []string{"index.Exists"})
	if err != nil {
		t.Fatal(err)
	}
	site := secret("site.yaml", fmt.Sprintf(`cluster: zc
elasticsearch:
  urls: [%q]
  username: %s
  password_file: %q
report:
  username: %s
  password_file: %q
prometheus:
  url: %s
state_dir: %q
`, es.URL, es.User, adminPW, reader, secret("report-pw", "nosearch-Pw-1"), prom.URL, filepath.Join(dir, "state")))

	var out, errb bytes.Buffer
	if code := run([]string{"setup", "--config", site}, &out, &errb); code != 0 {
		t.Fatalf("setup: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	code := run([]string{"check-stores", "--config", site}, &out, &errb)
	t.Logf("jobsight check-stores printed:\n%s%s", out.String(), errb.String())
	if code != 1 {
		t.Errorf("exit %d, want 1 (the report credential may not search)", code)
	}
	want := "MISSING  elasticsearch [report credential] search (POST /jobsight-jobs,jobsight-jobs-*/_search): missing index privilege read on jobsight-jobs, jobsight-jobs-* (role jobsight_report in docs/indices.md"
	if !strings.Contains(out.String(), want) {
		t.Errorf("the output lacks %q", want)
	}
	if !strings.Contains(out.String(), "ok       prometheus query") {
		t.Errorf("the Prometheus query line is not ok")
	}
	// Every other line is ok: the site's own credential has every call.
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasPrefix(l, "MISSING") && !strings.Contains(l, "[report credential]") {
			t.Errorf("the site credential fails: %s", l)
		}
	}
	if strings.Contains(out.String(), es.Password) || strings.Contains(out.String(), "nosearch-Pw-1") {
		t.Errorf("the output shows a password")
	}

	collector := secret("cluster-state.yaml", fmt.Sprintf(`cluster: zc
spool:
  dir: %q
prometheus:
  remote_write_url: %s/api/v1/write
elasticsearch:
  urls: [%q]
  username: %s
  password_file: %q
  lost_after: 0s
`, filepath.Join(dir, "cs-spool"), prom.URL, es.URL, es.User, adminPW))
	out.Reset()
	errb.Reset()
	code = run([]string{"cluster-state", "--config", collector, "--check-stores"}, &out, &errb)
	t.Logf("jobsight cluster-state --check-stores printed:\n%s%s", out.String(), errb.String())
	if code != 0 || !strings.Contains(out.String(), "store check: ok") {
		t.Errorf("the collector's check: exit %d, want 0", code)
	}
	for _, w := range []string{"ok       elasticsearch index doc (PUT /jobsight-cluster-state/_doc/jobsight-check-",
		"skipped  elasticsearch delete index (DELETE /jobsight-jobs-1970.01): not made by this configuration: elasticsearch.retention_months is 0",
		"ok       prometheus remote write (POST " + prom.URL + "/api/v1/write): wrote one sample of jobsight_store_check_timestamp_seconds{component=\"collector\"}"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the output lacks %q", w)
		}
	}
}
