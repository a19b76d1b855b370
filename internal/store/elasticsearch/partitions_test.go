package elasticsearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
)

// fieldType returns the type the server gives field in index's mapping.
func fieldType(t *testing.T, c *Client, index, field string) string {
	t.Helper()
	props, err := c.getProperties(context.Background(), index)
	if err != nil {
		t.Fatalf("mapping of %s: %v", index, err)
	}
	var f fieldMapping
	_ = json.Unmarshal(props[field], &f)
	return f.Type
}

func jobDoc(t *testing.T, base, id string, submit time.Time) store.Doc {
	t.Helper()
	j := jobmodel.Job{DocID: id, Cluster: "c1", JobID: strings.TrimPrefix(id, "c1:"), User: "alice", State: "RUNNING",
		SubmitTime: jobmodel.At(submit), StartTime: jobmodel.At(submit.Add(time.Minute)), UpdatedAt: jobmodel.At(time.Now())}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return store.Doc{Kind: store.KindJobDoc, Index: j.IndexOf(base, time.Now()), ID: id, Body: b}
}

// waitIDs polls the search of index until every id is found.
func waitIDs(t *testing.T, c *Client, index string, ids ...string) map[string]json.RawMessage {
	t.Helper()
	var got map[string]json.RawMessage
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		got, err = c.GetByIDs(context.Background(), index, ids)
		if err == nil && len(got) == len(ids) {
			return got
		}
	}
	t.Fatalf("%s: found %d of %v: %v", index, len(got), ids, err)
	return nil
}

