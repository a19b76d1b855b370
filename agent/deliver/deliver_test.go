package deliver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/jobsight/jobsight/agent/config"
	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/spool"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/test/stack"
)

// servers are the real Elasticsearch-API server and Prometheus the tests
// write to, started once.
var servers *stack.Stack

func TestMain(m *testing.M) {
	code := func() int {
		if _, err := os.Stat(stack.PrometheusBin); err != nil {
			return m.Run() // tests report the missing prerequisite
		}
		dir, err := os.MkdirTemp("", "jobsight-deliver-")
		if err != nil {
			return 1
		}
		defer os.RemoveAll(dir)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		servers, err = stack.Up(ctx, dir, stack.Options{NoSlurm: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, "starting test servers:", err)
			return 1
		}
		defer servers.Down()
		return m.Run()
	}()
	os.Exit(code)
}

func need(t *testing.T) *stack.Stack {
	t.Helper()
	if servers == nil {
		stack.Unavailable(t, "needs Prometheus (%s) and the Elasticsearch-API server", stack.PrometheusBin)
	}
	return servers
}

// testConfig points the outputs at the given URLs, with indices of their
// own (so the tests can share a real cluster) and a spool in dir.
func testConfig(t *testing.T, esURL, promURL, spoolDir string) config.Config {
	t.Helper()
	cfg := config.Default()
	suffix := fmt.Sprintf("%d", rand.Uint32())
	cfg.Elasticsearch.JobIndex, cfg.Elasticsearch.NodeIndex = "jobsight-test-jobs-"+suffix, "jobsight-test-nodes-"+suffix
	cfg.Elasticsearch.URLs = []string{esURL}
	cfg.Elasticsearch.Timeout = 5 * time.Second
	if s := servers; s != nil && s.Elasticsearch.User != "" {
		pw := filepath.Join(t.TempDir(), "pw")
		if err := os.WriteFile(pw, []byte(s.Elasticsearch.Password), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg.Elasticsearch.Username, cfg.Elasticsearch.PasswordFile = s.Elasticsearch.User, pw
		cfg.Elasticsearch.CAFile = s.Elasticsearch.CACertFile
	}
	cfg.Prometheus.RemoteWriteURL = promURL + "/api/v1/write"
	cfg.Prometheus.Timeout = 5 * time.Second
	cfg.Spool.Dir = spoolDir
	cfg.OutputDir = t.TempDir()
	return cfg
}

// gauge reads a gauge's current value.
func gauge(g prometheus.Gauge) float64 {
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		return -1
	}
	return m.GetGauge().GetValue()
}

