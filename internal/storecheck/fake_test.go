package storecheck

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/config"
	es "github.com/jobsight/jobsight/internal/store/elasticsearch"
)

// fakeES8 is a FAKE Elasticsearch 8 with security on: an HTTP server that
// answers each request as Elasticsearch 8 answers a user holding the
// privileges in have (the same on every index), and a missing privilege
// with its 403 security_exception: the body shape of Elasticsearch's
// documented answer (root_cause, type, reason naming the action, the
// user, the roles, the indices and the privileges that grant it), a bulk
// item's refusal inside a 200 bulk answer, and no body for a HEAD.
//
// It is a fake because no Elasticsearch runs here and ZincSearch, the
// Elasticsearch-API server that does, cannot express these privileges: it
// has no per-index privileges, never asks for a permission on GET / (the
// monitor cluster privilege), and has no index deletion nor listing by
// pattern in its Elasticsearch API (delete_index, view_index_metadata on
// the monthly pattern). Which privileges grant which action is written
// here from Elasticsearch's security privileges reference, not taken from
// privileges.go, so the test can catch the table and the check
// disagreeing with Elasticsearch.
type fakeES8 struct {
	have map[string]bool
}

// grant is Elasticsearch's action of a request and the privileges that
// grant it (its security reference; "all" and "manage" left out, since
// no Jobsight role holds them).
type grant struct {
	action    string
	cluster   bool
	grantedBy []string
}

func (f *fakeES8) route(r *http.Request) (grant, string) {
	p := strings.Trim(r.URL.Path, "/")
	parts := strings.Split(p, "/")
	index := parts[0]
	switch {
	case p == "":
		return grant{"cluster:monitor/main", true, []string{"monitor"}}, ""
	case p == "_bulk":
		return grant{"indices:data/write/bulk", false, nil}, "" // authorized per item
	case len(parts) == 1 && r.Method == http.MethodHead:
		return grant{"indices:admin/get", false, []string{"view_index_metadata"}}, index
	case len(parts) == 1 && r.Method == http.MethodPut:
		return grant{"indices:admin/create", false, []string{"create_index"}}, index
	case len(parts) == 1 && r.Method == http.MethodDelete:
		return grant{"indices:admin/delete", false, []string{"delete_index"}}, index
	case len(parts) == 2 && parts[1] == "_mapping" && r.Method == http.MethodGet:
		return grant{"indices:admin/mappings/get", false, []string{"view_index_metadata"}}, index
	case len(parts) == 2 && parts[1] == "_mapping" && r.Method == http.MethodPut:
		return grant{"indices:admin/mapping/put", false, []string{"indices:admin/mapping/put"}}, index
	case len(parts) == 2 && parts[1] == "_search":
		return grant{"indices:data/read/search", false, []string{"read"}}, index
	case len(parts) >= 2 && parts[1] == "_settings":
		return grant{"indices:monitor/settings/get", false, []string{"view_index_metadata", "monitor"}}, index
	case len(parts) == 3 && parts[1] == "_doc" && r.Method == http.MethodPut:
		return grant{"indices:data/write/index", false, []string{"create_doc", "create", "index", "write"}}, index
	case len(parts) == 3 && parts[1] == "_doc" && r.Method == http.MethodDelete:
		return grant{"indices:data/write/delete", false, []string{"delete", "write"}}, index
	}
	return grant{}, ""
}

// allowed: have holds the cluster privilege monitor and the index
// privileges, as Jobsight's roles give them (monitor only as a cluster
// privilege, so the index privilege of that name is not held).
func (f *fakeES8) allowed(g grant) bool {
	return slices.ContainsFunc(g.grantedBy, func(p string) bool { return f.have[p] && (g.cluster || p != "monitor") })
}

// denial is Elasticsearch 8's security_exception for g.
func denial(g grant, index string) map[string]any {
	kind := "index"
	on := " on indices [" + index + "]"
	if g.cluster {
		kind, on = "cluster", ""
	}
	reason := fmt.Sprintf("action [%s] is unauthorized for user [jobsight-test] with effective roles [jobsight_test]%s, this action is granted by the %s privileges [%s,all]",
		g.action, on, kind, strings.Join(g.grantedBy, ","))
	cause := map[string]any{"type": "security_exception", "reason": reason}
	return map[string]any{"root_cause": []any{cause}, "type": "security_exception", "reason": reason}
}

