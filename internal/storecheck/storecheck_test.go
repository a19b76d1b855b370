package storecheck

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/config"
	es "github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/test/stack"
)

// The real servers of these tests, started once by TestMain: ZincSearch
// (the Elasticsearch-API server that runs here), Prometheus with the
// remote-write receiver and one without it.
var (
	testES             *stack.ESServer
	testProm, promNoRW *stack.Server
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "jobsight-storecheck-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	stop := func() {
		if testES != nil {
			_ = testES.Stop()
		}
		for _, s := range []*stack.Server{testProm, promNoRW} {
			if s != nil {
				_ = s.Stop()
			}
		}
		os.RemoveAll(dir)
	}
	testES, err = stack.StartElasticsearch(ctx, filepath.Join(dir, "es"))
	if err == nil {
		testProm, err = stack.StartPrometheus(ctx, filepath.Join(dir, "prom"))
	}
	if err == nil {
		promNoRW, err = stack.StartPrometheusWith(ctx, filepath.Join(dir, "prom-norw"), stack.PrometheusOptions{NoRemoteWriteReceiver: true})
	}
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the test servers:", err)
		stop()
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

func needServers(t *testing.T) {
	t.Helper()
	if testES == nil {
		t.Skip("integration test: needs ZincSearch and Prometheus (not started with -short)")
	}
}

// secretFile writes a credential file as the products require it (0600).
func secretFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// esSection is an agent's elasticsearch section for user and password,
// with indices of this test's own.
func esSection(t *testing.T, url, user, password, prefix string) config.ElasticsearchConfig {
	t.Helper()
	c := config.DefaultElasticsearch()
	c.URLs = []string{url}
	if user != "" {
		c.Username, c.PasswordFile = user, secretFile(t, password)
	}
	c.JobIndex, c.NodeIndex, c.ResultIndex = prefix+"-jobs", prefix+"-nodes", prefix+"-results"
	return c
}

func remoteWrite(url string) config.RemoteWrite {
	return config.RemoteWrite{RemoteWriteURL: url, Timeout: 10 * time.Second}
}

func uniq(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("jobsight-sc%d", time.Now().UnixNano()%1e9)
}

// output is what an administrator reads; it must never hold a secret.
func output(t *testing.T, r *Report, secrets ...string) string {
	t.Helper()
	var b bytes.Buffer
	r.Write(&b)
	out := b.String()
	t.Logf("the check printed:\n%s", out)
	for _, s := range secrets {
		if s != "" && strings.Contains(out, s) {
			t.Errorf("the output shows a credential")
		}
	}
	return out
}

// linesOf returns the lines of the call (the first word after the
// store), in order.
func linesOf(r *Report, call string) []Line {
	var out []Line
	for _, l := range r.Lines {
		if l.Call == call {
			out = append(out, l)
		}
	}
	return out
}

// The agent's check as the administrator of the store: every call of the
// jobsight_agent role is made and answers, the scratch document is
// written and deleted, the sample is in Prometheus.
func TestAgentAsAdministratorAllOK(t *testing.T) {
	needServers(t)
	ctx := context.Background()
	prefix := uniq(t)
	esc := esSection(t, testES.URL, testES.User, testES.Password, prefix)
	r := Agent(ctx, esc, remoteWrite(testProm.URL+"/api/v1/write"), "c1", Options{Host: "node7"})
	out := output(t, r, testES.Password)
	if r.Problems() != 0 {
		t.Fatalf("%d problems as the administrator", r.Problems())
	}
	// Every call of the role on every kind, from the table.
	want := 0
	for _, u := range es.Uses {
		if u.Role == "jobsight_agent" {
			want += len(u.Calls)
		}
	}
	calls := 0
	for _, l := range r.Lines {
		if l.Store == "elasticsearch" && l.Call != "delete doc" {
			calls++
		}
	}
	if calls != want {
		t.Errorf("%d Elasticsearch calls checked, the table lists %d for jobsight_agent", calls, want)
	}
	month := time.Now().UTC().Format("2006.01")
	for _, s := range []string{
		"ok       elasticsearch create index (PUT /" + prefix + "-jobs-" + month + ")",
		"ok       elasticsearch bulk (POST /_bulk): wrote the empty document jobsight-check-node7",
		"ok       elasticsearch search (POST /" + prefix + "-nodes," + prefix + "-nodes-*/_search)",
		"ok       elasticsearch delete doc (DELETE /" + prefix + "-results-" + month + "/_doc/jobsight-check-node7): deleted",
		"ok       prometheus remote write (POST " + testProm.URL + "/api/v1/write)",
		"store check: ok",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("the output lacks %q", s)
		}
	}
	v, ok, err := stack.PromQuery(ctx, testProm.URL, SampleName+`{component="agent",host="node7",cluster="c1"}`)
	if err != nil || !ok || v < float64(time.Now().Add(-time.Hour).Unix()) {
		t.Errorf("the check's sample is not in Prometheus: %v %v %v", v, ok, err)
	}
	// A second run finds the indices made and is as clean.
	if r := Agent(ctx, esc, config.RemoteWrite{}, "", Options{Host: "node7"}); r.Problems() != 0 {
		t.Errorf("second run: %s", output(t, r))
	}
}

