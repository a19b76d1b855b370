package deliver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/spool"
)

// Failure modes of failingProxy.
const (
	passThrough  = ""
	request400   = "request400"   // every request but the info: a whole-request 400, index_closed_exception
	item400      = "item400"      // _bulk: each item 400 index_closed_exception; _search: 400
	mappingError = "mappingError" // _bulk holding badID: that item 400 mapper_parsing_exception
)

// failingProxy sits in front of the real Elasticsearch-API server and,
// while its mode says so, answers as a failing one does: a LABELLED FAKE
// of failures the real server cannot be made to produce on demand (an
// index that cannot be opened, a closed index, a mapping refusal). In
// mode passThrough, and for what a mode does not cover, the real server
// answers. It records the body of every _bulk request.
type failingProxy struct {
	mu    sync.Mutex
	mode  string
	badID string
	bulks []string
	next  http.Handler
}

func newFailingProxy(t *testing.T, target string) (*failingProxy, *httptest.Server) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &failingProxy{next: httputil.NewSingleHostReverseProxy(u)}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv
}

func (p *failingProxy) set(mode string) {
	p.mu.Lock()
	p.mode = mode
	p.mu.Unlock()
}

func (p *failingProxy) recorded() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.bulks...)
}

func (p *failingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	bulk, search := strings.HasSuffix(r.URL.Path, "/_bulk"), strings.HasSuffix(r.URL.Path, "/_search")
	p.mu.Lock()
	mode, badID := p.mode, p.badID
	if bulk {
		p.bulks = append(p.bulks, string(body))
	}
	p.mu.Unlock()
	closed := `{"error":{"type":"index_closed_exception","reason":"closed"},"status":400}`
	answer := func(status int, s string) {
		w.Header().Set("X-Elastic-Product", "Elasticsearch")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, s)
	}
	items := func(item func(id string) string) {
		var out []string
		lines := strings.Split(strings.TrimSpace(string(body)), "\n")
		for i := 0; i+1 < len(lines); i += 2 {
			var meta map[string]struct {
				ID string `json:"_id"`
			}
			_ = json.Unmarshal([]byte(lines[i]), &meta)
			for _, a := range meta {
				out = append(out, item(a.ID))
			}
		}
		answer(http.StatusOK, `{"took":1,"errors":true,"items":[`+strings.Join(out, ",")+`]}`)
	}
	switch {
	case mode == request400 && r.URL.Path != "/" && r.URL.Path != "":
		answer(http.StatusBadRequest, closed)
	case mode == item400 && search:
		answer(http.StatusBadRequest, closed)
	case mode == item400 && bulk:
		items(func(id string) string {
			return fmt.Sprintf(`{"index":{"_id":%q,"status":400,"error":{"type":"index_closed_exception","reason":"closed"}}}`, id)
		})
	case mode == mappingError && bulk && bytes.Contains(body, []byte(badID)):
		items(func(id string) string {
			if id != badID {
				return fmt.Sprintf(`{"index":{"_id":%q,"status":503,"error":{"type":"unavailable_shards_exception","reason":"not tried"}}}`, id)
			}
			return fmt.Sprintf(`{"index":{"_id":%q,"status":400,"error":{"type":"mapper_parsing_exception","reason":"failed to parse field [cpu] of type [object]"}}}`, id)
		})
	default:
		p.next.ServeHTTP(w, r)
	}
}

func rejectedFiles(t *testing.T, spoolDir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(spoolDir, "rejected", "*"))
	return files
}

// A 400 that is not the document's fault — for the whole request, or for
// the index (closed, or unopenable as seen on the local stack), and a
// search that fails while a document's id is resolved — sets nothing
// aside: everything waits in the spool, the health series say how many
// items wait and why, and everything arrives once the server is well.
func TestIndexLevelFailureKeepsEverythingInTheSpool(t *testing.T) {
	st := need(t)
	proxy, srv := newFailingProxy(t, st.Elasticsearch.URL)
	spoolDir := t.TempDir()
	cfg := testConfig(t, srv.URL, st.Prometheus.URL, spoolDir)
	o := newOutputs(t, cfg)
	ctx := context.Background()
	if err := o.EnsureIndices(ctx); err != nil {
		t.Fatal(err)
	}

	proxy.set(request400)
	cluster := testCluster("idx400")
	job, node := sampleJob(cluster, 21, time.Now().Add(-time.Hour))
	if err := o.PutNode(ctx, node); !errors.Is(err, spool.ErrSpooled) {
		t.Fatalf("PutNode: %v, want it spooled", err)
	}
	if err := o.PutJob(ctx, job); !errors.Is(err, spool.ErrSpooled) {
		t.Fatalf("PutJob: %v, want it spooled", err)
	}
	for _, mode := range []string{request400, item400} {
		proxy.set(mode)
		o.Replay(ctx)
		if files := rejectedFiles(t, spoolDir); len(files) != 0 {
			t.Fatalf("%s: set aside in rejected/: %v", mode, files)
		}
		if n := o.Pending(); n != 2 {
			t.Errorf("%s: %d items wait in the spool, want 2", mode, n)
		}
		if g := gauge(o.health.SpoolWaiting.WithLabelValues("elasticsearch", "store_error")); g != 2 {
			t.Errorf("%s: jobsight_agent_spool_waiting_items{sink=elasticsearch,reason=store_error} = %v, want 2", mode, g)
		}
	}

	proxy.set(passThrough)
	o.Replay(ctx)
	if n := o.Pending(); n != 0 {
		t.Errorf("%d items still wait after the server recovered", n)
	}
	if got := getJob(t, o, job.DocID); !got.Final || got.DocID != job.DocID {
		t.Errorf("job document after recovery: %+v", got)
	}
	if g := gauge(o.health.SpoolWaiting.WithLabelValues("elasticsearch", "store_error")); g != 0 {
		t.Errorf("waiting items after recovery: %v", g)
	}
}

