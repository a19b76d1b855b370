// Package thanos runs the agent's series sink and the datasource, unchanged,
// against a horizontally scalable series store: a Thanos Receive hashring
// of three receivers with replication factor 2 behind Thanos Query
// (test/stack StartThanosHashring; scripts/build-thanos.sh builds Thanos).
// A job's series go through the agent's real remote-write sink
// (agent/deliver, with its spool) to one receiver, with a tenant; two
// receivers are killed and restarted while the job runs; every sample is
// read back through the querier, deduplicated, and the real plugin
// executable (test/pluginhost) answers every query type that reads series
// from the querier with the tenant set.
package thanos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	agentconfig "github.com/jobsight/jobsight/agent/config"
	"github.com/jobsight/jobsight/agent/deliver"
	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/test/pluginhost"
	"github.com/jobsight/jobsight/test/stack"
)

const (
	tenant   = "team-a"
	cluster  = "tc1"
	jobID    = "4242"
	interval = 2 * time.Second // the agent's sampling interval in this job
	samples  = 40              // per series: 80 s of the job
	perPush  = 4               // samples per series in one push (the agent's push_interval: 8 s)
	cores    = 1.5             // CPU cores the job uses
	gib      = float64(1 << 30)
)

var nodes = []string{"n1", "n2"}

// point is the value of series name on node (gpu "" for job series) at
// sample i: distinct per sample, so a lost or doubled sample shows.
func point(name, node, gpu string, i int) float64 {
	n := float64(strings.IndexByte("12", node[1]))
	switch name {
	case "jobsight_job_cpu_usage_seconds_total": // cumulative: 1.5 cores
		return cores * interval.Seconds() * float64(i)
	case "jobsight_job_memory_used_bytes": // about 1 GiB
		return gib + n*4096 + float64(i)*4096
	case "jobsight_job_gpu_utilization_ratio":
		return gpuBase(node, gpu) + float64(i%2)*0.00001
	}
	panic(name)
}

// gpuBase is a GPU's utilisation: about 0.5, but GPU 1 of n2 idles
// (below the Hogging query's 0.05 threshold).
func gpuBase(node, gpu string) float64 {
	if node == "n2" && gpu == "1" {
		return 0.01
	}
	g, _ := strconv.Atoi(gpu)
	return 0.5 + float64(g)*0.0001
}

// jobSeries is the job's series as the agent's monitor hands them to its
// sink: the job series per node, the GPU series per node and GPU, each
// with samples [from, to).
func jobSeries(t0 time.Time, from, to int) []monitor.Series {
	var out []monitor.Series
	add := func(name, node, gpu string) {
		ls := []monitor.Label{{Name: "cluster", Value: cluster}, {Name: "job_id", Value: jobID}, {Name: "node", Value: node}}
		if gpu != "" {
			ls = append(ls, monitor.Label{Name: "gpu", Value: gpu})
		}
		s := monitor.Series{Name: name, Labels: ls}
		for i := from; i < to; i++ {
			s.Samples = append(s.Samples, monitor.Point{TimestampMs: t0.Add(time.Duration(i) * interval).UnixMilli(), Value: point(name, node, gpu, i)})
		}
		out = append(out, s)
	}
	for _, n := range nodes {
		add("jobsight_job_cpu_usage_seconds_total", n, "")
		add("jobsight_job_memory_used_bytes", n, "")
		add("jobsight_job_gpu_utilization_ratio", n, "0")
		add("jobsight_job_gpu_utilization_ratio", n, "1")
	}
	return out
}