// A store that is down: one line naming the URL and the reason, no more
// calls against it, and the check fails.
func TestStoresDown(t *testing.T) {
	down := "http://127.0.0.1:" + closedPort(t)
	r := Agent(context.Background(), esSection(t, down, "", "", "jobsight-x"), remoteWrite(down+"/api/v1/write"), "", Options{Host: "n1"})
	out := output(t, r)
	if r.Problems() != 2 {
		t.Errorf("%d problems, want 2 (Elasticsearch and Prometheus unreachable)", r.Problems())
	}
	for _, s := range []string{
		"MISSING  elasticsearch info (GET /): unreachable: " + down + ": connection refused",
		"skipped  elasticsearch 20 more calls: not made: fix the line above first",
		"MISSING  prometheus remote write (POST " + down + "/api/v1/write): unreachable: " + down + "/api/v1/write: connection refused",
		"store check: 2 of 2 calls failed",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("the output lacks %q", s)
		}
	}
}

// closedPort is a port of 127.0.0.1 nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	p, err := stack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(p)
}

// A wrong password is named as such, not as a missing privilege.
func TestWrongPassword(t *testing.T) {
	needServers(t)
	r := Agent(context.Background(), esSection(t, testES.URL, testES.User, "not-the-password-42", uniq(t)), config.RemoteWrite{}, "", Options{Host: "n1"})
	out := output(t, r, "not-the-password-42")
	if r.Problems() != 1 {
		t.Errorf("%d problems, want 1", r.Problems())
	}
	// ZincSearch answers GET / without asking for credentials, so the
	// refusal comes with the first call on an index.
	want := fmt.Sprintf("authentication failed for user %q (status 401)", testES.User)
	if !strings.Contains(out, want) {
		t.Errorf("the output lacks %q", want)
	}
	if strings.Contains(out, "missing index privilege") || strings.Contains(out, "missing cluster privilege") {
		t.Errorf("a wrong password is reported as a missing privilege")
	}
}

// Prometheus without --web.enable-remote-write-receiver answers 404; the
// check says what to enable, on which server.
func TestRemoteWriteReceiverOff(t *testing.T) {
	needServers(t)
	u := promNoRW.URL + "/api/v1/write"
	r := &Report{}
	CheckRemoteWrite(context.Background(), r, RemoteWrite{Conn: remoteWrite(u), Component: "collector"}, Options{Host: "n1"})
	out := output(t, r)
	want := "MISSING  prometheus remote write (POST " + u + "): remote write is not enabled on " + u + " (--web.enable-remote-write-receiver)"
	if !strings.Contains(out, want) || r.Problems() != 1 {
		t.Errorf("the output lacks %q", want)
	}
}

// zincUser makes a ZincSearch user whose role has exactly perms and
// returns its name and password.
func zincUser(t *testing.T, perms []string) (user, password string) {
	t.Helper()
	name := uniq(t)
	password = "pw-" + name
	user, err := testES.ZincUser(name, password, perms)
	if err != nil {
		t.Fatal(err)
	}
	return user, password
}

// zincPermission is a ZincSearch permission (one per API route), the
// calls of the table it gates and the Elasticsearch privilege the check
// must name for them. ZincSearch has no per-index privileges and no
// permission on GET / (the monitor privilege), so the index and cluster
// privileges it cannot express are tested against the fake below.
type zincPermission struct {
	perm      string
	calls     []string
	privilege string
}

var agentZinc = []zincPermission{
	{"index.Exists", []string{"index exists"}, "view_index_metadata"},
	{"index.CreateES", []string{"create index"}, "create_index"},
	{"index.GetESMapping", []string{"get mapping"}, "view_index_metadata"},
	{"index.SetMapping", []string{"put mapping"}, "indices:admin/mapping/put"},
	{"document.ESBulk", []string{"bulk"}, "index"},
	{"search.SearchDSL", []string{"search", "search by ids"}, "read"},
}

func permsOf(ps []zincPermission, extra ...string) []string {
	out := append([]string{}, extra...)
	for _, p := range ps {
		out = append(out, p.perm)
	}
	return out
}