// A document-level error (the server's mapping refusal for that item) sets
// aside that item only; the others are delivered. Once the cause is fixed,
// ResendRejected (jobsight-agent resend-rejected) sends it.
func TestDocumentLevelErrorSetsAsideOnlyThatItemUntilResent(t *testing.T) {
	st := need(t)
	proxy, srv := newFailingProxy(t, st.Elasticsearch.URL)
	spoolDir := t.TempDir()
	o := newOutputs(t, testConfig(t, srv.URL, st.Prometheus.URL, spoolDir))
	ctx := context.Background()
	cluster := testCluster("mapping")
	var jobs []jobmodel.Job
	for id := uint64(1); id <= 3; id++ {
		job, _ := sampleJob(cluster, id, time.Now().Add(-time.Hour))
		jobs = append(jobs, job)
	}
	proxy.mu.Lock()
	proxy.mode, proxy.badID = mappingError, jobs[1].DocID
	proxy.mu.Unlock()
	// The store is briefly down while all three are written: all spooled.
	proxy.set(request400)
	for _, j := range jobs {
		if err := o.PutJob(ctx, j); !errors.Is(err, spool.ErrSpooled) {
			t.Fatalf("PutJob %s: %v", j.DocID, err)
		}
	}
	proxy.set(mappingError)
	o.Replay(ctx)
	files := rejectedFiles(t, spoolDir)
	if len(files) != 1 {
		t.Fatalf("rejected/ holds %d files, want the one refused document", len(files))
	}
	if n := o.Pending(); n != 0 {
		t.Errorf("%d items still wait", n)
	}
	getJob(t, o, jobs[0].DocID)
	getJob(t, o, jobs[2].DocID)
	if g := gauge(o.health.SpoolSetAsideItems.WithLabelValues("rejected")); g != 1 {
		t.Errorf("jobsight_agent_spool_set_aside_items{reason=rejected} = %v, want 1", g)
	}

	// Still refused: resending sets it aside again.
	r, err := o.ResendRejected(ctx)
	if err != nil || r.Restored != 1 || r.SetAside != 1 || r.Delivered != 0 {
		t.Errorf("resend while still refused: %+v, %v", r, err)
	}
	proxy.set(passThrough) // the mapping is fixed
	r, err = o.ResendRejected(ctx)
	if err != nil || r.Restored != 1 || r.Delivered != 1 || r.SetAside != 0 || r.Waiting != 0 {
		t.Errorf("resend after the fix: %+v, %v", r, err)
	}
	if got := getJob(t, o, jobs[1].DocID); got.DocID != jobs[1].DocID {
		t.Errorf("resent document: %+v", got)
	}
	if files := rejectedFiles(t, spoolDir); len(files) != 0 {
		t.Errorf("rejected/ still holds %v", files)
	}
	if _, err := os.Stat(spoolDir); err != nil {
		t.Fatal(err)
	}
}