func TestJobThroughThanosHashring(t *testing.T) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := stack.ThanosBinary(ctx)
	if err != nil {
		stack.Unavailable(t, "Thanos: %v", err)
	}
	dir := t.TempDir()
	// The receivers as docs/series-stores.md recommends for replication
	// factor 2: an out-of-order window, so that the second copy of a
	// write, forwarded after the first was acknowledged, is not dropped
	// when a newer write reached that replica first (seen in 1 run of 4
	// without it: receiver 1 "Error on ingesting out-of-order samples").
	th, err := stack.StartThanosHashring(ctx, filepath.Join(dir, "thanos"), stack.ThanosOptions{Bin: bin, EnforceTenancy: true, OutOfOrderWindow: 10 * time.Minute})
	if err != nil {
		t.Fatalf("starting the Thanos hashring: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(th.Logs(3000))
		}
		_ = th.Stop()
	})
	es, suffix := stack.TestElasticsearch(t, ctx)
	index := "jobsight-test-thanos-jobs-" + suffix
	t.Logf("hashring and stores up in %v", time.Since(began).Round(time.Millisecond))

	// The agent's sink, configured as an agent is: one remote-write URL
	// (receiver 0's), the tenant, a spool.
	cfg := agentconfig.Default()
	cfg.Prometheus.RemoteWriteURL = th.Receivers[0].WriteURL
	cfg.Prometheus.Tenant = tenant
	cfg.Prometheus.Timeout = 5 * time.Second
	cfg.Spool.Dir = filepath.Join(dir, "spool")
	cfg.OutputDir = filepath.Join(dir, "out")
	cfg.Elasticsearch.URLs = nil
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	health := monitor.NewHealth()
	sink, err := deliver.New(ctx, cfg, health, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()

	// The job started (samples-8)*interval ago: its first pushes are
	// late (an agent catching up), its last ones come as the samples are
	// taken, so the series reach "now" when the datasource asks.
	t0 := time.Now().Add(-time.Duration(samples-8) * interval).Truncate(time.Second)
	indexJob(t, ctx, es, index, t0)

	// The plugin executable is built and started now, not after the
	// job: its question about the running job must come right after the
	// last push (a 7 s build in between left the last timeline step with
	// two samples of its 10 s rate window: 1.2 cores where 3 were used).
	h := pluginhost.BuildAndStart(t, ctx)

	var spooled []int
	push := func(b int) {
		t.Helper()
		from, to := b*perPush, (b+1)*perPush
		if wait := time.Until(t0.Add(time.Duration(to-1) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		err := sink.PushSeries(ctx, jobSeries(t0, from, to))
		switch {
		case err == nil:
		case strings.Contains(err.Error(), "spool"):
			spooled = append(spooled, b)
			t.Logf("push %d: %v", b, err)
		default:
			t.Errorf("push %d: %v", b, err)
		}
	}
	// Pushes 0-2 with every receiver up. Receiver 2 (not the one the
	// agent writes to) is killed for pushes 3-4: what it held stays
	// readable from the other replica, and the writes are acknowledged by
	// the remaining replica of each series (Thanos' write quorum for
	// replication factor 2 is 1), so nothing is spooled; receiver 2 comes
	// back for push 5 without the samples of pushes 3-4. Then receiver 0,
	// the agent's only URL, is killed for pushes 6-7: no answer, the sink
	// spools push 6 and queues push 7 behind it; it comes back for push 8,
	// which first sends what the spool holds, in order.
	batches := samples / perPush
	for b := 0; b < batches; b++ {
		switch b {
		case 3:
			// Receiver 2 goes down once both copies of what was written
			// are stored (with a quorum of 1 the second is forwarded
			// after the acknowledgement): an outage in steady state.
			replicated(t, ctx, th, t0, 0, 3*perPush)
			if err := th.KillReceiver(2); err != nil {
				t.Fatal(err)
			}
			readBack(t, ctx, th, t0, 0, 3*perPush, "with receiver 2 down")
		case 5:
			if err := th.RestartReceiver(ctx, 2); err != nil {
				t.Fatal(err)
			}
		case 6:
			if err := th.KillReceiver(0); err != nil {
				t.Fatal(err)
			}
		case 8:
			if err := th.RestartReceiver(ctx, 0); err != nil {
				t.Fatal(err)
			}
		}
		push(b)
	}
	sink.Replay(ctx)
	if n := sink.Pending(); n != 0 {
		t.Errorf("%d batches still wait in the spool after the receivers came back", n)
	}
	if fmt.Sprint(spooled) != "[6 7]" {
		t.Errorf("pushes %v were spooled, want [6 7]: those while the agent's receiver was down, none while another was", spooled)
	}
	if n := rejectedBatches(t, cfg.Spool.Dir); n != 0 {
		t.Errorf("%d batches were set aside as refused", n)
	}

	readBack(t, ctx, th, t0, 0, samples, "after the job")
	replicas(t, ctx, th, t0)
	t.Logf("written and read back in %v", time.Since(began).Round(time.Millisecond))

	queryPlugin(t, ctx, h, th, es, index, t0)
	staleTimeline(t, ctx, h, th, es, index, t0)
	t.Logf("whole test %v", time.Since(began).Round(time.Millisecond))
}

// indexJob writes the running job's document, as its agent would have.
func indexJob(t *testing.T, ctx context.Context, es *stack.ESServer, index string, t0 time.Time) {
	t.Helper()
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{es.URL}, Username: es.User, Password: es.Password, CACertFile: es.CACertFile})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureIndex(ctx, index, jobmodel.JobMapping()); err != nil {
		t.Fatal(err)
	}
	job := jobmodel.Job{DocID: cluster + ":" + jobID, SchemaVersion: 1, Source: jobmodel.SourceSlurm, Cluster: cluster, JobID: jobID,
		User: "alice", Account: "physics", Partition: "gpu", Name: "train", State: "RUNNING",
		SubmitTime: jobmodel.At(t0.Add(-time.Minute)), StartTime: jobmodel.At(t0), Nodes: nodes,
		Sampling:  jobmodel.Sampling{IntervalSeconds: interval.Seconds(), Count: samples},
		UpdatedAt: jobmodel.At(time.Now())}
	job.Requested.CPUs = jobmodel.Ptr(int64(8))
	job.Requested.GPUs = jobmodel.Ptr(int64(4))
	job.Requested.MemoryBytes = jobmodel.Ptr(int64(8 << 30))
	body, _ := json.Marshal(job)
	if fails, err := c.Bulk(ctx, []store.Doc{{Kind: store.KindJobDoc, Index: index, ID: job.DocID, Body: body}}); err != nil || len(fails) > 0 {
		t.Fatalf("indexing the job: %v %v", err, fails)
	}
	for {
		raw, err := c.Search(ctx, index, []byte(`{"size":0,"track_total_hits":true,"query":{"match_all":{}}}`))
		if err == nil && strings.Contains(string(raw), `"value":1`) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the job index does not answer the job: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// rejectedBatches counts the spool's set-aside items (its rejected/
// directory).
func rejectedBatches(t *testing.T, spoolDir string) int {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(spoolDir, "rejected"))
	if err != nil {
		return 0
	}
	return len(ents)
}

// promAnswer is a Prometheus query API answer with a matrix.
type promAnswer struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	} `json:"data"`
	Warnings []string `json:"warnings"`
}