// A user with exactly the agent's permissions passes (its scratch
// document stays: it may not delete); with each one taken away in turn,
// the lines of the calls it gates name the Elasticsearch privilege, and
// only those.
func TestAgentLackingEachPrivilege(t *testing.T) {
	needServers(t)
	ctx := context.Background()
	prefix := uniq(t)
	// The indices exist (setup ran), so each call is asked on its own.
	admin := esSection(t, testES.URL, testES.User, testES.Password, prefix)
	if r := Agent(ctx, admin, config.RemoteWrite{}, "", Options{Host: "setup"}); r.Problems() != 0 {
		t.Fatalf("setup: %s", output(t, r))
	}

	user, pw := zincUser(t, permsOf(agentZinc))
	r := Agent(ctx, esSection(t, testES.URL, user, pw, prefix), config.RemoteWrite{}, "", Options{Host: "n1"})
	out := output(t, r, pw)
	if r.Problems() != 0 {
		t.Errorf("with exactly the agent's permissions: %d problems", r.Problems())
	}
	if !strings.Contains(out, "note     elasticsearch delete doc") || !strings.Contains(out, "left in place: the credential may not delete documents") {
		t.Errorf("the scratch document's line does not say it stays")
	}

	for i, missing := range agentZinc {
		t.Run(missing.perm, func(t *testing.T) {
			perms := permsOf(append(append([]zincPermission{}, agentZinc[:i]...), agentZinc[i+1:]...))
			user, pw := zincUser(t, perms)
			r := Agent(ctx, esSection(t, testES.URL, user, pw, prefix), config.RemoteWrite{}, "", Options{Host: "n1"})
			out := output(t, r, pw)
			gatedLines := 0
			for _, l := range r.Lines {
				gated := false
				for _, c := range missing.calls {
					gated = gated || l.Call == c
				}
				if gated {
					gatedLines++
				}
				switch {
				case gated && l.Status != Problem:
					t.Errorf("without %s the line of %s is %q", missing.perm, l.Call, l)
				case gated && !strings.Contains(l.Detail, "missing index privilege "+missing.privilege+" on "+prefix+"-"):
					t.Errorf("without %s the line of %s does not name %s: %q", missing.perm, l.Call, missing.privilege, l)
				case !gated && l.Status == Problem:
					t.Errorf("without %s another call fails: %q", missing.perm, l)
				}
			}
			if r.Problems() != gatedLines || gatedLines < 2 { // on the job, node and result indices
				t.Errorf("%d problems, want %d", r.Problems(), gatedLines)
			}
			if !strings.Contains(out, "store check: ") || strings.Contains(out, "store check: ok") {
				t.Errorf("the last line does not say the check failed")
			}
		})
	}
}

// The collector's own index is written by id (index doc): without
// ZincSearch's permission for it, that line names `index` on the
// collector's index. Lost jobs and retention are off here (their calls
// are listed as skipped, saying which option turns them on).
func TestCollectorCalls(t *testing.T) {
	needServers(t)
	ctx := context.Background()
	prefix := uniq(t)
	base := Elasticsearch{Role: "jobsight_collector", Bases: JobBases(esSection(t, testES.URL, "", "", prefix)),
		Skip: map[string]string{}}
	base.Bases[es.KindClusterState] = Base{Name: prefix + "-cluster-state", Mapping: []byte(`{"properties":{"cluster":{"type":"keyword"}}}`)}
	for _, k := range []string{"job/search", "job/bulk", "job/bulk create", "node/search", "job/list monthly", "job/delete index",
		"node/list monthly", "node/delete index", "result/list monthly", "result/delete index"} {
		base.Skip[k] = "off in this test"
	}
	perms := []string{"index.Exists", "index.CreateES", "index.GetESMapping", "index.SetMapping", "document.CreateUpdate"}
	for _, tc := range []struct {
		perms []string
		want  string
	}{
		{perms, ""},
		{perms[:4], "MISSING  elasticsearch index doc (PUT /" + prefix + "-cluster-state/_doc/jobsight-check-n1): missing index privilege index on " + prefix + "-cluster-state"},
	} {
		user, pw := zincUser(t, tc.perms)
		e := base
		e.Conn = esSection(t, testES.URL, user, pw, prefix).Elasticsearch
		r := &Report{}
		CheckElasticsearch(ctx, r, e, Options{Host: "n1"})
		out := output(t, r, pw)
		if tc.want == "" && r.Problems() != 0 || tc.want != "" && (r.Problems() != 1 || !strings.Contains(out, tc.want)) {
			t.Errorf("permissions %v: want %q", tc.perms, tc.want)
		}
		if !strings.Contains(out, "skipped  elasticsearch delete index (DELETE /"+prefix+"-jobs-1970.01): not made by this configuration: off in this test") {
			t.Errorf("the skipped retention call is not listed")
		}
	}
}
