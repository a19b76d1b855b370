package clusterstate

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fakeIndexServer is a FAKE Elasticsearch: it answers the info request,
// the listing of indices by pattern (GET <pattern>/_settings/...) and the
// deletion of one index, as Elasticsearch 8 does. The test server
// (ZincSearch) has neither an index listing by pattern nor DELETE <index>
// on its Elasticsearch API, so retention cannot run against it. Every
// other request is recorded as unexpected.
type fakeIndexServer struct {
	mu         sync.Mutex
	indices    map[string]bool
	deleted    []string
	unexpected []string
}

func (f *fakeIndexServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("X-Elastic-Product", "Elasticsearch")
	w.Header().Set("Content-Type", "application/json")
	path := strings.TrimPrefix(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodGet && path == "":
		_, _ = io.WriteString(w, `{"cluster_name":"fake","version":{"number":"8.19.0","build_flavor":"default"},"tagline":"You Know, for Search"}`)
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/_settings/index.creation_date"):
		pattern := strings.TrimSuffix(path, "/_settings/index.creation_date")
		prefix, wild := strings.CutSuffix(pattern, "*")
		if !wild || r.URL.Query().Get("ignore_unavailable") != "true" {
			f.unexpected = append(f.unexpected, r.Method+" "+r.URL.String())
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		out := map[string]any{}
		for name := range f.indices {
			if strings.HasPrefix(name, prefix) {
				out[name] = map[string]any{"settings": map[string]any{"index": map[string]any{"creation_date": "1"}}}
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	case r.Method == http.MethodDelete && !strings.ContainsAny(path, "/,*"):
		if !f.indices[path] {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":{"type":"index_not_found_exception","reason":"no such index"},"status":404}`)
			return
		}
		delete(f.indices, path)
		f.deleted = append(f.deleted, path)
		_, _ = io.WriteString(w, `{"acknowledged":true}`)
	default:
		f.unexpected = append(f.unexpected, r.Method+" "+r.URL.String())
		w.WriteHeader(http.StatusBadRequest)
	}
}

// Retention deletes exactly the monthly job, node and result indices older
// than retention_months, and nothing else: not the current or the last
// month, not the pre-0.2 single indices, not an index that merely starts
// with a base, not the cluster-state index; and it runs once a day.
func TestRetentionDeletesExactlyTheExpiredMonths(t *testing.T) {
	all := []string{
		"jobsight-jobs", "jobsight-nodes", "jobsight-results", "jobsight-cluster-state",
		"jobsight-jobs-2025.01", "jobsight-jobs-2026.02", "jobsight-jobs-2026.03", "jobsight-jobs-2027.02", "jobsight-jobs-2027.03",
		"jobsight-nodes-2026.01", "jobsight-nodes-2027.03",
		"jobsight-results-2024.12", "jobsight-results-2026.06",
		"jobsight-jobs-archive", "jobsight-jobs-2020.01-restored", "jobsight-jobs-2020.13", "jobsight-jobs-gpu-2020.01",
		"jobsight-jobsx-2020.01", "other-2020.01",
	}
	fake := &fakeIndexServer{indices: map[string]bool{}}
	for _, n := range all {
		fake.indices[n] = true
	}
	srv := httptest.NewServer(fake)
	defer srv.Close()

	now := time.Date(2027, 3, 15, 12, 0, 0, 0, time.UTC)
	cfg := DefaultConfig()
	cfg.Cluster = "csclu"
	cfg.Elasticsearch.URLs = []string{srv.URL}
	cfg.Elasticsearch.RetentionMonths = 12
	cfg.Spool.Dir = filepath.Join(t.TempDir(), "spool")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := New(cfg, Options{Source: &fixtureSource{t: t}, Registerer: prometheus.NewRegistry(), Logger: quiet, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	c.checkRetention(context.Background(), now)
	want := []string{"jobsight-jobs-2025.01", "jobsight-jobs-2026.02", "jobsight-nodes-2026.01", "jobsight-results-2024.12"}
	fake.mu.Lock()
	got := slices.Clone(fake.deleted)
	unexpected := slices.Clone(fake.unexpected)
	fake.mu.Unlock()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("deleted %v, want %v", got, want)
	}
	if len(unexpected) > 0 {
		t.Errorf("unexpected requests: %v", unexpected)
	}

	// Within the day nothing is asked again; a day later it runs again
	// (and finds nothing more to delete at the same month).
	fake.mu.Lock()
	fake.indices["jobsight-jobs-2020.05"] = true
	fake.mu.Unlock()
	c.checkRetention(context.Background(), now.Add(time.Hour))
	fake.mu.Lock()
	n := len(fake.deleted)
	fake.mu.Unlock()
	if n != len(want) {
		t.Errorf("retention ran again within the day")
	}
	c.checkRetention(context.Background(), now.Add(25*time.Hour))
	fake.mu.Lock()
	last := fake.deleted[len(fake.deleted)-1]
	fake.mu.Unlock()
	if last != "jobsight-jobs-2020.05" {
		t.Errorf("a day later, retention did not run: last deleted %s", last)
	}

	// retention_months 0 keeps everything: not even a listing.
	cfg.Elasticsearch.RetentionMonths = 0
	c0, err := New(cfg, Options{Source: &fixtureSource{t: t}, Registerer: prometheus.NewRegistry(), Logger: quiet, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if del, err := c0.ApplyRetention(context.Background(), now.AddDate(10, 0, 0)); err != nil || len(del) > 0 {
		t.Errorf("retention 0 deleted %v (%v)", del, err)
	}
}

func TestRetentionConfig(t *testing.T) {
	for _, tc := range []struct {
		months int
		ok     bool
	}{{0, true}, {1, true}, {24, true}, {-1, false}, {MaxRetentionMonths + 1, false}} {
		cfg := DefaultConfig()
		cfg.Cluster = "c"
		cfg.Elasticsearch.RetentionMonths = tc.months
		err := cfg.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("retention_months %d: %v", tc.months, err)
		}
		if err != nil && !strings.Contains(err.Error(), "elasticsearch.retention_months") {
			t.Errorf("the error does not name the option: %v", err)
		}
	}
	cfg := DefaultConfig()
	cfg.Cluster = "c"
	cfg.Elasticsearch.NodeIndex = "jobsight-jobs-nodes"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "jobsight-jobs-*") {
		t.Errorf("a node index inside the job pattern: %v", err)
	}
}
