package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/spool"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/test/stack"
)

// `jobsight-agent resend-rejected` moves what a store refused
// (spool.dir/rejected/) back into the spool and sends it: the admin's way
// back once the cause is fixed. Against the real Elasticsearch-API server.
func TestResendRejectedCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	es, err := stack.StartElasticsearch(ctx, t.TempDir())
	if err != nil {
		stack.Unavailable(t, "needs the Elasticsearch-API server (ZincSearch): %v", err)
	}
	t.Cleanup(func() { _ = es.Stop() })
	root := t.TempDir()
	pw := filepath.Join(root, "pw")
	if err := os.WriteFile(pw, []byte(es.Password), 0o600); err != nil {
		t.Fatal(err)
	}
	suffix := rand.Uint32()
	jobIndex := fmt.Sprintf("jobsight-test-resend-jobs-%d", suffix)
	spoolDir := filepath.Join(root, "spool")
	cfg := filepath.Join(root, "agent.yaml")
	conf := fmt.Sprintf(`
cluster: resend
spool:
  dir: %s
elasticsearch:
  urls: [%q]
  username: %q
  password_file: %s
  ca_file: %q
  job_index: %s
  node_index: jobsight-test-resend-nodes-%d
  result_index: jobsight-test-resend-results-%d
`, spoolDir, es.URL, es.User, pw, es.CACertFile, jobIndex, suffix, suffix)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}

	// A job document a store refused earlier, set aside in rejected/.
	sp, err := spool.Open(spoolDir, spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"doc_id":"resend:1","cluster":"resend","job_id":"1","state":"COMPLETED","final":true,"updated_at":"2026-01-02T03:04:05.000Z"}`
	if err := sp.EnqueueDoc("elasticsearch", store.Doc{Kind: store.KindJobDoc, Index: jobIndex, ID: "resend:1", Body: []byte(body)}); err != nil {
		t.Fatal(err)
	}
	items, _ := filepath.Glob(filepath.Join(spoolDir, "*.item"))
	if len(items) != 1 {
		t.Fatalf("spooled items: %v", items)
	}
	if err := os.MkdirAll(filepath.Join(spoolDir, "rejected"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(items[0], filepath.Join(spoolDir, "rejected", filepath.Base(items[0]))); err != nil {
		t.Fatal(err)
	}

	var stdout, stderr bytes.Buffer
	rc := run([]string{"resend-rejected", "--config", cfg}, &stdout, &stderr)
	if rc != 0 {
		t.Fatalf("resend-rejected: exit %d\nstdout: %s\nstderr: %s", rc, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "1 set-aside items moved back, 1 delivered, 0 set aside again, 0 waiting") {
		t.Errorf("report: %s", stdout.String())
	}
	if left, _ := filepath.Glob(filepath.Join(spoolDir, "rejected", "*")); len(left) != 0 {
		t.Errorf("rejected/ still holds %v", left)
	}
}
