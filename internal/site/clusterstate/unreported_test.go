package clusterstate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/store/promremote"
	"github.com/jobsight/jobsight/test/stack"
)

// staticSource answers with fixed sinfo and squeue output.
type staticSource struct {
	sinfo, squeue []byte
	calls         atomic.Uint64
}

func (s *staticSource) Nodes(context.Context) ([]byte, error) { s.calls.Add(1); return s.sinfo, nil }
func (s *staticSource) Jobs(context.Context) ([]byte, error)  { s.calls.Add(1); return s.squeue, nil }
func (s *staticSource) Calls() uint64                         { return s.calls.Load() }

// recordingReceiver is a remote-write endpoint that keeps the batches it
// is sent, decoded (not a Prometheus: the test reads exactly what the
// collector wrote, staleness markers included).
type recordingReceiver struct {
	mu      sync.Mutex
	batches [][]promremote.Series
}

func (r *recordingReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	payload, err := snappy.Decode(nil, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	series, err := promremote.Decode(payload)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.batches = append(r.batches, series)
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// last returns the unreported series of the last batch: value by
// "node" label ("" for the cluster total), and the series ended by a
// staleness marker.
func (r *recordingReceiver) last(t *testing.T) (values map[string]float64, ended []string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.batches) == 0 {
		t.Fatal("no batch was written")
	}
	values = map[string]float64{}
	for _, s := range r.batches[len(r.batches)-1] {
		if s.Name != MetricNodeUnreportedJobs && s.Name != MetricUnreportedJobs {
			continue
		}
		node := ""
		for _, l := range s.Labels {
			if l.Name == "node" {
				node = l.Value
			}
		}
		if s.Name == MetricNodeUnreportedJobs && node == "" {
			t.Errorf("%s without a node label: %+v", s.Name, s.Labels)
		}
		v := s.Samples[0].Value
		if math.Float64bits(v) == math.Float64bits(staleNaN) {
			ended = append(ended, s.Name+"/"+node)
			continue
		}
		values[node] = v
	}
	slices.Sort(ended)
	return values, ended
}

// num is a v0.0.42+ number ({"set","infinite","number"}).
func num(n int64) string { return fmt.Sprintf(`{"set":true,"infinite":false,"number":%d}`, n) }

// squeueJob is one job record in the v0.0.45 shape (Slurm 26.05).
func squeueJob(id int64, state, nodes string, start time.Time, extra string) string {
	st := `["` + strings.ReplaceAll(state, ",", `","`) + `"]`
	s := fmt.Sprintf(`{"job_id":%d,"job_state":%s,"nodes":%q,"partition":"p","start_time":%s,"cpus":%s`,
		id, st, nodes, num(start.Unix()), num(1))
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// Running jobs on several nodes, read by a real collector poll against a
// real Elasticsearch-API server holding the agents' node documents: a node
// is counted for each running job (past unmonitored_after) without its
// node document; array and heterogeneous jobs are matched by their keys;
// a job across two nodes with a report from one counts on the other; a
// document of an older job that held the id, another cluster's document
// and a document under another node name are no report; a job started a
// minute ago, one still configuring and one without nodes are not counted.
// The gauges go out per node and as a cluster total, the cluster document
// lists the nodes, a node that reports later leaves the gauge, and with
// the store unreadable the gauges are absent (ended), not 0, and the log
// says why.
func TestUnreportedJobs(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, suffix := stack.TestElasticsearch(t, ctx)
	ix := "-unrep-" + suffix
	var logBuf bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logBuf}, nil))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	es, err := elasticsearch.New(elasticsearch.Config{URLs: []string{srv.URL}, Username: srv.User, Password: srv.Password,
		CACertFile: srv.CACertFile, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	nodeIx := "jobsight-nodes" + ix
	if err := es.EnsureIndex(ctx, nodeIx, jobmodel.NodeMapping()); err != nil {
		t.Fatal(err)
	}

	now := time.Now().UTC().Truncate(time.Second)
	hourAgo := now.Add(-time.Hour)
	nodeDoc := func(cluster, key, node string, updated time.Time) store.Doc {
		jobDoc := cluster + ":" + key
		n := jobmodel.Node{DocID: jobmodel.NodeDocID(jobDoc, node), JobDocID: jobDoc, SchemaVersion: jobmodel.SchemaVersion,
			Source: jobmodel.SourceSlurm, Cluster: cluster, JobID: key, Node: node, StartTime: jobmodel.At(updated.Add(-time.Minute)),
			AgentState: jobmodel.AgentRunning, UpdatedAt: jobmodel.At(updated)}
		b, _ := json.Marshal(n)
		return store.Doc{Kind: store.KindNodeDoc, Index: nodeIx, ID: n.DocID, Body: b}
	}
	fresh := now.Add(-30 * time.Second)
	seed := []store.Doc{
		nodeDoc("csclu", "1001", "un1", fresh),                          // 1001 on un[1-2]: un1 reports, un2 does not
		nodeDoc("othercl", "1001", "un2", fresh),                        // another cluster's 1001 on un2
		nodeDoc("csclu", "10011", "un2", fresh),                         // a key is not a prefix
		nodeDoc("csclu", "2000_3", "un3", fresh),                        // array task 3 reports
		nodeDoc("csclu", "2000_3", "un4", fresh),                        // task 3 does not run on un4: no report for task 4
		nodeDoc("csclu", "2000", "un4", fresh),                          // the array's own id is no task's key
		nodeDoc("csclu", "2000_4", "un4", hourAgo.Add(-10*time.Minute)), // an older task 2000_4 (id reused)
		nodeDoc("csclu", "3000+0", "un1", fresh),                        // het component 0 reports
		nodeDoc("csclu", "3000", "un4", fresh),                          // the het job's own id is no component's key
		nodeDoc("csclu", "1003", "un5", now.Add(-48*time.Hour)),         // an older job 1003 (id reused)
		nodeDoc("othercl", "1004", "un5", fresh),                        // another cluster's 1004
		nodeDoc("csclu", "1008", "un1", fresh),                          // reports
		nodeDoc("csclu", "1009", "un3.example.org", fresh),              // the agent's node name is not Slurm's
	}
	docs := seed
	if f, err := es.Bulk(ctx, docs); err != nil || len(f) > 0 {
		t.Fatalf("storing the node documents: %v %v", err, f)
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	waitFor(t, func() bool {
		got, err := es.GetByIDs(ctx, nodeIx, ids)
		return err == nil && len(got) == len(ids)
	}, "the node documents to become searchable")

	sinfo := `{"meta":{},"errors":[],"nodes":[`
	for i := 1; i <= 5; i++ {
		if i > 1 {
			sinfo += ","
		}
		sinfo += fmt.Sprintf(`{"name":"un%d","state":"mixed","cpus":8,"alloc_cpus":2,"real_memory":1024,"partitions":["p"]}`, i)
	}
	sinfo += "]}"
	jobs := []string{
		squeueJob(1001, "RUNNING", "un[1-2]", hourAgo, ""),
		squeueJob(1002, "RUNNING", "un3", now.Add(-time.Minute), ""), // within the grace
		squeueJob(2003, "RUNNING", "un3", hourAgo, `"array_job_id":`+num(2000)+`,"array_task_id":`+num(3)),
		squeueJob(2004, "RUNNING", "un4", hourAgo, `"array_job_id":`+num(2000)+`,"array_task_id":`+num(4)),
		squeueJob(3000, "RUNNING", "un1", hourAgo, `"het_job_id":`+num(3000)+`,"het_job_offset":`+num(0)),
		squeueJob(3001, "RUNNING", "un4", hourAgo, `"het_job_id":`+num(3000)+`,"het_job_offset":`+num(1)),
		squeueJob(1003, "RUNNING", "un5", hourAgo, ""),
		squeueJob(1004, "RUNNING", "un5", hourAgo, ""),
		squeueJob(1005, "RUNNING", "", hourAgo, ""),                  // Slurm gave no nodes: skipped
		squeueJob(1006, "PENDING", "", time.Unix(0, 0), ""),          // not running
		squeueJob(1007, "RUNNING,CONFIGURING", "un2", hourAgo, ""),   // its nodes still boot
		squeueJob(1008, "RUNNING", "un1", now.Add(-2*time.Hour), ""), // reports
		squeueJob(1009, "RUNNING", "un3", hourAgo, ""),               // reported under another name
		squeueJob(1010, "COMPLETED", "un2", hourAgo, ""),             // ended
		squeueJob(1011, "RUNNING", "un[2-", hourAgo, ""),             // a host list that cannot be read: a problem
		squeueJob(1012, "RUNNING", "un2", time.Unix(0, 0), ""),       // start unknown (0): not counted
	}
	squeue := `{"meta":{"plugin":{"type":"openapi/v0.0.45"}},"errors":[],"jobs":[` + strings.Join(jobs, ",") + `]}`

	rcv := &recordingReceiver{}
	prom := httptest.NewServer(rcv)
	defer prom.Close()
	cfg := DefaultConfig()
	cfg.Cluster = "csclu"
	cfg.Prometheus.RemoteWriteURL = prom.URL + "/api/v1/write"
	cfg.Elasticsearch.URLs = []string{srv.URL}
	cfg.Elasticsearch.CAFile = srv.CACertFile
	cfg.Elasticsearch.Index = "jobsight-cluster-state" + ix
	cfg.Elasticsearch.JobIndex, cfg.Elasticsearch.NodeIndex = "jobsight-jobs"+ix, nodeIx
	if srv.User != "" {
		pw := filepath.Join(t.TempDir(), "pw")
		if err := os.WriteFile(pw, []byte(srv.Password), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg.Elasticsearch.Username, cfg.Elasticsearch.PasswordFile = srv.User, pw
	}
	cfg.Spool.Dir = filepath.Join(t.TempDir(), "spool")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Elasticsearch.UnmonitoredAfter != 5*time.Minute {
		t.Fatalf("unmonitored_after defaults to %s", cfg.Elasticsearch.UnmonitoredAfter)
	}
	clock := now
	c, err := New(cfg, Options{Source: &staticSource{sinfo: []byte(sinfo), squeue: []byte(squeue)}, Registerer: prometheus.NewRegistry(),
		Logger: logger, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}

	snap, err := c.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u := snap.Unreported
	if u == nil {
		t.Fatalf("no unreported check; log:\n%s", logBuf.String())
	}
	want := []UnreportedNode{
		{Node: "un2", Jobs: 1, Keys: []string{"1001"}},
		{Node: "un3", Jobs: 1, Keys: []string{"1009"}},
		{Node: "un4", Jobs: 2, Keys: []string{"2000_4", "3000+1"}},
		{Node: "un5", Jobs: 2, Keys: []string{"1003", "1004"}},
	}
	if fmt.Sprint(u.Nodes) != fmt.Sprint(want) || u.Jobs != 6 || u.Unchecked != 0 {
		t.Errorf("unreported: jobs %d nodes %v unchecked %d\nwant 6 jobs, nodes %v", u.Jobs, u.Nodes, u.Unchecked, want)
	}
	// 1001, 2000_3, 2000_4, 3000+0, 3000+1, 1003, 1004, 1008, 1009: not
	// 1002 (a minute old), 1005 (no nodes), 1007 (configuring), 1011 (its
	// host list cannot be read), 1012 (no start).
	if u.Checked != 9 {
		t.Errorf("checked %d jobs, want 9", u.Checked)
	}
	if !slices.ContainsFunc(snap.Problems, func(p string) bool { return strings.Contains(p, "job 1011: nodes") }) {
		t.Errorf("problems %v lack job 1011's host list", snap.Problems)
	}
	values, ended := rcv.last(t)
	wantValues := map[string]float64{"": 6, "un2": 1, "un3": 1, "un4": 2, "un5": 2}
	if fmt.Sprint(values) != fmt.Sprint(wantValues) || len(ended) != 0 {
		t.Errorf("series written: %v, ended %v; want %v", values, ended, wantValues)
	}
	var doc Document
	waitFor(t, func() bool {
		got, err := es.GetByIDs(ctx, cfg.Elasticsearch.Index, []string{DocID("csclu", now.Truncate(cfg.DocumentInterval))})
		if err != nil || len(got) != 1 {
			return false
		}
		for _, raw := range got {
			doc = Document{}
			_ = json.Unmarshal(raw, &doc)
		}
		return true
	}, "the cluster document")
	if doc.UnreportedJobs == nil || *doc.UnreportedJobs != 6 || doc.UnreportedNodeCount == nil || *doc.UnreportedNodeCount != 4 ||
		len(doc.UnreportedNodes) != 4 || doc.UnreportedNodes[2].Node != "un4" || !slices.Equal(doc.UnreportedNodes[2].JobIDs, []string{"2000_4", "3000+1"}) {
		t.Errorf("cluster document: unreported jobs %v nodes %v %+v", doc.UnreportedJobs, doc.UnreportedNodeCount, doc.UnreportedNodes)
	}
	if !strings.Contains(logBuf.String(), "nodes run jobs without an agent report") {
		t.Errorf("the log does not name the nodes:\n%s", logBuf.String())
	}

	// un2's agent reports 1001 now: un2 leaves the gauge (ended), the
	// others stay.
	late := nodeDoc("csclu", "1001", "un2", now)
	if f, err := es.Bulk(ctx, []store.Doc{late}); err != nil || len(f) > 0 {
		t.Fatalf("storing the late document: %v %v", err, f)
	}
	waitFor(t, func() bool {
		got, err := es.GetByIDs(ctx, nodeIx, []string{late.ID})
		return err == nil && len(got) == 1
	},
		"the late document to become searchable")
	clock = now.Add(30 * time.Second)
	if _, err := c.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	values, ended = rcv.last(t)
	if fmt.Sprint(values) != fmt.Sprint(map[string]float64{"": 5, "un3": 1, "un4": 2, "un5": 2}) ||
		!slices.Equal(ended, []string{MetricNodeUnreportedJobs + "/un2"}) {
		t.Errorf("after un2 reported: series %v, ended %v", values, ended)
	}

	// The store cannot be read: no gauge this poll (the last ones ended),
	// never a 0, and the log says why.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String()
	dead.Close()
	c.es, err = elasticsearch.New(elasticsearch.Config{URLs: []string{deadURL}, MaxRetries: -1, Timeout: 5 * time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	errsBefore := counterValue(t, c.metrics.errors.WithLabelValues("elasticsearch"))
	clock = now.Add(60 * time.Second)
	snap, err = c.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Unreported != nil {
		t.Errorf("store down: unreported %+v, want none", snap.Unreported)
	}
	values, ended = rcv.last(t)
	wantEnded := []string{MetricUnreportedJobs + "/", MetricNodeUnreportedJobs + "/un3", MetricNodeUnreportedJobs + "/un4", MetricNodeUnreportedJobs + "/un5"}
	slices.Sort(wantEnded)
	if len(values) != 0 || !slices.Equal(ended, wantEnded) {
		t.Errorf("store down: series %v, ended %v; want none, ended %v", values, ended, wantEnded)
	}
	if counterValue(t, c.metrics.errors.WithLabelValues("elasticsearch")) <= errsBefore {
		t.Errorf("store down: no elasticsearch error counted")
	}
	logMu.Lock()
	logged := logBuf.String()
	logMu.Unlock()
	if !strings.Contains(logged, "unreported jobs: not checked") || !strings.Contains(logged, "reading the node documents of") {
		t.Errorf("store down: the log does not say why:\n%s", logged)
	}
	if d := NewDocument(snap, now, Health{}, 2); d.UnreportedJobs != nil || d.UnreportedNodeCount != nil || d.UnreportedNodes != nil {
		t.Errorf("store down: the document holds %v %v %v, want the fields absent", d.UnreportedJobs, d.UnreportedNodeCount, d.UnreportedNodes)
	}
	if b, _ := json.Marshal(NewDocument(snap, now, Health{}, 2)); bytes.Contains(b, []byte("unreported")) {
		t.Errorf("store down: the document names unreported fields: %s", b)
	}
}

// lockedWriter serialises writes to a buffer the test reads.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Whatever elasticsearch.unmonitored_after holds, the configuration either
// parses to 0 (off) or a value within 1m-24h, or is refused with an error
// naming the option; nothing panics.
func FuzzUnmonitoredAfter(f *testing.F) {
	for _, s := range []string{"5m", "0", "0s", "1m", "24h", "59s", "24h0m1s", "-1m", "soon", "1e3", "300", "9223372036854775807ns",
		"99999999999h", "1m\nlost_after: 1s", "{x: 1}", "", "'5m'", "\"5m\"", "[5m]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		c, err := ParseConfig(strings.NewReader("cluster: c1\nelasticsearch:\n  unmonitored_after: " + v + "\n"))
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatalf("%q: an empty error", v)
			}
			return
		}
		if u := c.Elasticsearch.UnmonitoredAfter; u != 0 && (u < MinUnmonitoredAfter || u > MaxUnmonitoredAfter) {
			t.Fatalf("%q: accepted %s, outside 1m-24h", v, u)
		}
	})
}

// The series and the document of a check: every node with unreported jobs
// has its series, the cluster total is written at 0 too, and the document
// lists the first 100 nodes with the count of all; without a check
// neither series nor fields exist.
func TestUnreportedSeriesAndDocument(t *testing.T) {
	t.Parallel()
	s := &Snapshot{Cluster: "c", Time: time.Unix(1795455000, 0)}
	count := func() (total, nodes int) {
		for _, se := range Series(s, Health{}, false) {
			switch se.Name {
			case MetricUnreportedJobs:
				total++
			case MetricNodeUnreportedJobs:
				nodes++
			}
		}
		return
	}
	if total, nodes := count(); total != 0 || nodes != 0 {
		t.Errorf("not checked: %d total and %d node series", total, nodes)
	}
	s.Unreported = &Unreported{}
	if total, nodes := count(); total != 1 || nodes != 0 {
		t.Errorf("nothing unreported: %d total and %d node series, want the total (0) only", total, nodes)
	}
	d := NewDocument(s, s.Time, Health{}, 2)
	if d.UnreportedJobs == nil || *d.UnreportedJobs != 0 || d.UnreportedNodeCount == nil || *d.UnreportedNodeCount != 0 || d.UnreportedNodes != nil {
		t.Errorf("nothing unreported: document %v %v %v", d.UnreportedJobs, d.UnreportedNodeCount, d.UnreportedNodes)
	}
	for i := range 150 {
		s.Unreported.Nodes = append(s.Unreported.Nodes, UnreportedNode{Node: fmt.Sprintf("n%03d", i), Jobs: 1, Keys: []string{fmt.Sprint(i)}})
	}
	s.Unreported.Jobs = 150
	if total, nodes := count(); total != 1 || nodes != 150 {
		t.Errorf("150 nodes: %d total and %d node series", total, nodes)
	}
	d = NewDocument(s, s.Time, Health{}, 2)
	if *d.UnreportedJobs != 150 || *d.UnreportedNodeCount != 150 || len(d.UnreportedNodes) != maxUnreportedNodes || d.UnreportedNodes[99].Node != "n099" {
		t.Errorf("150 nodes: document %d jobs, %d nodes, %d listed", *d.UnreportedJobs, *d.UnreportedNodeCount, len(d.UnreportedNodes))
	}
	m := string(Mapping())
	for _, f := range []string{`"unreported_jobs":{"type":"long"}`, `"unreported_nodes":{"properties":{"job_ids":{"ignore_above"`} {
		if !strings.Contains(m, f) {
			t.Errorf("mapping lacks %s", f)
		}
	}
}

// One check asks about at most maxCheckedPairs (job, node) pairs: a job
// with more nodes than that is left unchecked (and counted so), never
// sent as a search the store would truncate.
func TestUnreportedBound(t *testing.T) {
	t.Parallel()
	now := time.Unix(1795455000, 0)
	c := &Collector{cfg: DefaultConfig()}
	snap := &Snapshot{Cluster: "c", Time: now, Running: []RunningJob{
		{Key: "1", Nodes: fmt.Sprintf("n[1-%d]", maxCheckedPairs+1), Start: now.Add(-time.Hour).Unix()},
		{Key: "2", Nodes: "n1", Start: now.Add(-time.Minute).Unix()}, // within the grace
		{Key: "3", Nodes: "n1", Start: 0},                            // no start
	}}
	// c.es is nil: a search would panic, and none is needed.
	u, err := c.unreported(context.Background(), snap, 5*time.Minute)
	if err != nil || u.Checked != 0 || u.Unchecked != 1 || u.Jobs != 0 || len(u.Nodes) != 0 {
		t.Errorf("unreported %+v, %v; want 1 job unchecked, nothing checked", u, err)
	}
}
