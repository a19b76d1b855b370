package deliver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// versioningES is a LABELLED FAKE of the Elasticsearch behaviour this
// repository's test server (ZincSearch) lacks and no real Elasticsearch
// runs here to show: external versions and op_type create. It keeps
// documents by id, answers a create of a stored id with Elasticsearch's
// 409 version_conflict_engine_exception, and serves ids queries. Every
// other request (index creation, mappings) is acknowledged.
type versioningES struct {
	mu       sync.Mutex
	docs     map[string]json.RawMessage
	versions map[string]int64
}

func (f *versioningES) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Elastic-Product", "Elasticsearch")
	w.Header().Set("Content-Type", "application/json")
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	switch {
	case r.URL.Path == "/":
		io.WriteString(w, `{"cluster_name":"fake","version":{"number":"8.19.0"}}`)
	case strings.HasSuffix(r.URL.Path, "/_bulk"):
		lines := bytes.Split(bytes.TrimSpace(body), []byte("\n"))
		var items []string
		for i := 0; i+1 < len(lines); i += 2 {
			var meta map[string]struct {
				ID      string `json:"_id"`
				Version int64  `json:"version"`
			}
			_ = json.Unmarshal(lines[i], &meta)
			for op, a := range meta {
				_, exists := f.docs[a.ID]
				switch {
				case op == "create" && exists:
					items = append(items, fmt.Sprintf(`{"create":{"_id":%q,"status":409,"error":{"type":"version_conflict_engine_exception","reason":"[%s]: version conflict, document already exists"}}}`, a.ID, a.ID))
				case a.Version > 0 && a.Version <= f.versions[a.ID]:
					items = append(items, fmt.Sprintf(`{"index":{"_id":%q,"status":409,"error":{"type":"version_conflict_engine_exception","reason":"newer stored"}}}`, a.ID))
				default:
					f.docs[a.ID], f.versions[a.ID] = append(json.RawMessage(nil), lines[i+1]...), max(a.Version, f.versions[a.ID]+1)
					items = append(items, fmt.Sprintf(`{%q:{"_id":%q,"_version":%d,"status":201}}`, op, a.ID, f.versions[a.ID]))
				}
			}
		}
		fmt.Fprintf(w, `{"errors":false,"items":[%s]}`, strings.Join(items, ","))
	case strings.HasSuffix(r.URL.Path, "/_search"):
		var q struct {
			Query struct {
				IDs struct {
					Values []string `json:"values"`
				} `json:"ids"`
			} `json:"query"`
		}
		_ = json.Unmarshal(body, &q)
		var hits []string
		for _, id := range q.Query.IDs.Values {
			if d, ok := f.docs[id]; ok {
				hits = append(hits, fmt.Sprintf(`{"_id":%q,"_source":%s}`, id, d))
			}
		}
		fmt.Fprintf(w, `{"hits":{"hits":[%s]}}`, strings.Join(hits, ","))
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/_mapping"):
		index := strings.Split(strings.Trim(r.URL.Path, "/"), "/")[0]
		fmt.Fprintf(w, `{%q:{"mappings":{"properties":{}}}}`, index)
	default:
		io.WriteString(w, `{"acknowledged":true}`)
	}
}

// A job's first document is a create where the server honours it: when
// another job's document holds the id (a reused id that a search did not
// see yet), the server refuses the create and the new job is stored under
// its reuse id, leaving the older document as it was.
func TestCreateJobLetsTheServerSayTheIDIsTaken(t *testing.T) {
	fake := &versioningES{docs: map[string]json.RawMessage{}, versions: map[string]int64{}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cfg := testConfig(t, srv.URL, deadURL(t), t.TempDir())
	o := newOutputs(t, cfg)
	ctx := context.Background()

	older, _ := sampleJob("c", 1, time.Unix(1_700_000_000, 0))
	if err := o.PutJob(ctx, older); err != nil { // a versioned write: the client learns the server honours versions
		t.Fatal(err)
	}
	if !o.es.HonoursVersions() {
		t.Fatal("the fake's versioned answers were not taken as honoured")
	}
	newer, _ := sampleJob("c", 1, time.Unix(1_700_100_000, 0))
	newer.Final, newer.State, newer.EndTime = false, jobmodel.StateRunning, nil
	id, err := o.CreateJob(ctx, newer)
	if err != nil {
		t.Fatal(err)
	}
	want := jobmodel.ReuseDocID(older.DocID, newer.SubmitTime.Time)
	if id != want {
		t.Fatalf("the newer job was stored under %q, want its reuse id %q", id, want)
	}
	fake.mu.Lock()
	var kept, moved jobmodel.Job
	_ = json.Unmarshal(fake.docs[older.DocID], &kept)
	_ = json.Unmarshal(fake.docs[want], &moved)
	fake.mu.Unlock()
	if !kept.Final || !kept.SubmitTime.Equal(older.SubmitTime.Time) {
		t.Errorf("the older job's document was changed: final %v submit %v", kept.Final, kept.SubmitTime)
	}
	if moved.DocID != want || !moved.SubmitTime.Equal(newer.SubmitTime.Time) {
		t.Errorf("the newer job's document: doc_id %q submit %v", moved.DocID, moved.SubmitTime)
	}
	// A later write of the newer job (its final document) follows it.
	newer.Final = true
	if err := o.PutJob(ctx, newer); err != nil {
		t.Fatal(err)
	}
	fake.mu.Lock()
	_ = json.Unmarshal(fake.docs[older.DocID], &kept)
	fake.mu.Unlock()
	if !kept.SubmitTime.Equal(older.SubmitTime.Time) {
		t.Errorf("the newer job's final document overwrote the older job's")
	}

	fresh, _ := sampleJob("c", 2, time.Unix(1_700_000_000, 0))
	if id, err := o.CreateJob(ctx, fresh); err != nil || id != fresh.DocID {
		t.Errorf("a fresh id: stored under %q (%v), want %q", id, err, fresh.DocID)
	}
}

// The node agent's flush writes every job's node document in one bulk
// request; each document keeps its own id and content.
func TestPutNodesWritesEveryJobsDocumentInOneRequest(t *testing.T) {
	fake := &versioningES{docs: map[string]json.RawMessage{}, versions: map[string]int64{}}
	var bulks int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/_bulk") {
			bulks++
		}
		fake.ServeHTTP(w, r)
	}))
	defer srv.Close()
	o := newOutputs(t, testConfig(t, srv.URL, deadURL(t), t.TempDir()))
	ctx := context.Background()
	if err := o.EnsureIndices(ctx); err != nil {
		t.Fatal(err)
	}
	var nodes []jobmodel.Node
	for id := uint64(1); id <= 5; id++ {
		_, n := sampleJob("c", id, time.Unix(1_700_000_000, 0))
		n.UpdatedAt = jobmodel.At(time.Unix(1_700_000_100+int64(id), 0))
		nodes = append(nodes, n)
	}
	before := bulks
	if err := o.PutNodes(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	if bulks-before != 1 {
		t.Errorf("%d bulk requests for 5 node documents, want 1", bulks-before)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	for _, n := range nodes {
		var got jobmodel.Node
		if err := json.Unmarshal(fake.docs[n.DocID], &got); err != nil || got.JobDocID != n.JobDocID {
			t.Errorf("node document %s: %+v (%v)", n.DocID, got.JobDocID, err)
		}
	}
}
