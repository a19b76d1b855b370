package elasticsearch

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/test/stack"
)

// testES is the Elasticsearch-API server of this package's tests, started
// once by TestMain: ZincSearch, or the cluster named by JOBSIGHT_TEST_ES_URL.
// It is set once before any test runs and only read afterwards.
var testES *stack.ESServer

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "jobsight-es-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	testES, err = stack.StartElasticsearch(ctx, dir)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the Elasticsearch-API test server:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = testES.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needES skips t in -short mode, where no server is started.
func needES(t *testing.T) {
	t.Helper()
	if testES == nil {
		t.Skip("integration test: needs the Elasticsearch-API server (not started with -short)")
	}
}

// newTestClient returns a client for the test server, logging to t.
func newTestClient(t *testing.T) *Client {
	t.Helper()
	needES(t)
	c, err := New(Config{
		URLs:       []string{testES.URL},
		Username:   testES.User,
		Password:   testES.Password,
		CACertFile: testES.CACertFile,
		Timeout:    20 * time.Second,
		Logger:     slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// indexName returns an index name no other test (or earlier run against a
// shared cluster) uses.
func indexName(t *testing.T) string {
	var r [4]byte
	_, _ = rand.Read(r[:])
	return "jobsight-test-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")) + "-" + hex.EncodeToString(r[:])
}

const testMapping = `{"properties":{
	"cluster":{"type":"keyword"},
	"job_id":{"type":"keyword"},
	"cpu_seconds":{"type":"double"},
	"start":{"type":"date"}
}}`

// eventually polls cond until it holds or the deadline passes: servers make
// writes searchable after a refresh interval.
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true within 15 s (last error: %v)", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// fields decodes a stored source, for comparing the fields a test wrote
// (servers may add their own, e.g. @timestamp).
func fields(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("stored source %s: %v", raw, err)
	}
	return m
}

func TestEnsureIndexIsIdempotentAndExtendsMapping(t *testing.T) {
	c := newTestClient(t)
	ctx := context.Background()
	name := indexName(t)

	for i := range 2 {
		if err := c.EnsureIndex(ctx, name, []byte(testMapping)); err != nil {
			t.Fatalf("EnsureIndex #%d: %v", i+1, err)
		}
	}
	// A whole create-index body works as well.
	if err := c.EnsureIndex(ctx, name, []byte(`{"mappings":`+testMapping+`}`)); err != nil {
		t.Fatalf("EnsureIndex with a create-index body: %v", err)
	}

	// A newer agent adds a field.
	extended := strings.Replace(testMapping, `"start":{"type":"date"}`, `"start":{"type":"date"},"gpu_count":{"type":"long"}`, 1)
	if err := c.EnsureIndex(ctx, name, []byte(extended)); err != nil {
		t.Fatalf("EnsureIndex with an added field: %v", err)
	}
	props, err := c.getProperties(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"cluster", "job_id", "cpu_seconds", "start", "gpu_count"} {
		if _, ok := props[f]; !ok {
			t.Errorf("mapping of %s lacks field %q: %v", name, f, keys(props))
		}
	}
	var job fieldMapping
	_ = json.Unmarshal(props["job_id"], &job)
	if job.Type != "keyword" {
		t.Errorf("job_id has type %q, want keyword", job.Type)
	}
}

func keys(m map[string]json.RawMessage) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}