func (f *fakeES8) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Elastic-Product", "Elasticsearch")
	w.Header().Set("Content-Type", "application/json")
	answer := func(status int, body any) {
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			_ = json.NewEncoder(w).Encode(body)
		}
	}
	g, index := f.route(r)
	if g.action == "" {
		answer(http.StatusBadRequest, map[string]any{"error": "the fake does not know " + r.Method + " " + r.URL.Path})
		return
	}
	if g.action == "indices:data/write/bulk" {
		f.bulk(w, r)
		return
	}
	if !f.allowed(g) {
		answer(http.StatusForbidden, map[string]any{"error": denial(g, index), "status": 403})
		return
	}
	switch g.action {
	case "cluster:monitor/main":
		answer(http.StatusOK, map[string]any{"name": "fake", "cluster_name": "fake-es8", "version": map[string]any{"number": "8.19.0", "build_flavor": "default"}, "tagline": "You Know, for Search"})
	case "indices:admin/get", "indices:admin/mapping/put", "indices:data/write/delete":
		answer(http.StatusOK, map[string]any{"acknowledged": true})
	case "indices:admin/create":
		answer(http.StatusBadRequest, map[string]any{"error": map[string]any{"type": "resource_already_exists_exception", "reason": "index [" + index + "/x] already exists"}, "status": 400})
	case "indices:admin/delete":
		answer(http.StatusNotFound, map[string]any{"error": map[string]any{"type": "index_not_found_exception", "reason": "no such index [" + index + "]"}, "status": 404})
	case "indices:admin/mappings/get":
		answer(http.StatusOK, map[string]any{index: map[string]any{"mappings": map[string]any{"properties": map[string]any{}}}})
	case "indices:data/read/search":
		answer(http.StatusOK, map[string]any{"hits": map[string]any{"total": map[string]any{"value": 0, "relation": "eq"}, "hits": []any{}}})
	case "indices:monitor/settings/get":
		answer(http.StatusOK, map[string]any{})
	case "indices:data/write/index":
		answer(http.StatusCreated, map[string]any{"result": "created"})
	}
}

// bulk authorizes each item: a refused one is a 403 item in a 200
// answer, as Elasticsearch gives it.
func (f *fakeES8) bulk(w http.ResponseWriter, r *http.Request) {
	dec := json.NewDecoder(r.Body)
	var items []any
	for {
		var action map[string]struct {
			Index string `json:"_index"`
			ID    string `json:"_id"`
		}
		if dec.Decode(&action) != nil {
			break
		}
		var doc json.RawMessage
		_ = dec.Decode(&doc)
		for op, a := range action {
			g := grant{"indices:data/write/bulk[s]", false, []string{"create_doc", "create", "index", "write"}}
			item := map[string]any{"_index": a.Index, "_id": a.ID, "status": 201, "result": "created", "_version": 1}
			if !f.allowed(g) {
				item = map[string]any{"_index": a.Index, "_id": a.ID, "status": 403, "error": denial(g, a.Index)}
			}
			items = append(items, map[string]any{op: item})
		}
	}
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(map[string]any{"took": 1, "errors": false, "items": items})
}

// collectorRole is the collector's check with every option on.
func collectorRole(url string) Elasticsearch {
	bases := JobBases(config.ElasticsearchConfig{JobIndex: "jobsight-jobs", NodeIndex: "jobsight-nodes", ResultIndex: "jobsight-results"})
	bases[es.KindClusterState] = Base{Name: "jobsight-cluster-state", Mapping: []byte(`{"properties":{}}`)}
	return Elasticsearch{Conn: config.Elasticsearch{URLs: []string{url}, Timeout: 5 * time.Second}, Role: "jobsight_collector", Bases: bases}
}