// A registered base's monthly indices are made with the mapping before the
// first write to them, this month's by EnsurePartitioned and another
// month's by the write (Bulk); readers find both through the pattern and
// the pre-0.2 single index. Without the client making them, the real
// ZincSearch creates the index on the write and maps every field by guess
// (the keyword "cluster" as text).
func TestMonthlyIndicesAreMadeWithTheirMapping(t *testing.T) {
	c := newTestClient(t)
	ctx := context.Background()
	base := "jobsight-test-part-" + randHex(t)
	now := time.Now()
	if err := c.EnsurePartitioned(ctx, base, jobmodel.JobMapping(), now); err != nil {
		t.Fatal(err)
	}
	if got := fieldType(t, c, jobmodel.MonthlyIndex(base, now), "cluster"); got != "keyword" {
		t.Errorf("this month's index: cluster mapped as %q, want keyword", got)
	}
	old := time.Date(2019, 5, 31, 23, 59, 0, 0, time.UTC)
	docs := []store.Doc{jobDoc(t, base, "c1:1", now), jobDoc(t, base, "c1:2", old)}
	if docs[1].Index != base+"-2019.05" {
		t.Fatalf("a job submitted on 2019-05-31 goes to %s", docs[1].Index)
	}
	if f, err := c.Bulk(ctx, docs); err != nil || len(f) > 0 {
		t.Fatalf("bulk: %v %v", err, f)
	}
	if got := fieldType(t, c, base+"-2019.05", "cluster"); got != "keyword" {
		t.Errorf("an older month's index made by a write: cluster mapped as %q, want keyword", got)
	}
	// The pre-0.2 single index, with one document.
	if err := c.EnsureIndex(ctx, base, jobmodel.JobMapping()); err != nil {
		t.Fatal(err)
	}
	legacy := jobDoc(t, base, "c1:3", now)
	legacy.Index = base
	if f, err := c.Bulk(ctx, []store.Doc{legacy}); err != nil || len(f) > 0 {
		t.Fatalf("bulk: %v %v", err, f)
	}
	got := waitIDs(t, c, jobmodel.SearchIndices(base), "c1:1", "c1:2", "c1:3")
	if len(got) != 3 {
		t.Fatalf("found %d", len(got))
	}
	raw, err := c.Search(ctx, jobmodel.SearchIndices(base), []byte(`{"size":10,"query":{"ids":{"values":["c1:2"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var ans store.SearchAnswer[json.RawMessage]
	if err := json.Unmarshal(raw, &ans); err != nil || len(ans.Hits.Hits) != 1 || ans.Hits.Hits[0].Index != base+"-2019.05" {
		t.Fatalf("the hit of c1:2 does not name its index: %s", raw)
	}
	// A base nothing was written to: a search of its pattern is no error
	// on Elasticsearch (ignore_unavailable); ZincSearch answers 400.
	if _, err := c.Search(ctx, jobmodel.SearchIndices(base+"-none"), []byte(`{"size":1}`)); err != nil && !strings.Contains(err.Error(), "no index found") {
		t.Errorf("searching the indices of an unused base: %v", err)
	}
}

// The index template applies to a monthly index that something other
// than a Jobsight client creates (a write of another tool, an older agent).
func TestTemplateGivesMonthlyIndicesTheMapping(t *testing.T) {
	c := newTestClient(t)
	ctx := context.Background()
	base := "jobsight-test-tmpl-" + randHex(t)
	if err := c.PutTemplate(ctx, base, jobmodel.JobMapping()); err != nil {
		t.Fatal(err)
	}
	// Not registered with EnsurePartitioned: the write creates the index.
	d := jobDoc(t, base, "c1:1", time.Date(2020, 2, 3, 0, 0, 0, 0, time.UTC))
	if f, err := c.Bulk(ctx, []store.Doc{d}); err != nil || len(f) > 0 {
		t.Fatalf("bulk: %v %v", err, f)
	}
	waitIDs(t, c, jobmodel.SearchIndices(base), "c1:1")
	if got := fieldType(t, c, d.Index, "cluster"); got != "keyword" {
		t.Errorf("an index made by a write under the template: cluster mapped as %q, want keyword", got)
	}
}

func randHex(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("%08x", time.Now().UnixNano()&0xffffffff)
}

// agentPermissions are the ZincSearch permissions the agent's path needs
// (docs/indices.md, "Least privileges"): check, create and read the
// mapping of a monthly index, extend it, write in bulk, search.
var agentPermissions = []string{"index.Exists", "index.CreateES", "index.GetESMapping", "index.SetMapping", "document.ESBulk", "search.SearchDSL"}

// readerPermissions are the datasource's: search, and for the health
// check, whether the job index exists and its mapping.
var readerPermissions = []string{"search.SearchDSL", "index.Exists", "index.GetESMapping"}

// withRole returns a client whose user has a role of exactly perms in
// ZincSearch, which checks each API call's permission.
func withRole(t *testing.T, name string, perms []string) *Client {
	t.Helper()
	password := "pw-" + randHex(t) + "-x"
	user, err := testES.ZincUser(name, password, perms)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{URLs: []string{testES.URL}, Username: user, Password: password, Timeout: 20 * time.Second,
		MaxRetries: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// agentPath is what an agent does with the store: make sure of this
// month's index (which an older agent made with fewer fields, so the
// mapping is extended), write a running job of this month and one of an
// older month (whose index the write makes), read them back through the
// pattern.
func agentPath(ctx context.Context, t *testing.T, c *Client, admin *Client) error {
	base := "jobsight-test-priv-" + randHex(t)
	now := time.Now()
	// An older agent's index: the job mapping without one field.
	var m map[string]any
	_ = json.Unmarshal(jobmodel.JobMapping(), &m)
	delete(m["mappings"].(map[string]any)["properties"].(map[string]any), "agent_version")
	older, _ := json.Marshal(m)
	if err := admin.EnsureIndex(ctx, jobmodel.MonthlyIndex(base, now), older); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsurePartitioned(ctx, base, jobmodel.JobMapping(), now); err != nil {
		return err
	}
	docs := []store.Doc{jobDoc(t, base, "c1:1", now), jobDoc(t, base, "c1:2", now.AddDate(-1, 0, 0))}
	f, err := c.Bulk(ctx, docs)
	if err != nil {
		return err
	}
	if len(f) > 0 {
		return f[0].Err
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		got, err := c.GetByIDs(ctx, jobmodel.SearchIndices(base), []string{"c1:1", "c1:2"})
		if err != nil {
			return err
		}
		if len(got) == 2 {
			return nil
		}
		if time.Now().After(deadline) {
			t.Fatalf("the written jobs are not found: %d of 2", len(got))
		}
	}
}

// ZincSearch enforces a permission per API call (a role is a list of
// them; it has no per-index privileges). An agent whose role has exactly
// agentPermissions does its whole path; with any one of them fewer, the
// path fails with an access-denied error that names the operation. The
// datasource's reads work with readerPermissions alone and are refused a
// write. Real Elasticsearch roles (per index pattern) are in
// docs/indices.md; this server cannot express those.
func TestLeastPermissionsOnAServerThatEnforcesThem(t *testing.T) {
	needES(t)
	if testES.External {
		t.Skip("ZincSearch's users and roles API: not the external cluster's")
	}
	ctx := context.Background()
	admin := newTestClient(t)
	if err := agentPath(ctx, t, withRole(t, "jobsight-agent-"+randHex(t), agentPermissions), admin); err != nil {
		t.Fatalf("the agent's path with its least permissions: %v", err)
	}
	for i, missing := range agentPermissions {
		perms := append(append([]string{}, agentPermissions[:i]...), agentPermissions[i+1:]...)
		err := agentPath(ctx, t, withRole(t, fmt.Sprintf("jobsight-agent-less-%d-%s", i, randHex(t)), perms), admin)
		if !errors.Is(err, store.ErrAccessDenied) {
			t.Errorf("without %s the agent's path gives %v, want access denied", missing, err)
			continue
		}
		// ZincSearch names the permission it lacks, except in the answer
		// to a HEAD, which has no body.
		named := strings.Contains(err.Error(), missing) || strings.Contains(err.Error(), "check index")
		if !strings.Contains(err.Error(), "status 403") || !named {
			t.Errorf("without %s: the error does not say what is refused: %v", missing, err)
		}
	}

	reader := withRole(t, "jobsight-reader-"+randHex(t), readerPermissions)
	base := "jobsight-test-read-" + randHex(t)
	if err := admin.EnsurePartitioned(ctx, base, jobmodel.JobMapping(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Search(ctx, jobmodel.SearchIndices(base), []byte(`{"size":1}`)); err != nil {
		t.Errorf("the reader's search: %v", err)
	}
	if exists, err := reader.indexExists(ctx, jobmodel.MonthlyIndex(base, time.Now())); err != nil || !exists {
		t.Errorf("the reader's index check: %v %v", exists, err)
	}
	if _, err := reader.getProperties(ctx, jobmodel.MonthlyIndex(base, time.Now())); err != nil {
		t.Errorf("the reader's mapping read: %v", err)
	}
	_, err := reader.Bulk(ctx, []store.Doc{jobDoc(t, base, "c1:9", time.Now())})
	if !errors.Is(err, store.ErrAccessDenied) {
		t.Errorf("the reader may write: %v", err)
	}
}