func TestEnsureIndexRejectsBadMapping(t *testing.T) {
	c, err := New(Config{URLs: []string{"http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	err = c.EnsureIndex(context.Background(), "jobs", []byte(`{"properties":`))
	if err == nil || !strings.Contains(err.Error(), `"jobs"`) {
		t.Fatalf("EnsureIndex with broken JSON: got %v, want an error naming the index", err)
	}
}

func TestIndexThenGetByIDs(t *testing.T) {
	c := newTestClient(t)
	ctx := context.Background()
	name := indexName(t)
	if err := c.EnsureIndex(ctx, name, []byte(testMapping)); err != nil {
		t.Fatal(err)
	}
	doc := store.Doc{Kind: store.KindJobDoc, Index: name, ID: "c1:42",
		Body: []byte(`{"cluster":"c1","job_id":"42","cpu_seconds":12.5,"start":"2026-01-02T03:04:05Z"}`)}
	if err := c.Index(ctx, doc); err != nil {
		t.Fatal(err)
	}
	// A second version under the same id replaces the first.
	doc.Body = []byte(`{"cluster":"c1","job_id":"42","cpu_seconds":99,"start":"2026-01-02T03:04:05Z"}`)
	if err := c.Index(ctx, doc); err != nil {
		t.Fatal(err)
	}
	var got map[string]json.RawMessage
	eventually(t, "the second version is searchable", func() (bool, error) {
		var err error
		got, err = c.GetByIDs(ctx, name, []string{"c1:42", "c1:absent"})
		return err == nil && len(got) == 1 && fields(t, got["c1:42"])["cpu_seconds"] == 99.0, err
	})
	f := fields(t, got["c1:42"])
	if f["cluster"] != "c1" || f["job_id"] != "42" || f["start"] != "2026-01-02T03:04:05Z" {
		t.Errorf("stored document %v, want the fields written", f)
	}

	// Exactly one document holds the id.
	raw, err := c.Search(ctx, name, []byte(`{"query":{"term":{"job_id":"42"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Hits struct {
			Hits []struct {
				ID string `json:"_id"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatal(err)
	}
	if len(answer.Hits.Hits) != 1 || answer.Hits.Hits[0].ID != "c1:42" {
		t.Errorf("term query job_id=42 found %+v, want exactly c1:42", answer.Hits.Hits)
	}
}

func TestBulkStoresAllGoodDocuments(t *testing.T) {
	c := newTestClient(t)
	ctx := context.Background()
	name := indexName(t)
	if err := c.EnsureIndex(ctx, name, []byte(testMapping)); err != nil {
		t.Fatal(err)
	}
	var docs []store.Doc
	var ids []string
	for i := range 50 {
		id := "c1:" + strconv.Itoa(1000+i)
		ids = append(ids, id)
		docs = append(docs, store.Doc{Kind: store.KindNodeDoc, Index: name, ID: id,
			Body: []byte(fmt.Sprintf("{\n \"cluster\": \"c1\",\n \"job_id\": \"%d\",\n \"cpu_seconds\": %d\n}", 1000+i, i))})
	}
	failures, err := c.Bulk(ctx, docs)
	if err != nil || len(failures) != 0 {
		t.Fatalf("Bulk: failures %v, err %v", failures, err)
	}
	eventually(t, "all 50 documents are searchable", func() (bool, error) {
		got, err := c.GetByIDs(ctx, name, ids)
		return len(got) == 50, err
	})
	got, _ := c.GetByIDs(ctx, name, ids)
	if f := fields(t, got["c1:1007"]); f["cpu_seconds"] != 7.0 || f["job_id"] != "1007" {
		t.Errorf("c1:1007 stored as %v", f)
	}
}

// TestBulkWithATypeConflict sends a document whose field contradicts the
// mapping between two good ones. Elasticsearch answers per item, so exactly
// that document must be reported. ZincSearch stops at the bad document and
// answers for fewer items; then all are reported (re-sending is harmless).
// Either way: the bad document is reported, and every document not reported
// was stored.
func TestBulkWithATypeConflict(t *testing.T) {
	c := newTestClient(t)
	ctx := context.Background()
	name := indexName(t)
	if err := c.EnsureIndex(ctx, name, []byte(testMapping)); err != nil {
		t.Fatal(err)
	}
	docs := []store.Doc{
		{Index: name, ID: "c1:1", Body: []byte(`{"job_id":"1","cpu_seconds":1}`)},
		{Index: name, ID: "c1:2", Body: []byte(`{"job_id":"2","cpu_seconds":"not a number"}`)},
		{Index: name, ID: "c1:3", Body: []byte(`{"job_id":"3","cpu_seconds":3}`)},
	}
	failures, err := c.Bulk(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failures: %v", failures)
	failed := map[string]*Error{}
	for _, f := range failures {
		failed[f.Doc.ID] = f.Err
		if !strings.Contains(f.Err.Error(), f.Doc.ID) || !strings.Contains(f.Err.Error(), name) {
			t.Errorf("error %q does not name the index and the id", f.Err)
		}
	}
	bad, ok := failed["c1:2"]
	if !ok {
		t.Fatalf("the document with the type conflict was not reported; failures %v", failures)
	}
	if testES.External && (len(failures) != 1 || bad.Retryable() || bad.Status != http.StatusBadRequest) {
		t.Errorf("Elasticsearch: want exactly c1:2 reported, with status 400 and not retryable; got %v", failures)
	}
	var stored []string
	for _, d := range docs {
		if _, ok := failed[d.ID]; !ok {
			stored = append(stored, d.ID)
		}
	}
	eventually(t, fmt.Sprintf("documents not reported %v are stored", stored), func() (bool, error) {
		got, err := c.GetByIDs(ctx, name, stored)
		return len(got) == len(stored), err
	})
}

// TestBulkPerItemFailuresFake checks the per-item reporting against the
// answer Elasticsearch 8 gives for a bulk where some items fail. The test
// server (ZincSearch) never answers that way, so this uses a FAKE server,
// only for this case: an httptest server replaying an Elasticsearch answer.
func TestBulkPerItemFailuresFake(t *testing.T) {
	var bulkBody []byte
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Elastic-Product", "Elasticsearch")
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/":
			io.WriteString(w, `{"cluster_name":"fake","version":{"number":"8.19.0"}}`)
		case "/_bulk":
			bulkBody, _ = io.ReadAll(r.Body)
			io.WriteString(w, `{"took":3,"errors":true,"items":[
{"index":{"_index":"jobs","_id":"c1:1","_version":1,"result":"created","status":201}},
{"index":{"_index":"jobs","_id":"c1:2","status":400,"error":{"type":"document_parsing_exception","reason":"[1:35] failed to parse field [cpu_seconds] of type [double] in document with id 'c1:2'","caused_by":{"type":"number_format_exception","reason":"For input string: \"x\""}}}},
{"index":{"_index":"jobs","_id":"c1:3","status":429,"error":{"type":"es_rejected_execution_exception","reason":"rejected execution of coordinating operation"}}},
{"index":{"_index":"jobs","_id":"c1:4","_version":1,"result":"created","status":201}}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer fake.Close()
	c, err := New(Config{URLs: []string{fake.URL}})
	if err != nil {
		t.Fatal(err)
	}
	docs := []store.Doc{
		{Index: "jobs", ID: "c1:1", Body: []byte(`{"cpu_seconds":1}`)},
		{Index: "jobs", ID: "c1:2", Body: []byte(`{"cpu_seconds":"x"}`)},
		{Index: "jobs", ID: "c1:3", Body: []byte(`{"cpu_seconds":3}`)},
		{Index: "jobs", ID: "c1:4", Body: []byte(`{"cpu_seconds":4}`)},
		{Index: "jobs", ID: "c1:5", Body: []byte(`{"cpu_seconds":`)}, // not JSON: never sent
	}
	failures, err := c.Bulk(context.Background(), docs)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(bulkBody, []byte("\n")); n != 8 {
		t.Errorf("bulk body has %d lines, want 8 (4 valid documents):\n%s", n, bulkBody)
	}
	var ids []string
	for _, f := range failures {
		ids = append(ids, f.Doc.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"c1:2", "c1:3", "c1:5"}) {
		t.Fatalf("failed ids %v, want [c1:2 c1:3 c1:5]", ids)
	}
	for _, f := range failures {
		switch f.Doc.ID {
		case "c1:2":
			if errors.Is(f.Err, ErrUnavailable) || !strings.Contains(f.Err.Error(), "failed to parse field [cpu_seconds]") {
				t.Errorf("c1:2: %v; want a permanent error with the server's reason", f.Err)
			}
		case "c1:3":
			if !errors.Is(f.Err, ErrUnavailable) {
				t.Errorf("c1:3 (429): %v; want retryable", f.Err)
			}
		case "c1:5":
			if errors.Is(f.Err, ErrUnavailable) || !strings.Contains(f.Err.Error(), "not valid JSON") {
				t.Errorf("c1:5: %v; want a permanent error saying the body is not JSON", f.Err)
			}
		}
	}
}

func TestServerDownIsRetryable(t *testing.T) {
	port, err := stack.FreePort() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	const password = "s3cret-Password-value"
	var logs bytes.Buffer
	c, err := New(Config{
		URLs:     []string{"http://127.0.0.1:" + strconv.Itoa(port)},
		Username: "agent", Password: password,
		Timeout: 5 * time.Second,
		Logger:  slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	doc := store.Doc{Index: "jobs", ID: "c1:7", Body: []byte(`{"job_id":"7"}`)}
	err = c.Index(ctx, doc)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Index with the server down: %v; want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error %q does not say the connection was refused", err)
	}
	_, err = c.Bulk(ctx, []store.Doc{doc})
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("Bulk with the server down: %v; want ErrUnavailable", err)
	}
	if err := c.EnsureIndex(ctx, "jobs", []byte(testMapping)); !errors.Is(err, ErrUnavailable) {
		t.Errorf("EnsureIndex with the server down: %v; want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), password) || strings.Contains(logs.String(), password) {
		t.Errorf("the password appears in an error or the log")
	}
}

func TestWrongPasswordIsPermanent(t *testing.T) {
	needES(t)
	if testES.User == "" {
		t.Skip("the test server has no authentication")
	}
	c, err := New(Config{URLs: []string{testES.URL}, Username: testES.User, Password: "wrong", CACertFile: testES.CACertFile})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Index(context.Background(), store.Doc{Index: indexName(t), ID: "x", Body: []byte(`{}`)})
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusUnauthorized || errors.Is(err, ErrUnavailable) {
		t.Fatalf("Index with a wrong password: %v; want a permanent 401 error", err)
	}
}

func TestInvalidDocumentsAreRejectedBeforeSending(t *testing.T) {
	c, err := New(Config{URLs: []string{"http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		doc  store.Doc
		want string
	}{
		{store.Doc{Index: "", ID: "a", Body: []byte(`{}`)}, "no index"},
		{store.Doc{Index: "jobs", ID: "", Body: []byte(`{}`)}, "no id"},
		{store.Doc{Index: "jobs", ID: "c1:9", Body: []byte(`{"a":`)}, `"c1:9"`},
	} {
		err := c.Index(context.Background(), tc.doc)
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrUnavailable) {
			t.Errorf("Index(%+v): %v; want a permanent error containing %q", tc.doc, err, tc.want)
		}
	}
}

func TestNewValidatesConfig(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New with no URLs: no error")
	}
	if _, err := New(Config{URLs: []string{"es:9200"}}); err == nil || !strings.Contains(err.Error(), "es:9200") {
		t.Errorf("New with a URL without scheme: %v", err)
	}
	if _, err := New(Config{URLs: []string{"http://es:9200"}, CACertFile: "/nonexistent/ca.pem"}); err == nil {
		t.Error("New with a missing CA file: no error")
	}
}

// A server that is not Elasticsearch (no X-Elastic-Product header, as
// OpenSearch and Elasticsearch before 7.14 answer) is refused with an
// error that says so, and is not taken for an outage to retry forever.
func TestUnsupportedServerIsAClearPermanentError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"n","cluster_name":"c","version":{"distribution":"opensearch","number":"2.11.0"},"tagline":"The OpenSearch Project"}`))
	}))
	defer srv.Close()
	c, err := New(Config{URLs: []string{srv.URL}, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	err = c.EnsureIndex(context.Background(), "jobsight-jobs", []byte(`{"properties":{}}`))
	if !errors.Is(err, ErrUnsupportedServer) || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "OpenSearch") {
		t.Errorf("error %v: want ErrUnsupportedServer, not retryable, naming OpenSearch", err)
	}
}

// TestBulkExternalVersionsFake: versioned writes carry the version, and a
// version the server refuses as not newer than the stored one is
// superseded, not a failure. ZincSearch ignores external versions, so the
// Elasticsearch side runs on a FAKE server, only for this case: an
// httptest server keeping one version per id the way Elasticsearch 8 does
// (version_type external: the write wins only with a greater version).
func TestBulkExternalVersionsFake(t *testing.T) {
	stored := map[string]int64{}
	var actions []string
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Elastic-Product", "Elasticsearch")
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/" {
			io.WriteString(w, `{"cluster_name":"fake","version":{"number":"8.19.0"}}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		lines := bytes.Split(bytes.TrimSpace(body), []byte("\n"))
		var items []string
		for i := 0; i+1 < len(lines); i += 2 {
			actions = append(actions, string(lines[i]))
			var a struct {
				Index struct {
					ID          string `json:"_id"`
					Version     int64  `json:"version"`
					VersionType string `json:"version_type"`
				} `json:"index"`
			}
			_ = json.Unmarshal(lines[i], &a)
			id, v := a.Index.ID, a.Index.Version
			if a.Index.VersionType == "external" && v <= stored[id] {
				items = append(items, fmt.Sprintf(`{"index":{"_index":"jobs","_id":%q,"status":409,"error":{"type":"version_conflict_engine_exception","reason":"[%s]: version conflict, current version [%d] is higher or equal to the one provided [%d]"}}}`, id, id, stored[id], v))
				continue
			}
			stored[id] = v
			items = append(items, fmt.Sprintf(`{"index":{"_index":"jobs","_id":%q,"_version":%d,"result":"updated","status":200}}`, id, v))
		}
		fmt.Fprintf(w, `{"took":1,"errors":false,"items":[%s]}`, strings.Join(items, ","))
	}))
	defer fake.Close()
	c, err := New(Config{URLs: []string{fake.URL}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	newer := store.Doc{Index: "jobs", ID: "c1:1", Body: []byte(`{"final":true}`), Version: 2_000_000}
	older := store.Doc{Index: "jobs", ID: "c1:1", Body: []byte(`{"final":false}`), Version: 1_000_000}
	if c.HonoursVersions() {
		t.Fatal("HonoursVersions before any versioned write")
	}
	for _, d := range []store.Doc{newer, older, newer} {
		failures, err := c.Bulk(ctx, []store.Doc{d})
		if err != nil || len(failures) > 0 {
			t.Fatalf("version %d: %v %v; a superseded version is not a failure", d.Version, err, failures)
		}
	}
	if stored["c1:1"] != 2_000_000 {
		t.Errorf("stored version %d, want the newer one", stored["c1:1"])
	}
	if !c.HonoursVersions() {
		t.Error("the server honoured the versions, HonoursVersions says no")
	}
	if !strings.Contains(actions[0], `"version":2000000`) || !strings.Contains(actions[0], `"version_type":"external"`) {
		t.Errorf("action line %s carries no external version", actions[0])
	}
	// Unversioned documents (feedback, cluster state) are sent as before.
	if _, err := c.Bulk(ctx, []store.Doc{{Index: "jobs", ID: "c1:2", Body: []byte(`{}`)}}); err != nil || strings.Contains(actions[len(actions)-1], "version") {
		t.Errorf("unversioned write: %v, action %s", err, actions[len(actions)-1])
	}
}

// TestZincIgnoresExternalVersions pins what the docs say of the test
// server: it takes versioned writes but does not honour them, and the
// client notices (so the agent keeps checking replays itself).
func TestZincIgnoresExternalVersions(t *testing.T) {
	needES(t)
	if os.Getenv(stack.EnvTestESURL) != "" {
		t.Skip("a real Elasticsearch honours versions: covered by TestBulkExternalVersionsFake's semantics")
	}
	c := newTestClient(t)
	idx := indexName(t)
	failures, err := c.Bulk(context.Background(), []store.Doc{{Index: idx, ID: "v:1", Body: []byte(`{"a":1}`), Version: 5_000_000}})
	if err != nil || len(failures) > 0 {
		t.Fatalf("versioned write: %v %v", err, failures)
	}
	if c.HonoursVersions() {
		t.Error("ZincSearch answered as if it honoured external versions: update docs/agent-config.md and this test")
	}
}
