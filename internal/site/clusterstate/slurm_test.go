package clusterstate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/site/clusterstate"
	"github.com/jobsight/jobsight/internal/slurm"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/test/stack"
)

// recorder is the collector's Slurm client, keeping the last answers (for
// JOBSIGHT_CAPTURE_DIR).
type recorder struct {
	*slurm.Client
	nodes, jobs []byte
}

func (r *recorder) Nodes(ctx context.Context) ([]byte, error) {
	b, err := r.Client.Nodes(ctx)
	r.nodes = b
	return b, err
}

func (r *recorder) Jobs(ctx context.Context) ([]byte, error) {
	b, err := r.Client.Jobs(ctx)
	r.jobs = b
	return b, err
}

// countingWrapper writes a script that logs its name to log and runs the
// real command, as test/e2e counts the agents' squeue calls.
func countingWrapper(t *testing.T, dir, name, log string) string {
	t.Helper()
	in, err := stack.FindSlurm(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+"-counting")
	script := fmt.Sprintf("#!/bin/sh\necho %s >> %s\nexec %s \"$@\"\n", name, log, in.Bin(name))
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// seriesText is a snapshot's cluster series, one line each, sorted (the
// collector's health series left out).
func seriesText(s *clusterstate.Snapshot) []string {
	var out []string
	for _, x := range clusterstate.Series(s, clusterstate.Health{}, true) {
		if strings.HasPrefix(x.Name, "jobsight_clusterstate_") || strings.HasPrefix(x.Name, "jobsight_cluster_") {
			continue // the collector's health, and the unreported check the poll added
		}
		line := x.Name
		for _, l := range x.Labels {
			line += "," + l.Name + "=" + l.Value
		}
		out = append(out, fmt.Sprintf("%s %g", line, x.Samples[len(x.Samples)-1].Value))
	}
	slices.Sort(out)
	return out
}

// rpcCounts reads slurmctld's RPC counters by message type (sdiag).
func rpcCounts(t *testing.T, ctx context.Context, s *stack.Slurm) map[string]int {
	t.Helper()
	m, err := s.RPCCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The collector against a real five-node Slurm 22.05 cluster: a drained, a
// draining, a reserved (maintenance) and a never-started node come out as
// such; jobs queued behind a full partition show as pending demand; every
// poll costs two controller calls; the series land in Prometheus and the
// document in the Elasticsearch-API server.
func TestCollectorOnRealCluster(t *testing.T) {
	stack.Require(t, "root", "slurm", "cgroupv1", "prometheus", "sdiag")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	st, err := stack.Up(ctx, filepath.Join(dir, "stack"), stack.Options{Slurm: stack.SlurmOptions{
		ClusterName: "csclu", NodeName: "csnode1", ExtraNodes: []string{"csnode2", "csnode3", "csnode4"},
		DeadNodes: []string{"csdead1"}, GPUType: "a100", GPUs: 2, SlurmdTimeout: 10 * time.Second,
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Down() })
	sl := st.Slurm
	must := func(name string, args ...string) {
		t.Helper()
		if out, err := sl.Command(ctx, name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v: %s", name, args, err, out)
		}
	}
	submit := func(args ...string) string {
		t.Helper()
		id, err := sl.Sbatch(ctx, append([]string{"--output=/dev/null"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}

	// csnode4: a running job, then drained: DRAINING.
	busy := submit("-p", "multi", "-w", "csnode4", "-c", "1", "--mem=100M", "--gres=gpu:a100:1", "--wrap", "sleep 300")
	if _, err := sl.WaitJobState(ctx, busy, "RUNNING"); err != nil {
		t.Fatal(err)
	}
	must("scontrol", "update", "nodename=csnode4", "state=DRAIN", "reason=draining for a test")
	// csnode2: idle and drained: DRAINED.
	must("scontrol", "update", "nodename=csnode2", "state=DRAIN", "reason=disk replaced")
	// csnode3: a maintenance reservation: MAINTENANCE, RESERVED.
	must("scontrol", "create", "reservation", "reservationname=cs_maint", "nodes=csnode3", "starttime=now",
		"duration=60", "users=root", "flags=maint,ignore_jobs")
	// csdead1 never started: UNKNOWN, and NOT_RESPONDING once slurmctld's
	// pings found it silent (sinfo marks that with '*'); set DOWN by an
	// admin below.
	for i := 0; ; i++ {
		out, _ := sl.Command(ctx, "sinfo", "-h", "-n", "csdead1", "-o", "%T").Output()
		if strings.HasSuffix(strings.TrimSpace(string(out)), "*") {
			break
		}
		if i == 120 {
			t.Fatalf("csdead1 still %q after a minute, want not responding", out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Fill partition debug (csnode1), then queue behind it.
	cpus := 0
	if out, err := sl.Command(ctx, "sinfo", "-h", "-n", "csnode1", "-o", "%c").Output(); err == nil {
		cpus, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	if cpus < 1 {
		t.Fatalf("cannot read csnode1's CPUs")
	}
	var running []string
	for range cpus {
		running = append(running, submit("-p", "debug", "-c", "1", "--mem=100M", "--wrap", "sleep 300"))
	}
	for _, id := range running {
		if _, err := sl.WaitJobState(ctx, id, "RUNNING"); err != nil {
			t.Fatal(err)
		}
	}
	submit("-p", "debug", "-c", "1", "--mem=100M", "--gres=gpu:1", "--wrap", "sleep 60")
	submit("-p", "debug", "-c", "2", "--mem=100M", "--gres=gpu:a100:2", "--wrap", "sleep 60")
	submit("-p", "debug", "-c", "1", "--mem=100M", "--array=1-4", "--wrap", "sleep 60")
	submit("-p", "debug", "-c", "1", "--mem=100M", "--hold", "--wrap", "sleep 60")
	// Waiting for a begin time (not competing): a sparse array whose task
	// expression is longer than squeue prints by default (64 characters),
	// and a het job of two components.
	sparse := make([]string, 27)
	for i := range sparse {
		sparse[i] = strconv.Itoa(1 + i*(i+1)/2) // no constant step: squeue writes every index
	}
	submit("-p", "multi", "-c", "1", "--mem=100M", "--begin=now+1hour", "--array="+strings.Join(sparse, ","), "--wrap", "true")
	submit("-p", "multi", "-c", "1", "--mem=100M", "--begin=now+1hour", "--wrap", "true", ":", "-p", "multi", "-c", "1", "--mem=100M", "--gres=gpu:a100:1")
	// Pending jobs need a scheduling pass to get their reasons.
	time.Sleep(2 * time.Second)

	callLog := filepath.Join(dir, "calls.log")
	src := &recorder{Client: &slurm.Client{Options: slurm.Options{
		Sinfo: countingWrapper(t, dir, "sinfo", callLog), Squeue: countingWrapper(t, dir, "squeue", callLog), Env: sl.Env(),
		Timeout: 20 * time.Second,
	}}}
	cfg := clusterstate.DefaultConfig()
	cfg.Cluster = "csclu"
	cfg.Interval, cfg.DocumentInterval = 5*time.Second, 5*time.Second
	cfg.Prometheus.RemoteWriteURL = st.Prometheus.URL + "/api/v1/write"
	cfg.Elasticsearch.URLs = []string{st.Elasticsearch.URL}
	cfg.Elasticsearch.Username = st.Elasticsearch.User
	cfg.Elasticsearch.CAFile = st.Elasticsearch.CACertFile
	pwFile := filepath.Join(dir, "es.password")
	if err := os.WriteFile(pwFile, []byte(st.Elasticsearch.Password), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Elasticsearch.PasswordFile = pwFile
	cfg.Elasticsearch.Index = "jobsight-cluster-state-test"
	cfg.Spool.Dir = filepath.Join(dir, "spool")
	// The polls here follow each other at once: every one reads the queue
	// (queue_cpu_budget's spacing is TestQueueReadWithinItsCPUBudget's).
	cfg.QueueCPUBudget = 0
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	c, err := clusterstate.New(cfg, clusterstate.Options{Source: src, Logger: log})
	if err != nil {
		t.Fatal(err)
	}

	cf := filepath.Join(dir, "constants.yaml")
	if err := os.WriteFile(cf, []byte("allocations:\n  - {cluster: csclu, account: physics, resource: gpu, hours: 8766, start: 2026-01-01}\nconstants:\n  users: 120\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	consts, err := clusterstate.OpenConstants(cf, log)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler(consts, nil, ""))
	defer srv.Close()

	before := rpcCounts(t, ctx, sl)
	snap, err := c.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after := rpcCounts(t, ctx, sl)
	var rpcs []string
	total := 0
	for typ, n := range after {
		if d := n - before[typ]; d > 0 && typ != "REQUEST_STATS_INFO" {
			rpcs = append(rpcs, fmt.Sprintf("%s=%d", typ, d))
			if strings.HasPrefix(typ, "REQUEST_") {
				total += d
			}
		}
	}
	slices.Sort(rpcs)
	t.Logf("slurmctld RPCs during one poll (sdiag): %d requests: %s", total, strings.Join(rpcs, " "))
	if total < 2 || total > 8 {
		t.Errorf("one poll cost slurmctld %d requests, want 2-8", total)
	}
	if total > 4 {
		t.Errorf("one poll cost slurmctld %d requests, want at most 4 (sinfo: nodes and partitions; squeue: jobs and partitions)", total)
	}
	// The narrow squeue and squeue --json give the same series, read
	// from one controller state.
	in, err := stack.FindSlurm(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	jsonJobs, err := (&slurm.Client{Options: slurm.Options{Squeue: in.Bin("squeue"), Env: sl.Env(), Timeout: 20 * time.Second}}).JobsJSON(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fromJSON, err := clusterstate.Build("csclu", snap.Time, src.nodes, jsonJobs); err != nil {
		t.Fatal(err)
	} else if a, b := seriesText(snap), seriesText(fromJSON); !slices.Equal(a, b) {
		t.Errorf("the narrow squeue's series\n%s\ndiffer from squeue --json's\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	if dir := os.Getenv("JOBSIGHT_CAPTURE_DIR"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "sinfo-22.05.json"), src.nodes, 0o644)
		_ = os.WriteFile(filepath.Join(dir, "squeue-22.05.json"), jsonJobs, 0o644)
		_ = os.WriteFile(filepath.Join(dir, "squeue-poll.txt"), src.jobs, 0o644)
	}

	nodes := map[string]clusterstate.Node{}
	for _, n := range snap.Nodes {
		nodes[n.Name] = n
		t.Logf("node %s: %v available %v cpus %+v gpus %+v", n.Name, n.States, n.Available, n.CPUs, n.GPUs)
	}
	wantStates := map[string][]string{
		"csnode2": {"IDLE", "DRAIN", "DRAINED"},
		"csnode3": {"IDLE", "MAINTENANCE", "RESERVED"},
		"csnode4": {"DRAIN", "DRAINING"},
		"csdead1": {"UNKNOWN", "NOT_RESPONDING"},
	}
	for node, want := range wantStates {
		n := nodes[node]
		for _, s := range want {
			if !slices.Contains(n.States, s) {
				t.Errorf("node %s states %v lack %s", node, n.States, s)
			}
		}
		if n.Available {
			t.Errorf("node %s (%v) counted available", node, n.States)
		}
		if n.CPUs.Unavailable+n.CPUs.Allocated != n.CPUs.Total || n.CPUs.Idle != 0 {
			t.Errorf("node %s cpus %+v: want everything not allocated unavailable", node, n.CPUs)
		}
	}
	if n := nodes["csnode4"]; n.CPUs.Allocated != 1 || n.GPUs["a100"].Allocated != 1 || n.GPUs["a100"].Unavailable != 1 {
		t.Errorf("draining csnode4: cpus %+v gpus %+v, want 1 CPU and 1 a100 allocated, the other a100 unavailable", n.CPUs, n.GPUs)
	}
	if n := nodes["csnode1"]; !slices.Contains(n.States, "ALLOCATED") || n.CPUs.Allocated != int64(cpus) || !n.Available {
		t.Errorf("full csnode1: %v cpus %+v", n.States, n.CPUs)
	}
	var debug, multi clusterstate.Partition
	for _, p := range snap.Partitions {
		t.Logf("partition %s: %+v", p.Name, p)
		switch p.Name {
		case "debug":
			debug = p
		case "multi":
			multi = p
		}
	}
	// 1 + 1 + 4 array tasks wait; the held job does not compete.
	if debug.PendingJobs != 6 || debug.PendingCPUs != 1+2+4 || debug.PendingGPUs != 1+2 || debug.HeldJobs != 1 {
		t.Errorf("debug pending jobs %d cpus %d gpus %d held %d, want 6, 7, 3, 1",
			debug.PendingJobs, debug.PendingCPUs, debug.PendingGPUs, debug.HeldJobs)
	}
	// Held once the scheduler has seen them (BeginTime), pending before.
	if multi.HeldJobs+multi.PendingJobs != 27+2 {
		t.Errorf("multi held %d pending %d, want the sparse array's 27 tasks and the het job's 2 components", multi.HeldJobs, multi.PendingJobs)
	}
	if debug.PendingGPUsByType["a100"] != 2 || debug.PendingGPUsByType["any"] != 1 {
		t.Errorf("debug pending GPUs by type %v, want a100 2 and any 1", debug.PendingGPUsByType)
	}
	if debug.CPUs.Allocated != int64(cpus) || debug.CPUs.Idle != 0 {
		t.Errorf("debug cpus %+v, want all %d allocated", debug.CPUs, cpus)
	}

	// Two controller calls per poll, counted by the wrappers.
	must("scontrol", "update", "nodename=csdead1", "state=DOWN", "reason=never came up")
	snap2, err := c.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(srv.URL + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz after a good poll: %v %v", resp, err)
	}
	for _, n := range snap2.Nodes {
		if n.Name == "csdead1" && (!slices.Contains(n.States, "DOWN") || n.Available) {
			t.Errorf("csdead1 set DOWN: %v available %v", n.States, n.Available)
		}
	}
	b, _ := os.ReadFile(callLog)
	calls := strings.Fields(string(b))
	if len(calls) != 4 || src.Calls() != 4 {
		t.Errorf("two polls made calls %v (counted %d), want sinfo and squeue once each per poll", calls, src.Calls())
	}

	// The series in Prometheus.
	checks := map[string]float64{
		`jobsight_node_state{cluster="csclu",node="csnode2",state="DRAIN"}`:                1,
		`jobsight_node_state{cluster="csclu",node="csdead1",state="DOWN"}`:                 1,
		`jobsight_node_state{cluster="csclu",node="csnode3",state="RESERVED"}`:             1,
		`jobsight_partition_pending_jobs{cluster="csclu",partition="debug"}`:               6,
		`jobsight_partition_pending_gpus{cluster="csclu",partition="debug"}`:               3,
		`jobsight_partition_cpus{cluster="csclu",partition="debug",state="idle"}`:          0,
		`jobsight_node_gpus{cluster="csclu",node="csnode4",type="a100",state="allocated"}`: 1,
		`jobsight_clusterstate_slurm_calls_total{cluster="csclu"}`:                         4,
	}
	deadline := time.Now().Add(30 * time.Second)
	for q, want := range checks {
		for {
			v, ok, err := stack.PromQuery(ctx, st.Prometheus.URL, q)
			if err == nil && ok && v == want {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("Prometheus %s = %v (found %v, err %v), want %v", q, v, ok, err, want)
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	}

	// A state the node left ends at once (staleness marker), not after 5m.
	gone := `jobsight_node_state{cluster="csclu",node="csdead1",state="UNKNOWN"}`
	for {
		_, ok, err := stack.PromQuery(ctx, st.Prometheus.URL, gone)
		if err == nil && !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("Prometheus still has %s after the node went DOWN (err %v)", gone, err)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}

	// The document in Elasticsearch.
	es, err := elasticsearch.New(elasticsearch.Config{URLs: cfg.Elasticsearch.URLs, Username: st.Elasticsearch.User,
		Password: st.Elasticsearch.Password, CACertFile: st.Elasticsearch.CACertFile})
	if err != nil {
		t.Fatal(err)
	}
	id := clusterstate.DocID("csclu", snap.Time.Truncate(cfg.DocumentInterval))
	var doc clusterstate.Document
	for {
		got, err := es.GetByIDs(ctx, cfg.Elasticsearch.Index, []string{id})
		if err == nil && got[id] != nil {
			if err := json.Unmarshal(got[id], &doc); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no document %s: %v", id, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	var unavailable []string
	for _, n := range doc.Unavailable {
		unavailable = append(unavailable, n.Node)
	}
	slices.Sort(unavailable)
	if doc.Cluster != "csclu" || doc.Nodes != 5 || !slices.Equal(unavailable, []string{"csdead1", "csnode2", "csnode3", "csnode4"}) {
		t.Errorf("document: cluster %q nodes %d unavailable %v", doc.Cluster, doc.Nodes, unavailable)
	}

	// /constants.
	resp, err := http.Get(srv.URL + "/constants")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `{"allocations":[{"cluster":"csclu","account":"physics","resource":"gpu","hours":8766,"periodDays":365,"start":"2026-01-01"}],"constants":{"users":120}}`
	if string(body) != want {
		t.Errorf("/constants = %s, want %s", body, want)
	}
}