// deadURL is the URL of a port nothing listens on: a store that is down.
func deadURL(t *testing.T) string {
	t.Helper()
	port, err := stack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// testCluster is a cluster name of the test's own, so tests can share the
// servers (and a real cluster) without seeing each other's data.
func testCluster(prefix string) string {
	return fmt.Sprintf("%s%d", prefix, rand.Uint32()%100000)
}

func newOutputs(t *testing.T, cfg config.Config) *Outputs {
	t.Helper()
	o, err := New(context.Background(), cfg, monitor.NewHealth(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func sampleJob(cluster string, id uint64, submit time.Time) (jobmodel.Job, jobmodel.Node) {
	ident := jobmodel.Identity{Cluster: cluster, JobID: id}
	job := jobmodel.Job{DocID: ident.DocID(), SchemaVersion: 1, Source: jobmodel.SourceSlurm, Cluster: cluster,
		JobID: ident.Key(), SlurmJobID: id, State: jobmodel.StateCompleted, Final: true,
		SubmitTime: jobmodel.At(submit), StartTime: jobmodel.At(submit.Add(time.Second)), EndTime: jobmodel.At(submit.Add(time.Minute)),
		Nodes: []string{"n1"}, UpdatedAt: jobmodel.At(submit.Add(time.Minute))}
	job.CPU = &jobmodel.CPUUsage{CoreSeconds: jobmodel.Ptr(42.5)}
	node := jobmodel.Node{DocID: jobmodel.NodeDocID(job.DocID, "n1"), JobDocID: job.DocID, Cluster: cluster, JobID: job.JobID,
		Node: "n1", SubmitTime: job.SubmitTime, StartTime: job.StartTime, AgentState: jobmodel.AgentFinished, Final: true}
	return job, node
}

// getJob polls the job index for a document (writes become visible after
// a refresh interval).
func getJob(t *testing.T, o *Outputs, id string) jobmodel.Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := o.es.GetByIDs(context.Background(), jobmodel.SearchIndices(o.cfg.Elasticsearch.JobIndex), []string{id})
		if err == nil && got[id] != nil {
			var job jobmodel.Job
			if err := json.Unmarshal(got[id], &job); err != nil {
				t.Fatalf("stored %s does not decode: %v", id, err)
			}
			return job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job document %s never appeared (last error %v)", id, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// Both stores down for the whole job: everything goes to the spool, and
// the next agent on the node delivers it once they are back.
func TestStoresDownForTheWholeJobLoseNothing(t *testing.T) {
	st := need(t)
	spoolDir := t.TempDir()
	dead := deadURL(t)
	cluster := testCluster("down")
	down := newOutputs(t, testConfig(t, dead, dead, spoolDir))

	job, node := sampleJob(cluster, 7, time.Now().Add(-2*time.Minute))
	now := time.Now().UnixMilli()
	series := []monitor.Series{{Name: "jobsight_job_cpu_usage_seconds_total",
		Labels:  []monitor.Label{{Name: "cluster", Value: cluster}, {Name: "job_id", Value: "7"}, {Name: "node", Value: "n1"}},
		Samples: []monitor.Point{{TimestampMs: now - 1000, Value: 41}, {TimestampMs: now, Value: 42.5}}}}
	ctx := context.Background()
	if err := down.PushSeries(ctx, series); err == nil {
		t.Error("PushSeries to a dead Prometheus reported success")
	}
	if err := down.PutNode(ctx, node); err == nil {
		t.Error("PutNode to a dead Elasticsearch reported success")
	}
	if err := down.PutJob(ctx, job); err == nil {
		t.Error("PutJob to a dead Elasticsearch reported success")
	}
	if g := gauge(down.health.SpoolItems); g != 3 {
		t.Errorf("jobsight_agent_spool_items = %v after three failed writes, want 3", g)
	}
	if g := gauge(down.health.SpoolBytes); g < 100 {
		t.Errorf("jobsight_agent_spool_bytes = %v, want the spooled bytes", g)
	}
	down.Replay(ctx) // still down: nothing may be lost
	sp, err := spool.Open(spoolDir, spool.Options{MaxBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	stats, _ := sp.Stats()
	if stats.Items != 3 {
		t.Fatalf("spool holds %d items, want 3 (series, node, job)", stats.Items)
	}

	// The stores are back; the next agent on the node uses the same spool.
	cfg := testConfig(t, st.Elasticsearch.URL, st.Prometheus.URL, spoolDir)
	cfg.Elasticsearch.JobIndex, cfg.Elasticsearch.NodeIndex = down.cfg.Elasticsearch.JobIndex, down.cfg.Elasticsearch.NodeIndex
	up := newOutputs(t, cfg)
	up.Replay(ctx)
	if stats, _ := sp.Stats(); stats.Items != 0 {
		t.Errorf("spool still holds %d items after replay", stats.Items)
	}
	if g := gauge(up.health.SpoolItems); g != 0 {
		t.Errorf("jobsight_agent_spool_items = %v after replay, want 0", g)
	}
	got := getJob(t, up, job.DocID)
	if !got.Final || got.CPU == nil || *got.CPU.CoreSeconds != 42.5 {
		t.Errorf("replayed job document = %+v", got)
	}
	q := fmt.Sprintf(`jobsight_job_cpu_usage_seconds_total{cluster=%q}`, cluster)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if v, ok, _ := stack.PromQuery(context.Background(), st.Prometheus.URL, q); ok {
			if v != 42.5 {
				t.Errorf("replayed series value %v, want 42.5", v)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replayed series %s not in Prometheus", q)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// A document the store can never take is set aside, not retried forever
// and not lost; the good ones around it are delivered.
func TestBadDocumentInTheSpoolIsSetAsideAndTheRestDelivered(t *testing.T) {
	st := need(t)
	spoolDir := t.TempDir()
	o := newOutputs(t, testConfig(t, st.Elasticsearch.URL, st.Prometheus.URL, spoolDir))
	sp, err := spool.Open(spoolDir, spool.Options{MaxBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	cluster := testCluster("bad")
	var good []string
	for i, id := range []uint64{1, 2, 3} {
		job, _ := sampleJob(cluster, id, time.Now().Add(-time.Hour))
		body, _ := json.Marshal(job)
		if i == 1 {
			bad := store.Doc{Kind: store.KindJobDoc, Index: o.cfg.Elasticsearch.JobIndex, ID: cluster + ":bad", Body: []byte(`{"doc_id": "truncated`)}
			if err := sp.EnqueueDoc(targetES, bad); err != nil {
				t.Fatal(err)
			}
		}
		if err := sp.EnqueueDoc(targetES, store.Doc{Kind: store.KindJobDoc, Index: o.cfg.Elasticsearch.JobIndex, ID: job.DocID, Body: body}); err != nil {
			t.Fatal(err)
		}
		good = append(good, job.DocID)
	}
	o.Replay(context.Background())
	for _, id := range good {
		getJob(t, o, id)
	}
	rejected, _ := filepath.Glob(filepath.Join(spoolDir, "rejected", "*"))
	if len(rejected) != 1 {
		t.Errorf("rejected/ holds %d files, want the 1 bad document kept for inspection", len(rejected))
	}
	if stats, _ := sp.Stats(); stats.Items != 0 {
		t.Errorf("spool still holds %d items", stats.Items)
	}
}

// Hostile strings are stored and read back exactly.
func TestHostileStringsRoundTrip(t *testing.T) {
	st := need(t)
	o := newOutputs(t, testConfig(t, st.Elasticsearch.URL, st.Prometheus.URL, t.TempDir()))
	job, _ := sampleJob(testCluster("hostile"), 9, time.Now())
	job.Name = strings.Repeat(`"quoted' \n newline ünïcødé 名前 {"json":1} </script> `, 200)[:10240]
	job.Account = "acct\"\n\\evil"
	job.Partition = strings.Repeat("p", 2000)
	if err := o.PutJob(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	got := getJob(t, o, job.DocID)
	if got.Name != job.Name || got.Account != job.Account || got.Partition != job.Partition {
		t.Errorf("hostile strings changed in the store:\nname %q\naccount %q", got.Name[:80], got.Account)
	}
}

// A Slurm job id reused by a new job never overwrites the older job.
func TestReusedJobIDKeepsTheOlderJob(t *testing.T) {
	st := need(t)
	cfg := testConfig(t, st.Elasticsearch.URL, st.Prometheus.URL, t.TempDir())
	cluster := testCluster("reuse")
	older, _ := sampleJob(cluster, 17, time.Now().Add(-48*time.Hour))
	first := newOutputs(t, cfg)
	if err := first.PutJob(context.Background(), older); err != nil {
		t.Fatal(err)
	}
	getJob(t, first, older.DocID)

	newer, newerNode := sampleJob(cluster, 17, time.Now().Add(-time.Minute))
	newer.CPU.CoreSeconds = jobmodel.Ptr(1.0)
	second := newOutputs(t, cfg) // a later agent, with no memory of the first
	if err := second.PutNode(context.Background(), newerNode); err != nil {
		t.Fatal(err)
	}
	if err := second.PutJob(context.Background(), newer); err != nil {
		t.Fatal(err)
	}
	want := jobmodel.ReuseDocID(newer.DocID, newer.SubmitTime.Time)
	got := getJob(t, second, want)
	if got.DocID != want || *got.CPU.CoreSeconds != 1 {
		t.Errorf("newer job stored as %q with %v core-seconds, want %q", got.DocID, *got.CPU.CoreSeconds, want)
	}
	if kept := getJob(t, second, older.DocID); *kept.CPU.CoreSeconds != 42.5 {
		t.Errorf("the older job's document was overwritten: %+v", kept.CPU)
	}
	nodes, err := second.NodeDocs(context.Background(), newer.DocID)
	deadline := time.Now().Add(20 * time.Second)
	for err == nil && len(nodes) == 0 && time.Now().Before(deadline) {
		time.Sleep(300 * time.Millisecond)
		nodes, err = second.NodeDocs(context.Background(), newer.DocID)
	}
	if len(nodes) != 1 || nodes[0].JobDocID != want || nodes[0].DocID != jobmodel.NodeDocID(want, "n1") {
		t.Errorf("node documents of the newer job: %+v, %v", nodes, err)
	}
}

// Without Elasticsearch, the job document goes to a file.
func TestJobDocumentFileWithoutElasticsearch(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Spool.Dir, cfg.OutputDir = t.TempDir(), t.TempDir()
	o := newOutputs(t, cfg)
	job, _ := sampleJob("local", 5, time.Now())
	if err := o.PutJob(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(o.Where(job.DocID))
	if err != nil {
		t.Fatal(err)
	}
	var back jobmodel.Job
	if err := json.Unmarshal(b, &back); err != nil || back.DocID != job.DocID {
		t.Fatalf("file %s: %v %+v", o.Where(job.DocID), err, back.DocID)
	}
}

func counterSeries(cluster string, fromMs int64, n int, start float64) []monitor.Series {
	pts := make([]monitor.Point, n)
	for i := range pts {
		pts[i] = monitor.Point{TimestampMs: fromMs + int64(i)*1000, Value: start + float64(i)}
	}
	return []monitor.Series{{Name: "jobsight_job_cpu_usage_seconds_total",
		Labels:  []monitor.Label{{Name: "cluster", Value: cluster}, {Name: "job_id", Value: "1"}, {Name: "node", Value: "n1"}},
		Samples: pts}}
}

func promCount(t *testing.T, promURL, cluster string, want float64) {
	t.Helper()
	q := fmt.Sprintf(`count_over_time(jobsight_job_cpu_usage_seconds_total{cluster=%q}[1h])`, cluster)
	deadline := time.Now().Add(15 * time.Second)
	var got float64
	for time.Now().Before(deadline) {
		if v, ok, _ := stack.PromQuery(context.Background(), promURL, q); ok {
			if got = v; got == want {
				return
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Errorf("Prometheus holds %v samples of %s, want %v", got, cluster, want)
}

// Samples spooled during an outage land before a newer batch: Prometheus
// refuses samples older than a series' newest, so order matters.
func TestSpooledSamplesLandBeforeANewerPush(t *testing.T) {
	st := need(t)
	spoolDir := t.TempDir()
	dead := deadURL(t)
	cluster := testCluster("order")
	t0 := time.Now().Add(-10 * time.Minute).UnixMilli()

	down := newOutputs(t, testConfig(t, dead, dead, spoolDir))
	if err := down.PushSeries(context.Background(), counterSeries(cluster, t0, 10, 0)); err == nil {
		t.Fatal("push to a dead Prometheus succeeded")
	}
	cfg := testConfig(t, st.Elasticsearch.URL, st.Prometheus.URL, spoolDir)
	up := newOutputs(t, cfg)
	if err := up.PushSeries(context.Background(), counterSeries(cluster, t0+10_000, 10, 10)); err != nil {
		t.Fatal(err)
	}
	promCount(t, st.Prometheus.URL, cluster, 20)
}

// One store down does not hold the other's spooled data back.
func TestOneStoreDownDoesNotHoldTheOtherBack(t *testing.T) {
	st := need(t)
	spoolDir := t.TempDir()
	dead := deadURL(t)
	cluster := testCluster("split")
	o := newOutputs(t, testConfig(t, dead, dead, spoolDir))
	job, _ := sampleJob(cluster, 3, time.Now().Add(-time.Hour))
	ctx := context.Background()
	_ = o.PutJob(ctx, job) // spooled first: Elasticsearch is down
	_ = o.PushSeries(ctx, counterSeries(cluster, time.Now().Add(-5*time.Minute).UnixMilli(), 5, 0))

	// Prometheus is back, Elasticsearch is not.
	half := newOutputs(t, testConfig(t, dead, st.Prometheus.URL, spoolDir))
	half.Replay(ctx)
	promCount(t, st.Prometheus.URL, cluster, 5)
	sp, _ := spool.Open(spoolDir, spool.Options{MaxBytes: 64 << 20})
	if stats, _ := sp.Stats(); stats.Items != 1 || stats.ItemsByKind[store.KindJobDoc] != 1 {
		t.Errorf("spool holds %+v, want just the job document waiting for Elasticsearch", stats.ItemsByKind)
	}
}

// A spooled document older than what the store holds is dropped, not
// replayed over the newer version (e.g. the final node document written
// right after an outage).
func TestReplayNeverOverwritesANewerDocument(t *testing.T) {
	st := need(t)
	spoolDir := t.TempDir()
	dead := deadURL(t)
	cluster := testCluster("newer")
	cfg := testConfig(t, st.Elasticsearch.URL, st.Prometheus.URL, spoolDir)
	deadCfg := cfg
	deadCfg.Elasticsearch.URLs = []string{dead}

	job, _ := sampleJob(cluster, 4, time.Now().Add(-time.Hour))
	old := job
	old.Final, old.State, old.UpdatedAt = false, jobmodel.StateRunning, jobmodel.At(time.Now().Add(-time.Minute))
	ctx := context.Background()
	_ = newOutputs(t, deadCfg).PutJob(ctx, old) // the running version, spooled during the outage

	up := newOutputs(t, cfg)
	job.UpdatedAt = jobmodel.At(time.Now())
	if err := up.PutJob(ctx, job); err != nil { // the final version, written directly
		t.Fatal(err)
	}
	getJob(t, up, job.DocID)
	up.Replay(ctx)
	time.Sleep(2 * time.Second) // let a wrongly replayed write become visible
	if got := getJob(t, up, job.DocID); !got.Final || got.State != jobmodel.StateCompleted {
		t.Errorf("stored job is final=%v state=%s: an older spooled version overwrote the newer one", got.Final, got.State)
	}
}

// Wrong credentials are a configuration to fix, not bad documents: the
// documents wait in the spool (never set aside in rejected/), the refusal
// is counted, and they arrive once the credentials are right.
func TestWrongCredentialsKeepDocumentsInTheSpool(t *testing.T) {
	st := need(t)
	if st.Elasticsearch.User == "" {
		t.Skip("the Elasticsearch under test has no authentication")
	}
	spoolDir := t.TempDir()
	cluster := testCluster("creds")
	cfg := testConfig(t, st.Elasticsearch.URL, st.Prometheus.URL, spoolDir)
	wrong := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(wrong, []byte("not-the-password"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := cfg.Elasticsearch.PasswordFile
	cfg.Elasticsearch.PasswordFile = wrong
	bad := newOutputs(t, cfg)
	job, _ := sampleJob(cluster, 9, time.Now().Add(-time.Minute))
	ctx := context.Background()
	if err := bad.PutJob(ctx, job); err == nil {
		t.Fatal("PutJob with a wrong password reported success")
	}
	bad.Replay(ctx)
	if n := bad.Pending(); n != 1 {
		t.Errorf("spool holds %d items after a refused replay, want the job document", n)
	}
	if rejected, _ := filepath.Glob(filepath.Join(spoolDir, "rejected", "*")); len(rejected) != 0 {
		t.Errorf("refused for its credentials, the document was set aside: %v", rejected)
	}
	var m dto.Metric
	_ = bad.health.SinkRefused.WithLabelValues("elasticsearch").Write(&m)
	if m.GetCounter().GetValue() < 1 {
		t.Error("the refusal was not counted")
	}
	cfg.Elasticsearch.PasswordFile = good
	fixed := newOutputs(t, cfg)
	fixed.Replay(ctx)
	if n := fixed.Pending(); n != 0 {
		t.Errorf("%d items left after the credentials were fixed", n)
	}
	if got := getJob(t, fixed, job.DocID); got.DocID != job.DocID {
		t.Errorf("job document not delivered: %+v", got)
	}
}