// Against the FAKE Elasticsearch 8 (see fakeES8 for why a fake): the
// collector's role as docs/indices.md gives it passes; without each of
// its privileges in turn, exactly the calls that need it fail, each line
// naming that privilege by its Elasticsearch name and the index.
func TestFakeES8EachMissingPrivilegeIsNamed(t *testing.T) {
	role := []string{"monitor", "create_index", "view_index_metadata", "indices:admin/mapping/put", "index", "read", "delete_index"}
	fake := &fakeES8{have: map[string]bool{}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	month := time.Now().UTC().Format("2006.01")
	wantLine := map[string]string{
		"monitor":                   "MISSING  elasticsearch info (GET /): missing cluster privilege monitor (role jobsight_collector in docs/indices.md; the server said: status 403: security_exception: action [cluster:monitor/main] is unauthorized for user [jobsight-test] with effective roles [jobsight_test])\nskipped  elasticsearch 15 more calls: not made: fix the line above first",
		"create_index":              "MISSING  elasticsearch create index (PUT /jobsight-cluster-state): missing index privilege create_index on jobsight-cluster-state",
		"view_index_metadata":       "MISSING  elasticsearch list monthly (GET /jobsight-results-*/_settings/index.creation_date): missing index privilege view_index_metadata on jobsight-results, jobsight-results-*",
		"indices:admin/mapping/put": "MISSING  elasticsearch put mapping (PUT /jobsight-cluster-state/_mapping): missing index privilege indices:admin/mapping/put on jobsight-cluster-state",
		"index":                     "MISSING  elasticsearch bulk (POST /_bulk): missing index privilege index on jobsight-jobs, jobsight-jobs-* (role jobsight_collector in docs/indices.md; the server said: status 403: security_exception: action [indices:data/write/bulk[s]] is unauthorized for user [jobsight-test] with effective roles [jobsight_test] on indices [jobsight-jobs-" + month + "])",
		"read":                      "MISSING  elasticsearch search (POST /jobsight-nodes,jobsight-nodes-*/_search): missing index privilege read on jobsight-nodes, jobsight-nodes-*",
		"delete_index":              "MISSING  elasticsearch delete index (DELETE /jobsight-jobs-1970.01): missing index privilege delete_index on jobsight-jobs, jobsight-jobs-*",
	}
	for _, p := range role {
		fake.have[p] = true
	}
	r := &Report{}
	CheckElasticsearch(context.Background(), r, collectorRole(srv.URL), Options{Host: "n1"})
	if out := output(t, r); r.Problems() != 0 {
		t.Fatalf("the collector's documented role fails the check:\n%s", out)
	}
	for _, missing := range role {
		t.Run(missing, func(t *testing.T) {
			fake.have = map[string]bool{}
			for _, p := range role {
				fake.have[p] = p != missing
			}
			r := &Report{}
			CheckElasticsearch(context.Background(), r, collectorRole(srv.URL), Options{Host: "n1"})
			out := output(t, r)
			if !strings.Contains(out, wantLine[missing]) {
				t.Errorf("the output lacks %q", wantLine[missing])
			}
			for _, l := range r.Lines {
				if l.Status == Problem && !strings.Contains(l.Detail, "missing ") {
					t.Errorf("a failure that names no privilege: %s", l)
				}
				if l.Status == Problem && !strings.Contains(l.Detail, " privilege "+missing+" ") {
					t.Errorf("without %s, a line names another privilege: %s", missing, l)
				}
				if l.Status == OK && missing == es.APICalls[l.Call].Index {
					t.Errorf("without %s, %s passes", missing, l)
				}
			}
			if r.Problems() == 0 {
				t.Errorf("without %s the check passes", missing)
			}
		})
	}
}

// TLS: a store whose certificate no trusted CA signed is named with the
// option that fixes it; with that option set to the CA, the store
// answers. (The server is the fake above, behind a real TLS listener.)
func TestTLSUnknownAuthorityNamesTheOption(t *testing.T) {
	srv := httptest.NewUnstartedServer(&fakeES8{have: map[string]bool{"monitor": true}})
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	defer srv.Close()
	e := Elasticsearch{Conn: config.Elasticsearch{URLs: []string{srv.URL}, Timeout: 5 * time.Second}, Role: "jobsight_report",
		Bases: map[string]Base{es.KindJob: {Name: "jobsight-jobs", Monthly: true}}}
	r := &Report{}
	CheckElasticsearch(context.Background(), r, e, Options{Host: "n1"})
	out := output(t, r)
	want := "MISSING  elasticsearch info (GET /): TLS: certificate signed by unknown authority — set elasticsearch.ca_file to the PEM bundle of the CA that signed " + srv.URL + "'s certificate"
	if !strings.Contains(out, want) {
		t.Errorf("the output lacks %q", want)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Conn.CAFile = ca
	r = &Report{}
	CheckElasticsearch(context.Background(), r, e, Options{Host: "n1"})
	if out := output(t, r); !strings.HasPrefix(out, "ok       elasticsearch info (GET /): cluster \"fake-es8\"") {
		t.Errorf("with elasticsearch.ca_file the store does not answer")
	}
}