// rawSamples asks the querier, as tenant (none when empty), for every raw
// sample of the job's series at time at, deduplicated or not.
func rawSamples(ctx context.Context, th *stack.Thanos, tenant string, at time.Time, dedup bool) (promAnswer, error) {
	var ans promAnswer
	q := url.Values{"query": {fmt.Sprintf(`{__name__=~"jobsight_job_.+",cluster=%q,job_id=%q}[10m]`, cluster, jobID)},
		"time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}, "dedup": {strconv.FormatBool(dedup)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, th.Query.URL+"/api/v1/query?"+q.Encode(), nil)
	if err != nil {
		return ans, err
	}
	if tenant != "" {
		req.Header.Set(th.TenantHeader, tenant)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ans, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &ans); err != nil || ans.Status != "success" {
		return ans, fmt.Errorf("thanos query answered %d %s: %v", resp.StatusCode, b, err)
	}
	return ans, nil
}

// readBack checks that the querier answers samples [from, to) of every
// series of the job, each once, with the values written: no gap, no
// double, nothing else; and that without the tenant it answers none.
func readBack(t *testing.T, ctx context.Context, th *stack.Thanos, t0 time.Time, from, to int, when string) {
	t.Helper()
	want := map[string][]monitor.Point{}
	for _, s := range jobSeries(t0, from, to) {
		want[seriesKey(s.Name, s.Labels)] = s.Samples
	}
	at := t0.Add(time.Duration(to-1) * interval)
	var problems []string
	// Writes become readable as soon as acknowledged; poll briefly for a
	// querier that has just reconnected to a restarted receiver.
	deadline := time.Now().Add(15 * time.Second)
	for {
		problems = problems[:0]
		ans, err := rawSamples(ctx, th, tenant, at, true)
		if err != nil {
			problems = append(problems, err.Error())
		}
		got := map[string][]monitor.Point{}
		for _, r := range ans.Data.Result {
			if r.Metric[stack.ThanosReplicaLabel] != "" {
				problems = append(problems, fmt.Sprintf("deduplicated answer keeps the replica label: %v", r.Metric))
			}
			var ls []monitor.Label
			for k, v := range r.Metric {
				if k != "__name__" && k != "tenant_id" && k != stack.ThanosReplicaLabel {
					ls = append(ls, monitor.Label{Name: k, Value: v})
				}
			}
			if r.Metric["tenant_id"] != tenant {
				problems = append(problems, fmt.Sprintf("series %v: tenant_id %q, want %q", r.Metric, r.Metric["tenant_id"], tenant))
			}
			k := seriesKey(r.Metric["__name__"], ls)
			if _, dup := got[k]; dup {
				problems = append(problems, "series answered twice: "+k)
			}
			for _, v := range r.Values {
				ts, _ := v[0].(float64)
				val, _ := strconv.ParseFloat(fmt.Sprint(v[1]), 64)
				got[k] = append(got[k], monitor.Point{TimestampMs: int64(math.Round(ts * 1000)), Value: val})
			}
		}
		for k, w := range want {
			g := got[k]
			if len(g) != len(w) {
				problems = append(problems, fmt.Sprintf("%s: %d samples, want %d%s", k, len(g), len(w), missing(w, g)))
				continue
			}
			for i := range w {
				if g[i].TimestampMs != w[i].TimestampMs || g[i].Value != w[i].Value {
					problems = append(problems, fmt.Sprintf("%s sample %d: %v, want %v", k, i, g[i], w[i]))
					break
				}
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				problems = append(problems, "unexpected series "+k)
			}
		}
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if len(problems) > 0 {
		t.Errorf("%s: the querier's answer for samples %d-%d differs from what was written:\n%s", when, from, to-1, strings.Join(problems, "\n"))
		return
	}
	// Without the tenant header the querier (tenancy enforced) answers
	// the default tenant: none of the job's series.
	if ans, err := rawSamples(ctx, th, "", at, true); err != nil || len(ans.Data.Result) != 0 {
		t.Errorf("%s: without the tenant header the querier answers %d series (%v); want none", when, len(ans.Data.Result), err)
	}
	t.Logf("%s: all %d series × %d samples read back through the querier, deduplicated", when, len(want), to-from)
}

// replicas checks, on the answer without deduplication, that the job's
// series are held twice (replication factor 2) and that receiver 2's
// copies lack the samples of the pushes it missed: the kill was felt, and
// the complete deduplicated answer came from stitching the replicas.
func replicas(t *testing.T, ctx context.Context, th *stack.Thanos, t0 time.Time) {
	t.Helper()
	ans, err := rawSamples(ctx, th, tenant, t0.Add(time.Duration(samples-1)*interval), false)
	if err != nil {
		t.Error(err)
		return
	}
	copies := map[string]int{}
	short := 0
	for _, r := range ans.Data.Result {
		copies[r.Metric[stack.ThanosReplicaLabel]]++
		if r.Metric[stack.ThanosReplicaLabel] == th.Receivers[2].Replica && len(r.Values) < samples {
			short++
		}
	}
	want := 2 * len(jobSeries(t0, 0, 1))
	if len(ans.Data.Result) != want || short == 0 {
		t.Errorf("without deduplication: %d series (by replica %v), %d of receiver 2's short of samples; want %d series and receiver 2's copies short",
			len(ans.Data.Result), copies, short, want)
		return
	}
	t.Logf("without deduplication: %d series (by replica %v); %d of receiver 2's copies lack the samples written while it was down", len(ans.Data.Result), copies, short)
}

// replicated waits until, without deduplication, every series of the job
// is held by two receivers with each of its samples [from, to), and fails
// the test naming the copies that stay short.
func replicated(t *testing.T, ctx context.Context, th *stack.Thanos, t0 time.Time, from, to int) {
	t.Helper()
	want := map[string]int{}
	for _, s := range jobSeries(t0, from, to) {
		want[seriesKey(s.Name, s.Labels)] = len(s.Samples)
	}
	at := t0.Add(time.Duration(to-1) * interval)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var short []string
		ans, err := rawSamples(ctx, th, tenant, at, false)
		if err != nil {
			short = append(short, err.Error())
		}
		complete := map[string][]string{}
		for _, r := range ans.Data.Result {
			var ls []monitor.Label
			for k, v := range r.Metric {
				if k != "__name__" && k != "tenant_id" && k != stack.ThanosReplicaLabel {
					ls = append(ls, monitor.Label{Name: k, Value: v})
				}
			}
			k := seriesKey(r.Metric["__name__"], ls)
			n := 0
			for _, v := range r.Values {
				ts, _ := v[0].(float64)
				i := int(math.Round((ts*1000 - float64(t0.UnixMilli())) / float64(interval.Milliseconds())))
				if i >= from && i < to {
					n++
				}
			}
			if n == want[k] {
				complete[k] = append(complete[k], r.Metric[stack.ThanosReplicaLabel])
			}
		}
		for k := range want {
			if len(complete[k]) != 2 {
				short = append(short, fmt.Sprintf("%s: complete on %v", k, complete[k]))
			}
		}
		if len(short) == 0 {
			return
		}
		if time.Now().After(deadline) {
			sort.Strings(short)
			t.Errorf("samples %d-%d are not on two receivers after 20 s:\n%s", from, to-1, strings.Join(short, "\n"))
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// missing names the first few timestamps of want absent from got.
func missing(want, got []monitor.Point) string {
	have := map[int64]bool{}
	for _, p := range got {
		have[p.TimestampMs] = true
	}
	var m []string
	for _, p := range want {
		if !have[p.TimestampMs] && len(m) < 5 {
			m = append(m, time.UnixMilli(p.TimestampMs).Format("15:04:05"))
		}
	}
	if len(m) == 0 {
		return ""
	}
	return " (missing " + strings.Join(m, ", ") + ")"
}

func seriesKey(name string, ls []monitor.Label) string {
	parts := make([]string, 0, len(ls))
	for _, l := range ls {
		parts = append(parts, l.Name+"="+l.Value)
	}
	sort.Strings(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

// thanosDatasource is the datasource with Thanos Query as its Prometheus
// and the tenant set, and an Admin to ask it.
func thanosDatasource(th *stack.Thanos, es *stack.ESServer, index string) (pluginhost.Datasource, pluginhost.Caller) {
	jd, _ := json.Marshal(map[string]any{
		"elasticsearchUrl": es.URL, "elasticsearchUser": es.User, "elasticsearchJobIndex": index,
		"prometheusUrl": th.Query.URL, "prometheusTenant": tenant, "timeoutSeconds": 20,
	})
	ds := pluginhost.Datasource{ID: 1, UID: "thanos", Name: "Jobsight on Thanos", JSONData: jd,
		SecureJSONData: map[string]string{"elasticsearchPassword": es.Password}}
	return ds, pluginhost.Caller{User: &backend.User{Login: "admin", Name: "Admin", Role: "Admin"}}
}

// queryPlugin drives the real plugin executable with Thanos Query as its
// Prometheus and the tenant set, through every query type that reads the
// job's series.
func queryPlugin(t *testing.T, ctx context.Context, h *pluginhost.Host, th *stack.Thanos, es *stack.ESServer, index string, t0 time.Time) {
	t.Helper()
	ds, admin := thanosDatasource(th, es, index)

	hr, err := h.CheckHealth(ctx, ds, admin)
	if err != nil || hr.Status != backend.HealthStatusOk {
		t.Errorf("health check against Thanos Query: %v %+v", err, hr)
	}

	now := time.Now()
	from := t0.Add(-time.Minute)
	docID := cluster + ":" + jobID
	qs := []pluginhost.Query{
		{RefID: "timeline", Model: map[string]any{"queryType": "jobTimeline", "jobId": docID}, From: from, To: now, Interval: interval, MaxDataPoints: 200},
		{RefID: "jobs", Model: map[string]any{"queryType": "jobs"}, From: from, To: now},
		{RefID: "reservation", Model: map[string]any{"queryType": "reservation"}, From: from, To: now},
		{RefID: "usageHistory", Model: map[string]any{"queryType": "usageHistory"}, From: from, To: now, Interval: interval},
		{RefID: "hogging", Model: map[string]any{"queryType": "hogging", "windowSeconds": 60}, From: from, To: now},
	}
	// The last samples were written with times up to now (the job's
	// last one at t0 + 78 s). The timeline's steps (5 s, the least) run
	// from the job's start and end at or before now: asked before t0 +
	// 80 s, its last step (t0 + 75 s) shows sample 37, not the last one,
	// as a Grafana panel would. Ask once the step after the last sample
	// has come.
	if d := time.Until(t0.Add(samples*interval + time.Second)); d > 0 {
		time.Sleep(d)
	}
	t.Logf("the plugin is asked at t0 + %v", time.Since(t0).Round(10*time.Millisecond))
	resp, err := h.QueryData(ctx, ds, admin, qs...)
	if err != nil {
		t.Fatal(err)
	}
	frames := map[string]data.Frames{}
	for _, q := range qs {
		r := resp.Responses[q.RefID]
		if r.Error != nil {
			t.Errorf("%s: %v", q.RefID, r.Error)
			continue
		}
		frames[q.RefID] = r.Frames
		for _, f := range r.Frames {
			if f.Meta != nil {
				for _, n := range f.Meta.Notices {
					if n.Severity == data.NoticeSeverityWarning {
						t.Errorf("%s: %s", q.RefID, n.Text)
					}
				}
			}
			if testing.Verbose() {
				t.Logf("%s frame %q:\n%s", q.RefID, f.Name, dump(f))
			}
		}
	}
	// What the written series give: 2 nodes × 1.5 cores; memory
	// point(i) summed over the nodes; the GPUs' mean 0.50006 at the last
	// sample; CPU time 2 × 1.5 × 78 s at the last sample.
	last := samples - 1
	memLast := point("jobsight_job_memory_used_bytes", "n1", "", last) + point("jobsight_job_memory_used_bytes", "n2", "", last)
	var gpuLast float64
	for _, n := range nodes {
		for _, g := range []string{"0", "1"} {
			gpuLast += point("jobsight_job_gpu_utilization_ratio", n, g, last) / 4
		}
	}
	cpuSeconds := 2 * point("jobsight_job_cpu_usage_seconds_total", "n1", "", last)

	// Job timeline: cores, memory and each GPU over the job.
	for _, f := range frames["timeline"] {
		vals := values(f)
		switch {
		case f.Name == "cpu" && len(vals) > 0:
			near(t, "timeline cores (last)", vals[len(vals)-1], 2*cores, 0.15)
		case f.Name == "memory" && len(vals) > 0:
			// A running job's timeline ends at the step at or before its
			// newest sample: memory there is the sample of that step.
			lastT := f.Fields[0].At(f.Fields[0].Len() - 1).(time.Time)
			i := min(last, int(lastT.Sub(t0)/interval))
			want := point("jobsight_job_memory_used_bytes", "n1", "", i) + point("jobsight_job_memory_used_bytes", "n2", "", i)
			near(t, fmt.Sprintf("timeline memory (last, at %s: sample %d)", lastT.Format(time.TimeOnly), i), vals[len(vals)-1], want, 0)
		case f.Name == "gpu_util" && len(f.Fields) > 1:
			ls := f.Fields[1].Labels
			for _, v := range vals {
				near(t, "timeline GPU utilisation of "+ls["node"]+"/"+ls["gpu"], v, gpuBase(ls["node"], ls["gpu"]), 0.002)
			}
		}
	}
	if n := countFrames(frames["timeline"], "gpu_util"); n != 4 {
		t.Errorf("timeline: %d GPU series, want 4 (2 nodes × 2 GPUs)", n)
	}
	// Jobs: the running job's live usage.
	if f := first(frames["jobs"]); f != nil {
		near(t, "jobs cpu_cores_used", cell(t, f, "cpu_cores_used"), 2*cores, 0.02)
		near(t, "jobs memory_used", cell(t, f, "memory_used"), memLast, 0)
		near(t, "jobs gpu_utilization", cell(t, f, "gpu_utilization"), gpuLast, 1e-9)
	}
	// Reservation: CPU hours used is the counter's last value.
	if f := first(frames["reservation"]); f != nil {
		near(t, "reservation cpu_hours_used", cell(t, f, "cpu_hours_used"), cpuSeconds/3600, 1e-9)
		near(t, "reservation gpu_hours_used / gpu_hours_reserved", cell(t, f, "gpu_hours_used")/cell(t, f, "gpu_hours_reserved"),
			(gpuBase("n1", "0")+gpuBase("n1", "1")+gpuBase("n2", "0")+gpuBase("n2", "1"))/4, 0.001)
		near(t, "reservation memory_gib_hours_used / reserved × 8 GiB", cell(t, f, "memory_gib_hours_used")/cell(t, f, "memory_gib_hours_reserved")*8, 2, 0.001)
	}
	// Usage history: CPU used from the series, below what was reserved.
	var used, reserved float64
	for _, f := range frames["usageHistory"] {
		if len(f.Fields) < 2 {
			continue
		}
		for _, v := range values(f) {
			switch {
			case f.Fields[1].Labels["kind"] == "used" && f.Fields[1].Labels["resource"] == "cpu":
				used += v
			case f.Fields[1].Labels["kind"] == "reserved" && f.Fields[1].Labels["resource"] == "cpu":
				reserved += v
			}
		}
	}
	if used <= 0 || used >= reserved {
		t.Errorf("usageHistory: CPU used %v, reserved %v; want used from the series, above 0 and below reserved", used, reserved)
	}
	// Hogging: of the 4 GPUs the job holds, the series show one idle
	// (n2's GPU 1) over the window.
	if f := first(frames["hogging"]); f != nil && f.Meta != nil {
		b, _ := json.Marshal(f.Meta.Custom)
		var custom struct {
			Rows []struct {
				Resource     string
				Held, Unused float64
			}
		}
		_ = json.Unmarshal(b, &custom)
		rows := custom.Rows
		found := false
		for _, r := range rows {
			if r.Resource == "gpu" {
				found = true
				if r.Held != 4 || r.Unused != 1 {
					t.Errorf("hogging GPU row: held %v, unused %v; want 4 held, 1 unused (n2's idle GPU)", r.Held, r.Unused)
				}
			}
		}
		if !found {
			t.Errorf("hogging: no GPU row for the job: %s", b)
		}
	}
}

// staleTimeline asks for the running job's timeline 15 s after its newest
// sample, as a user does between two pushes of its agent (every 10 s by
// default) or while the agent spools: the timeline ends at the newest
// sample, and its last point shows the cores the job uses, not a rate
// from a window the samples only partly cover (1.2 of 3 cores, before).
func staleTimeline(t *testing.T, ctx context.Context, h *pluginhost.Host, th *stack.Thanos, es *stack.ESServer, index string, t0 time.Time) {
	t.Helper()
	newest := t0.Add((samples - 1) * interval)
	if d := time.Until(newest.Add(15 * time.Second)); d > 0 {
		time.Sleep(d)
	}
	ds, admin := thanosDatasource(th, es, index)
	q := pluginhost.Query{RefID: "timeline", Model: map[string]any{"queryType": "jobTimeline", "jobId": cluster + ":" + jobID},
		From: t0.Add(-time.Minute), To: time.Now(), Interval: interval, MaxDataPoints: 200}
	jobs := pluginhost.Query{RefID: "jobs", Model: map[string]any{"queryType": "jobs"}, From: t0.Add(-time.Minute), To: time.Now()}
	resp, err := h.QueryData(ctx, ds, admin, q, jobs)
	if err != nil {
		t.Fatal(err)
	}
	// The Jobs table's live cores, asked as late: the two newest samples'
	// rate, not a window's that the samples cover only in part (a rate
	// over 40 s read about a third low here).
	if r := resp.Responses["jobs"]; r.Error != nil {
		t.Errorf("jobs %v after the newest sample: %v", time.Since(newest).Round(time.Second), r.Error)
	} else if f := first(r.Frames); f == nil {
		t.Errorf("jobs: no frame")
	} else {
		near(t, fmt.Sprintf("jobs cpu_cores_used (asked %v after the newest sample)", time.Since(newest).Round(time.Second)), cell(t, f, "cpu_cores_used"), 2*cores, 0.02)
	}
	r := resp.Responses["timeline"]
	if r.Error != nil {
		t.Fatalf("timeline %v after the newest sample: %v", time.Since(newest).Round(time.Second), r.Error)
	}
	for _, f := range r.Frames {
		if f.Name != "cpu" && f.Name != "memory" {
			continue
		}
		n := f.Fields[0].Len()
		if n == 0 {
			t.Errorf("timeline %s: no points", f.Name)
			continue
		}
		last := f.Fields[0].At(n - 1).(time.Time)
		if last.After(newest) {
			t.Errorf("timeline %s ends at %s, after the newest sample (%s)", f.Name, last.Format(time.TimeOnly), newest.Format(time.TimeOnly))
		}
		if f.Name == "cpu" {
			vals := values(f)
			near(t, fmt.Sprintf("timeline cores (last, asked %v after the newest sample)", time.Since(newest).Round(time.Second)), vals[len(vals)-1], 2*cores, 0.15)
		}
	}
}

// first is the first frame, or nil.
func first(fs data.Frames) *data.Frame {
	if len(fs) == 0 {
		return nil
	}
	return fs[0]
}

func countFrames(fs data.Frames, name string) int {
	n := 0
	for _, f := range fs {
		if f.Name == name {
			n++
		}
	}
	return n
}

// values are a time-series frame's values (its second field).
func values(f *data.Frame) []float64 {
	if len(f.Fields) < 2 {
		return nil
	}
	var out []float64
	for i := 0; i < f.Fields[1].Len(); i++ {
		if v, ok := f.Fields[1].ConcreteAt(i); ok {
			if x, ok := v.(float64); ok {
				out = append(out, x)
			}
		}
	}
	return out
}

// cell is the number in field name of a table frame's first row.
func cell(t *testing.T, f *data.Frame, name string) float64 {
	t.Helper()
	fld, _ := f.FieldByName(name)
	if fld == nil || fld.Len() == 0 {
		t.Errorf("frame %s has no %s", f.Name, name)
		return math.NaN()
	}
	v, ok := fld.ConcreteAt(0)
	x, isNum := v.(float64)
	if !ok || !isNum {
		t.Errorf("frame %s: %s is %v, want a number", f.Name, name, v)
		return math.NaN()
	}
	return x
}

// near checks got against want within a relative tolerance (0: exactly,
// up to float rounding).
func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if tol == 0 {
		tol = 1e-12
	}
	if math.IsNaN(got) || math.Abs(got-want) > tol*math.Abs(want) {
		t.Errorf("%s = %v, want %v (±%g%%): not what the written series give", what, got, want, tol*100)
	}
}

// dump renders a frame's fields with their first and last values.
func dump(f *data.Frame) string {
	var b strings.Builder
	for _, fld := range f.Fields {
		n := fld.Len()
		var first, last any
		if n > 0 {
			first, _ = fld.ConcreteAt(0)
			last, _ = fld.ConcreteAt(n - 1)
		}
		fmt.Fprintf(&b, "  %s %v: %d values, first %v, last %v\n", fld.Name, fld.Labels, n, first, last)
	}
	return b.String()
}
