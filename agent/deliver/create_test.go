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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/spool"
)

// versioningES is a LABELLED FAKE of the Elasticsearch behaviour this
// repository's test server (ZincSearch) lacks and no real Elasticsearch
// runs here to show: external versions and op_type create. It keeps
// documents by id, answers a create of a stored id with Elasticsearch's
// 409 version_conflict_engine_exception, and serves ids queries and, with
// "version": true, other searches with every document and its _version (as
// Elasticsearch answers the agent's question whether versions are
// honoured). While down is set it answers 503, as an overloaded cluster
// does. Every other request (index creation, mappings) is acknowledged.
// bulks records the body of every _bulk request.
type versioningES struct {
	mu       sync.Mutex
	docs     map[string]json.RawMessage
	versions map[string]int64
	down     bool
	bulks    []string
}

func newVersioningES() *versioningES {
	return &versioningES{docs: map[string]json.RawMessage{}, versions: map[string]int64{}}
}

func (f *versioningES) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Elastic-Product", "Elasticsearch")
	w.Header().Set("Content-Type", "application/json")
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	switch {
	case f.down && r.URL.Path != "/":
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"type":"unavailable_shards_exception","reason":"fake outage"},"status":503}`)
	case r.URL.Path == "/":
		io.WriteString(w, `{"cluster_name":"fake","version":{"number":"8.19.0"}}`)
	case strings.HasSuffix(r.URL.Path, "/_bulk"):
		f.bulks = append(f.bulks, string(body))
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
			Version bool `json:"version"`
			Query   struct {
				IDs *struct {
					Values []string `json:"values"`
				} `json:"ids"`
			} `json:"query"`
		}
		_ = json.Unmarshal(body, &q)
		var hits []string
		hit := func(id string, d json.RawMessage) {
			if q.Version {
				hits = append(hits, fmt.Sprintf(`{"_id":%q,"_version":%d,"_source":%s}`, id, f.versions[id], d))
			} else {
				hits = append(hits, fmt.Sprintf(`{"_id":%q,"_source":%s}`, id, d))
			}
		}
		switch {
		case q.Query.IDs != nil:
			for _, id := range q.Query.IDs.Values {
				if d, ok := f.docs[id]; ok {
					hit(id, d)
				}
			}
		case q.Version:
			for id, d := range f.docs {
				hit(id, d)
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
	fake := newVersioningES()
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
	fake := newVersioningES()
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

// firstAction is the action of a _bulk body's first item ("index",
// "create"), and whether it carries an external version.
func firstAction(t *testing.T, bulk string) (action string, versioned bool) {
	t.Helper()
	line, _, _ := strings.Cut(bulk, "\n")
	var meta map[string]map[string]any
	if err := json.Unmarshal([]byte(line), &meta); err != nil {
		t.Fatalf("bulk action line %q: %v", line, err)
	}
	for op, a := range meta {
		return op, a["version_type"] == "external"
	}
	return "", false
}

// A fresh agent (an exclusive node's: one job per process) asks the server
// at start whether it honours versions, so its job's very first write is
// already a create that the server refuses for an id another job holds —
// not a plain index that learns the answer too late.
func TestFreshAgentsFirstJobWriteIsACreate(t *testing.T) {
	fake := newVersioningES()
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cfg := testConfig(t, srv.URL, deadURL(t), t.TempDir())
	ctx := context.Background()

	older, _ := sampleJob("c", 1, time.Unix(1_700_000_000, 0))
	if err := newOutputs(t, cfg).PutJob(ctx, older); err != nil { // an earlier agent's job
		t.Fatal(err)
	}
	fake.mu.Lock()
	fake.bulks = nil
	fake.mu.Unlock()

	fresh := newOutputs(t, cfg) // a new process: has written nothing yet
	newer, _ := sampleJob("c", 1, time.Unix(1_700_100_000, 0))
	newer.Final, newer.State, newer.EndTime = false, jobmodel.StateRunning, nil
	id, err := fresh.CreateJob(ctx, newer) // as ClaimDocID does after a search that missed the older job
	if err != nil {
		t.Fatal(err)
	}
	fake.mu.Lock()
	bulks := append([]string(nil), fake.bulks...)
	fake.mu.Unlock()
	if len(bulks) == 0 {
		t.Fatal("the fresh agent sent no bulk request")
	}
	if op, _ := firstAction(t, bulks[0]); op != "create" {
		t.Errorf("the fresh agent's first write was %q, want create:\n%s", op, bulks[0])
	}
	if want := jobmodel.ReuseDocID(older.DocID, newer.SubmitTime.Time); id != want {
		t.Errorf("stored under %q, want %q", id, want)
	}

	// Nothing stored yet (a new cluster): still a create.
	empty := newVersioningES()
	srv2 := httptest.NewServer(empty)
	defer srv2.Close()
	first := newOutputs(t, testConfig(t, srv2.URL, deadURL(t), t.TempDir()))
	if _, err := first.ClaimDocID(ctx, older, older.StartTime.Time, true); err != nil {
		t.Fatal(err)
	}
	empty.mu.Lock()
	defer empty.mu.Unlock()
	if len(empty.bulks) == 0 {
		t.Fatal("no bulk request to an empty store")
	}
	if op, _ := firstAction(t, empty.bulks[0]); op != "create" {
		t.Errorf("the first write to an empty store was %q, want create", op)
	}
}

// A wall clock stepped back between a job's running and final documents
// must not make the final one older: versions only go up per document, so
// the store keeps the final document, whether written at once or replayed
// from the spool after an outage (the spooled item keeps its version).
func TestClockSteppedBackDoesNotSupersedeTheFinalDocument(t *testing.T) {
	fake := newVersioningES()
	srv := httptest.NewServer(fake)
	defer srv.Close()
	o := newOutputs(t, testConfig(t, srv.URL, deadURL(t), t.TempDir()))
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	stored := func(id string) jobmodel.Job {
		fake.mu.Lock()
		defer fake.mu.Unlock()
		var j jobmodel.Job
		_ = json.Unmarshal(fake.docs[id], &j)
		return j
	}

	for i, outage := range []bool{false, true} {
		job, _ := sampleJob("c", uint64(10+i), now.Add(-time.Hour))
		running := job
		running.Final, running.State, running.UpdatedAt = false, jobmodel.StateRunning, jobmodel.At(now)
		if err := o.PutJob(ctx, running); err != nil {
			t.Fatal(err)
		}
		// The clock steps back an hour (NTP correcting a fast clock).
		job.UpdatedAt = jobmodel.At(now.Add(-time.Hour))
		fake.mu.Lock()
		fake.down = outage
		fake.mu.Unlock()
		err := o.PutJob(ctx, job)
		if outage {
			if !errors.Is(err, spool.ErrSpooled) {
				t.Fatalf("during the outage: %v, want the document spooled", err)
			}
			fake.mu.Lock()
			fake.down = false
			fake.mu.Unlock()
			o.Replay(ctx)
		} else if err != nil {
			t.Fatal(err)
		}
		if got := stored(job.DocID); !got.Final {
			t.Errorf("outage %v: the store kept the running document (state %s): the final one was taken as superseded", outage, got.State)
		}
	}
}

// A watch that begins after its job was finalized (a repeated or late
// start, a checkpoint resumed by the node's next agent) writes a running
// job document: it must never turn the stored final document back into a
// running one. Checked on the real server (ZincSearch ignores versions,
// so the write would be a plain overwrite) with a fresh agent that has
// written nothing, and on the fake that honours versions (where the
// running document, the newer, would win a versioned write).
func TestRunningDocumentNeverReplacesTheFinalOne(t *testing.T) {
	check := func(t *testing.T, esURL, promURL, cluster string, settle time.Duration) {
		cfg := testConfig(t, esURL, promURL, t.TempDir())
		ctx := context.Background()
		final, _ := sampleJob(cluster, 7, time.Now().Add(-time.Hour))
		final.UpdatedAt = jobmodel.At(time.Now().Add(-time.Minute))
		finisher := newOutputs(t, cfg)
		if err := finisher.EnsureIndices(ctx); err != nil {
			t.Fatal(err)
		}
		if err := finisher.PutJob(ctx, final); err != nil {
			t.Fatal(err)
		}
		getJob(t, finisher, final.DocID) // searchable before the late start asks

		running := final
		running.Final, running.State, running.EndTime, running.Analysis, running.Totals = false, jobmodel.StateRunning, nil, nil, nil
		running.UpdatedAt = jobmodel.At(time.Now())
		for _, who := range []struct {
			name string
			o    *Outputs
		}{{"the agent that finalized it", finisher}, {"a fresh agent", newOutputs(t, cfg)}} {
			id, err := who.o.ClaimDocID(ctx, running, running.StartTime.Time, true)
			if err != nil || id != final.DocID {
				t.Fatalf("%s: a late start claimed %q (%v), want the job's own id %q", who.name, id, err, final.DocID)
			}
			staysFinal(t, finisher, final, settle, "after a late start by "+who.name)
		}
		// Another job of the id (a reused id) is stored under its own id
		// and leaves the final document alone.
		other, _ := sampleJob(cluster, 7, time.Now().Add(-time.Minute))
		other.Final, other.State, other.EndTime = false, jobmodel.StateRunning, nil
		id, err := newOutputs(t, cfg).ClaimDocID(ctx, other, other.StartTime.Time, true)
		if err != nil || id == final.DocID {
			t.Fatalf("a later job of the id was claimed under %q (%v)", id, err)
		}
		if got := getJob(t, finisher, id); got.Final || !got.SubmitTime.Equal(other.SubmitTime.Time) {
			t.Errorf("the later job's running document: final %v submit %v", got.Final, got.SubmitTime)
		}
		staysFinal(t, finisher, final, settle, "after a later job of the id began")
	}
	t.Run("real server", func(t *testing.T) {
		st := need(t)
		check(t, st.Elasticsearch.URL, st.Prometheus.URL, testCluster("late"), 3*time.Second)
	})
	t.Run("versions honoured", func(t *testing.T) {
		srv := httptest.NewServer(newVersioningES())
		defer srv.Close()
		check(t, srv.URL, deadURL(t), "c", 0) // the fake shows a write at once
	})
}

// staysFinal checks the stored job document at once and then for settle,
// long enough for a write to become searchable (ZincSearch shows a write
// after about a second): it must still be the final document.
func staysFinal(t *testing.T, o *Outputs, final jobmodel.Job, settle time.Duration, when string) {
	t.Helper()
	for end := time.Now().Add(settle); ; time.Sleep(250 * time.Millisecond) {
		if got := getJob(t, o, final.DocID); !got.Final || got.State != final.State {
			t.Errorf("%s the stored document is final=%v state %q, want final and %q", when, got.Final, got.State, final.State)
			return
		}
		if !time.Now().Before(end) {
			return
		}
	}
}
