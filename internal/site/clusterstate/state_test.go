package clusterstate

import (
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/store/promremote"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fixtureSnapshot(t testing.TB) *Snapshot {
	t.Helper()
	s, err := Build("csclu", time.Unix(1795455000, 0), readFixture(t, "sinfo-22.05.json"), readFixture(t, "squeue-22.05.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The captured cluster (testdata/README.md) read from its JSON.
func TestBuildCapturedCluster(t *testing.T) {
	t.Parallel()
	s := fixtureSnapshot(t)
	if s.SlurmRelease != "22.05.8" || len(s.Problems) != 0 || len(s.Nodes) != 5 {
		t.Fatalf("release %q problems %v nodes %d", s.SlurmRelease, s.Problems, len(s.Nodes))
	}
	mib := int64(1 << 20)
	want := map[string]struct {
		states    []string
		available bool
		cpus      Amount
		gpus      Amount
		memAlloc  int64
	}{
		"csdead1": {[]string{"UNKNOWN", "NOT_RESPONDING"}, false, Amount{Total: 2, Unavailable: 2}, Amount{Total: 2, Unavailable: 2}, 0},
		"csnode1": {[]string{"ALLOCATED"}, true, Amount{Total: 2, Allocated: 2}, Amount{Total: 2, Idle: 2}, 200 * mib},
		"csnode2": {[]string{"IDLE", "DRAIN", "DRAINED"}, false, Amount{Total: 2, Unavailable: 2}, Amount{Total: 2, Unavailable: 2}, 0},
		"csnode3": {[]string{"IDLE", "MAINTENANCE", "RESERVED"}, false, Amount{Total: 2, Unavailable: 2}, Amount{Total: 2, Unavailable: 2}, 0},
		"csnode4": {[]string{"MIXED", "DRAIN", "DRAINING"}, false, Amount{Total: 2, Allocated: 1, Unavailable: 1}, Amount{Total: 2, Allocated: 1, Unavailable: 1}, 100 * mib},
	}
	for _, n := range s.Nodes {
		w := want[n.Name]
		if !slices.Equal(n.States, w.states) || n.Available != w.available || n.CPUs != w.cpus || n.GPUs["a100"] != w.gpus || len(n.GPUs) != 1 {
			t.Errorf("node %s: states %v available %v cpus %+v gpus %+v; want %v %v %+v a100 %+v",
				n.Name, n.States, n.Available, n.CPUs, n.GPUs, w.states, w.available, w.cpus, w.gpus)
		}
		if n.MemoryBytes.Allocated != w.memAlloc || n.MemoryBytes.Total != 21694*mib ||
			n.MemoryBytes.Allocated+n.MemoryBytes.Idle+n.MemoryBytes.Unavailable != n.MemoryBytes.Total {
			t.Errorf("node %s memory %+v", n.Name, n.MemoryBytes)
		}
	}
	if s.Nodes[2].Reason != "disk replaced" {
		t.Errorf("csnode2 reason %q", s.Nodes[2].Reason)
	}
	wantParts := []Partition{
		{Name: "debug", Nodes: 1, CPUs: Amount{Total: 2, Allocated: 2}, GPUs: Amount{Total: 2, Idle: 2},
			RunningJobs: 2, PendingJobs: 6, PendingCPUs: 7, PendingGPUs: 3, PendingGPUsByType: map[string]int64{"a100": 2, "any": 1}, HeldJobs: 1},
		{Name: "multi", Nodes: 5, CPUs: Amount{Total: 10, Allocated: 3, Unavailable: 7}, GPUs: Amount{Total: 10, Allocated: 1, Idle: 2, Unavailable: 7},
			RunningJobs: 1},
	}
	for i := range s.Partitions {
		s.Partitions[i].MemoryBytes = Amount{}
	}
	if !reflect.DeepEqual(s.Partitions, wantParts) {
		t.Errorf("partitions\n%+v\nwant\n%+v", s.Partitions, wantParts)
	}
	if s.RunningJobs != 3 || s.PendingJobs != 6 || s.HeldJobs != 1 {
		t.Errorf("jobs running %d pending %d held %d", s.RunningJobs, s.PendingJobs, s.HeldJobs)
	}
	if r, ok := s.Partitions[0].CPUs.AllocatedRatio(); !ok || r != 1 {
		t.Errorf("debug allocated CPU ratio %v %v, want 1", r, ok)
	}
}

// Pending demand from every form squeue gives it in, arrays counted per
// task, a job for several partitions waiting in each.
func TestPendingDemand(t *testing.T) {
	t.Parallel()
	sinfo := `{"meta":{},"errors":[],"nodes":[{"name":"n1","state":"idle","cpus":8,"real_memory":1024,"gres":"gpu:4","gres_used":"gpu:0","partitions":["a","b"]}]}`
	squeue := `{"errors":[],"jobs":[
	 {"job_id":1,"job_state":"PENDING","state_reason":"Resources","partition":"a,b","cpus":4,"node_count":2,"tres_per_node":"gres:gpu:2"},
	 {"job_id":2,"job_state":"PENDING","state_reason":"Priority","partition":"a","cpus":1,"tres_req_str":"cpu=3,mem=1G,node=1,gres/gpu=5,gres/gpu:a100=5"},
	 {"job_id":3,"array_job_id":3,"array_task_id":null,"array_task_string":"1-9:2%2","job_state":"PENDING","partition":"a","cpus":1,"tasks":2,"tres_per_task":"gres:gpu:a100:1"},
	 {"job_id":4,"job_state":"PENDING","state_reason":"Dependency","partition":"a","cpus":64},
	 {"job_id":5,"job_state":"PENDING","partition":"b","cpus":2,"tres_per_job":"gres:gpu:3,gres:mps:50"},
	 {"job_id":6,"job_state":"COMPLETED","partition":"a","cpus":99}
	]}`
	s, err := Build("c", time.Unix(0, 0), []byte(sinfo), []byte(squeue))
	if err != nil {
		t.Fatal(err)
	}
	a, b := s.Partitions[0], s.Partitions[1]
	// a: job 1 (4 CPUs, 4 GPUs), job 2 (3, 5), job 3 (5 tasks x 1 CPU, 2 GPUs).
	if a.PendingJobs != 7 || a.PendingCPUs != 4+3+5 || a.PendingGPUs != 4+5+10 || a.HeldJobs != 1 {
		t.Errorf("partition a: %+v", a)
	}
	if b.PendingJobs != 2 || b.PendingCPUs != 4+2 || b.PendingGPUs != 4+3 {
		t.Errorf("partition b: %+v", b)
	}
	if s.PendingJobs != 8 || s.HeldJobs != 1 {
		t.Errorf("pending %d held %d", s.PendingJobs, s.HeldJobs)
	}
}

// A node whose gres cannot be read keeps its CPUs and is named; a
// malformed answer is an error naming the command.
func TestBuildBadInput(t *testing.T) {
	t.Parallel()
	sinfo := `{"nodes":[{"name":"n1","state":"mixed","state_flags":["REBOOT_REQUESTED"],"cpus":4,"alloc_cpus":2,"gres":"gpu:a100:4(IDX:0-3","partitions":["p"]}]}`
	s, err := Build("c", time.Unix(0, 0), []byte(sinfo), []byte(`{"jobs":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	n := s.Nodes[0]
	if len(s.Problems) != 1 || !strings.Contains(s.Problems[0], "node n1: gres") || n.GPUs != nil || n.CPUs != (Amount{Total: 4, Allocated: 2, Unavailable: 2}) {
		t.Errorf("problems %v node %+v", s.Problems, n)
	}
	for _, tc := range []struct{ sinfo, squeue, want string }{
		{`not json`, `{"jobs":[]}`, "sinfo --json"},
		{`{"errors":[{"error":"boom"}]}`, `{"jobs":[]}`, "sinfo --json reported errors"},
		{`{"nodes":[]}`, `{"meta":{}}`, `squeue --json: the answer has no "jobs" list`},
		{`{"nodes":[17]}`, `{"jobs":[]}`, "sinfo --json"},
	} {
		if _, err := Build("c", time.Unix(0, 0), []byte(tc.sinfo), []byte(tc.squeue)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build(%s, %s) = %v, want %q", tc.sinfo, tc.squeue, err, tc.want)
		}
	}
}

// A node field of a shape the reader does not know costs that node's
// figure, is named in Problems, and fails nothing else.
func TestBuildUnknownNodeFieldIsNamed(t *testing.T) {
	t.Parallel()
	s, err := Build("c", time.Unix(0, 0), []byte(`{"nodes":[{"name":"n","state":"idle","cpus":"many","real_memory":1000},{"name":"m","state":"idle","cpus":4}]}`), []byte(`{"jobs":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Problems) != 1 || !strings.Contains(s.Problems[0], "node n: cpus unreadable") {
		t.Errorf("problems %v", s.Problems)
	}
	if len(s.Nodes) != 2 || s.Nodes[0].Name != "m" || s.Nodes[0].CPUs.Total != 4 || s.Nodes[1].MemoryBytes.Total != 1000<<20 {
		t.Errorf("nodes %+v", s.Nodes)
	}
}

// The series contract of docs/metrics.md: names, label sets, values.
func TestSeriesContract(t *testing.T) {
	t.Parallel()
	s := fixtureSnapshot(t)
	s.Unreported = &Unreported{Jobs: 1, Nodes: []UnreportedNode{{Node: "csnode4", Jobs: 1, Keys: []string{"990943"}}}}
	series := Series(s, Health{PollSeconds: 0.1, SlurmCalls: 2}, true)
	labelSets := map[string][]string{
		MetricPartitionCPUs: {"cluster", "partition", "state"}, MetricPartitionGPUs: {"cluster", "partition", "state"},
		MetricPartitionPendingJobs: {"cluster", "partition"}, MetricPartitionPendingCPUs: {"cluster", "partition"},
		MetricPartitionPendingGPUs: {"cluster", "partition"}, MetricPartitionPendingGPUsByType: {"cluster", "partition", "type"},
		MetricPartitionRatio: {"cluster", "partition", "resource"},
		MetricNodeState:      {"cluster", "node", "state"}, MetricNodeCPUs: {"cluster", "node", "state"},
		MetricNodeMemory: {"cluster", "node", "state"}, MetricNodeGPUs: {"cluster", "node", "type", "state"},
		MetricPollDuration: {"cluster"}, MetricSlurmCalls: {"cluster"}, MetricPollErrors: {"cluster"},
		MetricUnreportedJobs: {"cluster"}, MetricNodeUnreportedJobs: {"cluster", "node"},
	}
	values := map[string]float64{}
	for _, se := range series {
		want, ok := labelSets[se.Name]
		if !ok {
			t.Errorf("unexpected series %s", se.Name)
			continue
		}
		var names []string
		key := se.Name
		for _, l := range se.Labels {
			names = append(names, l.Name)
			key += "," + l.Name + "=" + l.Value
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s labels %v, want %v", se.Name, names, want)
		}
		values[key] = se.Samples[0].Value
	}
	for key, want := range map[string]float64{
		"jobsight_partition_cpus,cluster=csclu,partition=multi,state=unavailable":         7,
		"jobsight_partition_gpus,cluster=csclu,partition=debug,state=idle":                2,
		"jobsight_partition_pending_jobs,cluster=csclu,partition=debug":                   6,
		"jobsight_partition_pending_cpus,cluster=csclu,partition=debug":                   7,
		"jobsight_partition_pending_gpus,cluster=csclu,partition=debug":                   3,
		"jobsight_partition_allocated_ratio,cluster=csclu,partition=multi,resource=cpu":   1,
		"jobsight_node_state,cluster=csclu,node=csnode3,state=MAINTENANCE":                1,
		"jobsight_node_state,cluster=csclu,node=csdead1,state=NOT_RESPONDING":             1,
		"jobsight_node_gpus,cluster=csclu,node=csnode4,type=a100,state=allocated":         1,
		"jobsight_node_memory_bytes,cluster=csclu,node=csnode1,state=allocated":           200 << 20,
		"jobsight_clusterstate_slurm_calls_total,cluster=csclu":                           2,
		"jobsight_partition_pending_gpus_by_type,cluster=csclu,partition=debug,type=a100": 2,
		"jobsight_partition_pending_gpus_by_type,cluster=csclu,partition=debug,type=any":  1,
		"jobsight_cluster_unreported_jobs,cluster=csclu":                                  1,
		"jobsight_cluster_node_unreported_jobs,cluster=csclu,node=csnode4":                1,
	} {
		if got, ok := values[key]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", key, got, ok, want)
		}
	}
	if _, err := promremote.Encode(series); err != nil {
		t.Errorf("the series do not encode: %v", err)
	}
	// 2 partitions, debug's pending GPUs of 2 types, 4 ratios, health, unreported
	if n := len(Series(s, Health{}, false)); n != 2*(4+4+3)+2+4+3+2 {
		t.Errorf("without node series: %d series", n)
	}
}

// A series the cluster no longer has ends with a staleness marker.
func TestStalenessMarkers(t *testing.T) {
	t.Parallel()
	var st staleness
	s := fixtureSnapshot(t)
	first := st.mark(Series(s, Health{}, true), 1000)
	// csnode2 comes back: DRAIN and DRAINED end.
	s.Nodes[2].States = []string{"IDLE"}
	second := st.mark(Series(s, Health{}, true), 2000)
	if len(second) != len(first) { // two series fewer, two markers
		t.Fatalf("%d series, then %d", len(first), len(second))
	}
	var ended []string
	for _, se := range second {
		if math.Float64bits(se.Samples[0].Value) == math.Float64bits(staleNaN) {
			ended = append(ended, se.Labels[2].Value)
			if se.Samples[0].TimestampMs != 2000 {
				t.Errorf("marker at %d", se.Samples[0].TimestampMs)
			}
		}
	}
	slices.Sort(ended)
	if !slices.Equal(ended, []string{"DRAIN", "DRAINED"}) {
		t.Errorf("ended %v, want DRAIN and DRAINED of csnode2", ended)
	}
	if third := st.mark(Series(s, Health{}, true), 3000); len(third) != len(first)-2 {
		t.Errorf("markers repeated: %d series", len(third))
	}
}

func TestDocument(t *testing.T) {
	t.Parallel()
	s := fixtureSnapshot(t)
	bucket := s.Time.Truncate(5 * time.Minute)
	d := NewDocument(s, bucket, Health{PollSeconds: 0.2}, 2)
	if d.Nodes != 5 || d.CPUs != (DocAmount{Total: 10, Allocated: 3, Unavailable: 7}) || len(d.Unavailable) != 4 || d.SlurmCalls != 2 {
		t.Errorf("document %+v", d)
	}
	states := map[string]int64{}
	for _, sc := range d.NodeStates {
		states[sc.State] = sc.Nodes
	}
	if states["DRAIN"] != 2 || states["IDLE"] != 2 || states["NOT_RESPONDING"] != 1 || states["RESERVED"] != 1 {
		t.Errorf("node states %v", states)
	}
	if len(d.GPUTypes) != 1 || d.GPUTypes[0].Type != "a100" || d.GPUTypes[0].Total != 10 {
		t.Errorf("gpu types %+v", d.GPUTypes)
	}
	if id := DocID("csclu", bucket); id != "csclu:1795455000" {
		t.Errorf("DocID %s", id)
	}
	m := string(Mapping())
	for _, f := range []string{`"dynamic":"strict"`, `"unavailable_nodes":{"properties"`, `"time":{"type":"date"}`, `"pending_gpus":{"type":"long"}`} {
		if !strings.Contains(m, f) {
			t.Errorf("mapping lacks %s: %s", f, m)
		}
	}
}