// A fresh agent in front of the real server: with nothing stored, its
// job's first write is a create; once something is stored, the next fresh
// agent asks (a search with versions) and knows before its first write
// whether the server honours versions — ZincSearch does not (its hits
// carry no _version), so that write is a versioned index after the id
// check; a real Elasticsearch does, so it is a create.
func TestFreshAgentAsksTheRealServerAboutVersions(t *testing.T) {
	st := need(t)
	proxy, srv := newFailingProxy(t, st.Elasticsearch.URL)
	cfg := testConfig(t, srv.URL, st.Prometheus.URL, t.TempDir())
	ctx := context.Background()
	cluster := testCluster("probe")
	job, _ := sampleJob(cluster, 1, time.Now().Add(-time.Hour))
	job.Final, job.State, job.EndTime = false, jobmodel.StateRunning, nil

	first := newOutputs(t, cfg)
	if err := first.EnsureIndices(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := first.ClaimDocID(ctx, job, job.StartTime.Time, true); err != nil {
		t.Fatal(err)
	}
	bulks := proxy.recorded()
	if len(bulks) == 0 {
		t.Fatal("no bulk request")
	}
	if op, _ := firstAction(t, bulks[0]); op != "create" {
		t.Errorf("a fresh agent's first job write to an empty index: %q, want create", op)
	}
	getJob(t, first, job.DocID)

	second := newOutputs(t, cfg)
	next, _ := sampleJob(cluster, 2, time.Now().Add(-time.Minute))
	next.Final, next.State, next.EndTime = false, jobmodel.StateRunning, nil
	before := len(proxy.recorded())
	if _, err := second.ClaimDocID(ctx, next, next.StartTime.Time, true); err != nil {
		t.Fatal(err)
	}
	honoured, known := second.es.VersionsKnown()
	if !known {
		t.Fatal("the fresh agent did not find out whether the server honours versions")
	}
	bulks = proxy.recorded()[before:]
	if len(bulks) == 0 {
		t.Fatal("no bulk request from the second agent")
	}
	op, versioned := firstAction(t, bulks[0])
	switch {
	case honoured && op != "create":
		t.Errorf("a server that honours versions got %q, want create", op)
	case !honoured && (op != "index" || !versioned):
		t.Errorf("a server that ignores versions got %q (versioned %v), want a versioned index", op, versioned)
	}
	if !st.Elasticsearch.External && honoured {
		t.Error("ZincSearch taken as honouring versions")
	}
}

// TestFirstCreateMakesTheIndicesFirst: a fresh agent's first job write to a
// store with no indices at all creates them with their mappings before it
// writes. The real ZincSearch creates a missing index on a write and maps
// every field by guess (dates and keywords as text), after which every
// range query on the job index fails; seen on the Grafana-side suite.
func TestFirstCreateMakesTheIndicesFirst(t *testing.T) {
	st := need(t)
	cfg := testConfig(t, st.Elasticsearch.URL, st.Prometheus.URL, t.TempDir())
	ctx := context.Background()
	job, _ := sampleJob(testCluster("fresh"), 1, time.Now().Add(-time.Hour))
	job.Final, job.State, job.EndTime = false, jobmodel.StateRunning, nil
	o := newOutputs(t, cfg)
	if _, err := o.ClaimDocID(ctx, job, job.StartTime.Time, true); err != nil {
		t.Fatal(err)
	}
	getJob(t, o, job.DocID)
	q := []byte(`{"query":{"range":{"start_time":{"lte":"` + time.Now().UTC().Format(time.RFC3339) + `"}}}}`)
	if _, err := o.es.Search(ctx, jobmodel.SearchIndices(cfg.Elasticsearch.JobIndex), q); err != nil {
		t.Errorf("a range query on start_time after the first write: %v (the index was not made with its mapping)", err)
	}
}

// The store down when a job ends: its final document is spooled. The
// store back, the job's analysis (the same document id, in the results
// index, written later) is written directly. The replay must still store
// the final job document: the analysis is another index's document, not
// a newer version of this one (the cgroup v2 node's outage test lost a
// job this way).
func TestAnalysisWrittenAfterAnOutageDoesNotSupersedeTheSpooledJob(t *testing.T) {
	st := need(t)
	proxy, srv := newFailingProxy(t, st.Elasticsearch.URL)
	cfg := testConfig(t, srv.URL, st.Prometheus.URL, t.TempDir())
	cfg.Elasticsearch.ResultIndex = strings.Replace(cfg.Elasticsearch.JobIndex, "-jobs-", "-results-", 1)
	o := newOutputs(t, cfg)
	ctx := context.Background()
	if err := o.EnsureIndices(ctx); err != nil {
		t.Fatal(err)
	}
	job, _ := sampleJob(testCluster("analysed"), 5, time.Now().Add(-time.Hour))
	job.UpdatedAt = jobmodel.At(time.Now().Add(-2 * time.Second))
	proxy.set(request400)
	if err := o.PutJob(ctx, job); !errors.Is(err, spool.ErrSpooled) {
		t.Fatalf("the store refusing: PutJob = %v, want the document spooled", err)
	}
	proxy.set("")
	res := jobmodel.Result{DocID: job.DocID, SchemaVersion: 1, Cluster: job.Cluster, JobID: job.JobID,
		State: string(job.State), UpdatedAt: jobmodel.At(time.Now())}
	if err := o.PutResult(ctx, res); err != nil {
		t.Fatal(err)
	}
	o.Replay(ctx)
	if got := getJob(t, o, job.DocID); !got.Final || got.State != jobmodel.StateCompleted {
		t.Errorf("stored job is final=%v state=%s, want the spooled final document", got.Final, got.State)
	}
}
