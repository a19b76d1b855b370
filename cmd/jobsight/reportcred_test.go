package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/test/stack"
)

// zincAPI calls ZincSearch's own API (users and roles, under /api) as its
// admin.
func zincAPI(t *testing.T, zinc *stack.ESServer, method, path string, body any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(method, strings.TrimSuffix(zinc.URL, "/es")+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(zinc.User, zinc.Password)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("zincsearch %s %s: %s: %s", method, path, res.Status, msg)
	}
}

// `jobsight report` reads with the report section's credential: on a real
// Elasticsearch-API server (ZincSearch, whose roles grant permissions per
// API) a user whose role may only search reads the report, while the
// elasticsearch section's password file does not exist; the same
// credential is refused a write.
func TestReportReadsWithItsReadOnlyCredential(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	zinc, err := stack.StartZinc(ctx, filepath.Join(dir, "zinc"))
	if err != nil {
		stack.Unavailable(t, "ZincSearch: %v", err)
	}
	defer zinc.Stop()
	const reader, readerPW = "jobsight-report", "report-Pw-1"
	zincAPI(t, zinc, http.MethodPost, "/api/role", map[string]any{"_id": "jobsight-report", "name": "jobsight-report", "permission": []string{"search.SearchDSL"}})
	zincAPI(t, zinc, http.MethodPost, "/api/user", map[string]any{"_id": reader, "name": reader, "password": readerPW, "role": "jobsight-report"})

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	admin, err := elasticsearch.New(elasticsearch.Config{URLs: []string{zinc.URL}, Username: zinc.User, Password: zinc.Password, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.EnsureIndex(ctx, "jobsight-jobs", jobmodel.JobMapping()); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-3 * time.Hour).UTC().Truncate(time.Second)
	job := jobmodel.Job{DocID: "zc:7", SchemaVersion: jobmodel.SchemaVersion, Cluster: "zc", JobID: "7", User: "someone",
		State: jobmodel.StateCompleted, StartTime: jobmodel.At(start), EndTime: jobmodel.At(start.Add(time.Hour)), Final: true,
		UpdatedAt: jobmodel.At(start.Add(time.Hour))}
	body, _ := json.Marshal(job)
	if f, err := admin.Bulk(ctx, []store.Doc{{Kind: store.KindJobDoc, Index: "jobsight-jobs", ID: job.DocID, Body: body}}); err != nil || len(f) > 0 {
		t.Fatalf("storing the job: %v %v", err, f)
	}

	pw := filepath.Join(dir, "report-password")
	if err := os.WriteFile(pw, []byte(readerPW+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "site.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`cluster: zc
elasticsearch:
  urls: [%q]
  username: %s
  password_file: %q
report:
  username: %s
  password_file: %q
state_dir: %q
`, zinc.URL, zinc.User, filepath.Join(dir, "absent-write-password"), reader, pw, filepath.Join(dir, "state"))), 0o600); err != nil {
		t.Fatal(err)
	}
	// Writes become searchable after about a second on ZincSearch.
	var out, errb bytes.Buffer
	code := -1
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		out.Reset()
		errb.Reset()
		if code = run([]string{"report", "--config", cfg, "--format", "json", "7"}, &out, &errb); code == 0 {
			break
		}
	}
	if code != 0 || !strings.Contains(out.String(), `"zc:7"`) {
		t.Fatalf("report with the read-only credential: exit %d\n%s\n%s", code, out.String(), errb.String())
	}

	// The report's credential cannot write: the store refuses it.
	ro, err := elasticsearch.New(elasticsearch.Config{URLs: []string{zinc.URL}, Username: reader, Password: readerPW, Logger: quiet, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ro.Bulk(ctx, []store.Doc{{Kind: store.KindJobDoc, Index: "jobsight-jobs", ID: job.DocID, Body: body}})
	var e *elasticsearch.Error
	if !errors.As(err, &e) || e.Status != http.StatusForbidden {
		t.Errorf("a write with the report's credential: %v, want a 403 refusal", err)
	}
	if err := ro.EnsureIndex(ctx, "jobsight-other", jobmodel.JobMapping()); err == nil {
		t.Errorf("the report's credential created an index")
	}
}
