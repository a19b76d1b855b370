package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/test/stack"
)

// The example queries of docs/elasticsearch-queries.md, run as written
// against the job index of the real server after jobs of known users,
// accounts, partitions and states ran on the test cluster. Only the
// example's placeholders are replaced: its user, and its dates (the
// files hold fixed dates so that they read as examples; these tests move
// them to the weeks and year the test jobs ran in).

const esExamples = "../../docs/examples/es"

// esExample reads an example body and replaces placeholders.
func esExample(t *testing.T, name string, repl map[string]string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(esExamples, name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for from, to := range repl {
		if !strings.Contains(s, from) {
			t.Fatalf("%s has no %q to replace: the example and its test disagree", name, from)
		}
		s = strings.ReplaceAll(s, from, to)
	}
	if !json.Valid([]byte(s)) {
		t.Fatalf("%s is not valid JSON", name)
	}
	return []byte(s)
}

// esSearch POSTs a body to <index>/_search the way the guide's curl does
// (basic auth, JSON) and decodes the answer.
func (e *env) esSearch(t *testing.T, index string, body []byte) map[string]any {
	t.Helper()
	client := http.DefaultClient
	if e.st.Elasticsearch.CACertFile != "" {
		pem, err := os.ReadFile(e.st.Elasticsearch.CACertFile)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(e.st.Elasticsearch.URL, "/")+"/"+index+"/_search?ignore_unavailable=true", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.st.Elasticsearch.User != "" {
		req.SetBasicAuth(e.st.Elasticsearch.User, e.st.Elasticsearch.Password)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("search %s: HTTP %d: %.500s", body, resp.StatusCode, raw)
	}
	var ans map[string]any
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatalf("search answer does not decode: %v\n%.500s", err, raw)
	}
	return ans
}

// dig walks a decoded JSON answer by keys.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// buckets returns the buckets of an aggregation under v.
func buckets(v any, name string) []map[string]any {
	var out []map[string]any
	list, _ := dig(v, name, "buckets").([]any)
	for _, b := range list {
		if m, ok := b.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// bucketKey returns a bucket's key as text (terms: the string; histogram:
// the epoch milliseconds).
func bucketKey(b map[string]any) string {
	switch k := b["key"].(type) {
	case string:
		return k
	case float64:
		return fmt.Sprintf("%.0f", k)
	}
	return fmt.Sprint(b["key"])
}

func TestElasticsearchExampleQueries(t *testing.T) {
	e := need(t)
	t.Parallel()
	// Jobs of known users, accounts, partitions and states.
	mine := e.submit(t, "-A", "physics", "-J", "es-example-mine", "--wrap", "sleep 2")
	gpu := e.submit(t, "-A", "physics", "--gres=gpu:2", "--mem=100M", "-J", "es-example-gpu", "--wrap", "sleep 4")
	failed := e.submit(t, "-A", "chemistry", "-p", "multi", "--mem=50M", "-J", "es-example-fail", "--wrap", "exit 3")
	theirs := e.submit(t, "--uid="+stack.TestUser, "--chdir=/tmp", "-A", "chemistry", "-J", "es-example-theirs", "--wrap", "sleep 2")
	jobs := map[string]string{}
	for _, id := range []string{mine, gpu, failed, theirs} {
		j := e.finalJob(t, e.docID(id), jobWait)
		jobs[id] = j.State
	}
	if jobs[failed] != "FAILED" {
		t.Fatalf("the failing job ended %s, want FAILED", jobs[failed])
	}
	now := time.Now().UTC()
	week := map[string]string{
		"2026-11-16T00:00:00Z": now.Add(-7 * 24 * time.Hour).Format(time.RFC3339),
		"2026-11-23T00:00:00Z": now.Add(time.Hour).Format(time.RFC3339),
	}
	yearStart := time.Date(now.Year(), 1, 1, 0, 0, 0, 0, time.UTC)
	year := map[string]string{
		"2026-01-01T00:00:00Z": yearStart.Format(time.RFC3339),
		"2027-01-01T00:00:00Z": yearStart.AddDate(1, 0, 0).Format(time.RFC3339),
	}

	t.Run("my jobs last week", func(t *testing.T) {
		repl := map[string]string{`"alice"`: `"` + stack.TestUser + `"`}
		for k, v := range week {
			repl[k] = v
		}
		body := esExample(t, "my-jobs-last-week.json", repl)
		var ids []string
		e.poll(t, 30*time.Second, "nobody's job in the answer", func(context.Context) bool {
			ans := e.esSearch(t, "jobsight-jobs,jobsight-jobs-*", body)
			hits, _ := dig(ans, "hits", "hits").([]any)
			ids = ids[:0]
			for _, h := range hits {
				src, _ := dig(h, "_source").(map[string]any)
				if u := src["user"]; u != stack.TestUser {
					t.Fatalf("my jobs (nobody) returned a job of %v", u)
				}
				ids = append(ids, fmt.Sprint(src["job_id"]))
			}
			return rowOf(ids, theirs) >= 0
		})
		if rowOf(ids, mine) >= 0 {
			t.Errorf("nobody's jobs include root's job %s", mine)
		}
	})

	t.Run("GPU-hours by account per month", func(t *testing.T) {
		raw, err := e.es.GetByIDs(context.Background(), jobmodel.SearchIndices(jobmodel.DefaultJobIndex), []string{e.docID(gpu)})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := dig(mustJSON(t, raw[e.docID(gpu)]), "analysis", "figures", "gpu_hours").(float64)
		if want <= 0 {
			t.Fatalf("the GPU job %s has no analysis.figures.gpu_hours: %s", gpu, raw[e.docID(gpu)])
		}
		month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		body := esExample(t, "gpu-hours-by-account-per-month.json", year)
		ans := e.esSearch(t, "jobsight-jobs,jobsight-jobs-*", body)
		var got float64
		found := false
		for _, acct := range buckets(dig(ans, "aggregations"), "by_account") {
			if bucketKey(acct) != "physics" {
				continue
			}
			for _, m := range buckets(acct, "by_month") {
				if bucketKey(m) == fmt.Sprint(month.UnixMilli()) {
					found = true
					got, _ = dig(m, "gpu_hours", "value").(float64)
				}
			}
		}
		if !found {
			t.Fatalf("no physics bucket for month %d (%s): %v", month.UnixMilli(), month, dig(ans, "aggregations"))
		}
		// The physics GPU-hours are the GPU job's (the other physics job
		// has no GPUs); no other test uses the account.
		if d := got - want; d > 1e-6 || d < -1e-6 {
			t.Errorf("physics GPU-hours this month %g, want %g (2 GPUs × the GPU job's elapsed time)", got, want)
		}
	})

	t.Run("failed jobs by partition", func(t *testing.T) {
		body := esExample(t, "failed-jobs-by-partition.json", week)
		ans := e.esSearch(t, "jobsight-jobs,jobsight-jobs-*", body)
		parts := map[string]map[string]any{}
		for _, b := range buckets(dig(ans, "aggregations"), "by_partition") {
			parts[bucketKey(b)] = b
		}
		multi := parts["multi"]
		if multi == nil {
			t.Fatalf("no failed jobs in partition multi: %v", dig(ans, "aggregations"))
		}
		if n, _ := multi["doc_count"].(float64); n < 1 {
			t.Errorf("partition multi: %v failed jobs", multi["doc_count"])
		}
		states := map[string]bool{}
		for _, b := range buckets(multi, "by_state") {
			states[bucketKey(b)] = true
		}
		users := map[string]bool{}
		for _, b := range buckets(multi, "by_user") {
			users[bucketKey(b)] = true
		}
		if !states["FAILED"] || !users["root"] {
			t.Errorf("partition multi: states %v, users %v; want FAILED of root", states, users)
		}
		// Completed jobs are not counted: the debug partition's jobs
		// here all completed.
		for p, b := range parts {
			for _, s := range buckets(b, "by_state") {
				if k := bucketKey(s); k == "COMPLETED" || k == "RUNNING" {
					t.Errorf("partition %s counts %s jobs as failed", p, k)
				}
			}
		}
	})
}

func mustJSON(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return v
}
