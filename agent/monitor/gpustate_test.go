package monitor

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/gpu"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

type pidList []int32

func (p pidList) PIDs() []int32 { return p }

// simJob samples a job holding held on a simulated node for n passes one
// second apart and returns its state.
func simJob(t *testing.T, cfg gpu.SimConfig, held []int, attribution string, n int) (*NodeState, *Buffer) {
	t.Helper()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cfg.Now = func() time.Time { return now }
	sim, err := gpu.NewSimulated(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := collector.NewGPUCollector(sim, pidList{4100, 4107}, held, attribution)
	if err != nil {
		t.Fatal(err)
	}
	st := NewNodeState(now, time.Second, 0.05)
	h := len(held)
	if attribution == gpu.AttributionProcesses {
		h = -1
	}
	st.EnableGPU(sim.Name(), attribution, h, 0.10)
	buf := NewBuffer(n)
	var s collector.Sample
	for i := 0; i < n; i++ {
		s.Reset(now)
		s.Missing &^= collector.MetricProcesses
		s.Processes = 2
		if err := gc.Collect(&s); err != nil {
			t.Fatal(err)
		}
		st.Add(&s)
		buf.Add(&s)
		now = now.Add(time.Second)
	}
	return st, buf
}

func TestGPUJobFourHeldOneUsed(t *testing.T) {
	t.Parallel()
	st, buf := simJob(t, gpu.SimConfig{Devices: 8, Profile: gpu.ProfileOneOfN}, []int{4, 5, 6, 7}, gpu.AttributionSlurm, 30)
	var doc jobmodel.Node
	doc.Node = "gpu01"
	st.Fill(&doc, st.LastSample)
	g := doc.GPU
	if g == nil {
		t.Fatal("no gpu summary")
	}
	if g.Count != 4 || *g.Held != 4 || *g.EffectiveGPUs != 1 || *g.HeldIdle != 3 || !g.Simulated || g.Source != "simulated" || g.Attribution != "slurm" {
		t.Errorf("summary = %+v", *g)
	}
	if avg := *g.UtilizationAvg; avg < 0.2 || avg > 0.25 {
		t.Errorf("job-wide utilisation %v, want ~0.9/4", avg)
	}
	if tl := g.UtilizationTimeline; len(tl) != 30 || tl[0] == nil || *tl[0] < 0.2 || tl[29] == nil || *tl[29] > 0.25 || *g.TimelineStepSeconds != 1 || !g.TimelineStart.Equal(st.FirstSample) {
		t.Errorf("timeline %v step %v start %v", tl, *g.TimelineStepSeconds, g.TimelineStart)
	}
	if *doc.Allocated.GPUs != 4 {
		t.Errorf("allocated gpus %v", *doc.Allocated.GPUs)
	}
	if len(doc.GPUs) != 4 || doc.GPUs[0].Index != 4 || doc.GPUs[0].HeldIdle || !doc.GPUs[1].HeldIdle {
		t.Fatalf("per-GPU entries = %+v", doc.GPUs)
	}
	busy := doc.GPUs[0]
	if *busy.ActiveSeconds < 28 || *busy.IdleSeconds > 1 || *busy.ProcessSeconds < 29 || *busy.JobMemoryPeakBytes == 0 || *busy.EnergyJoules < 29*300 {
		t.Errorf("busy GPU = %+v", busy)
	}
	idle := doc.GPUs[3]
	if *idle.UtilizationPeak != 0 || *idle.ProcessSeconds != 0 || idle.JobMemoryPeakBytes != nil || *idle.ActiveSeconds != 0 {
		t.Errorf("idle GPU = %+v", idle)
	}
	// The simulator gives every figure, activity included.
	if len(busy.MissingMetrics) != 0 || busy.Activity == nil || busy.Activity.SM == nil || idle.Activity == nil || *idle.Activity.SM.Peak != 0 {
		t.Errorf("missing = %v, activity busy %+v idle %+v", busy.MissingMetrics, busy.Activity, idle.Activity)
	}

	// Series: every GPU metric per GPU, labelled with gpu and simulated.
	series := buf.gpuSeries(nil, []Label{{Name: "cluster", Value: "c"}, {Name: "job_id", Value: "1"}, {Name: "node", Value: "gpu01"}})
	if len(series) != 4*len(GPUMetrics) {
		t.Fatalf("%d series, want %d", len(series), 4*len(GPUMetrics))
	}
	for _, s := range series {
		ls := map[string]string{}
		for _, l := range s.Labels {
			ls[l.Name] = l.Value
		}
		if ls["simulated"] != "true" || ls["gpu"] == "" || len(ls) != 5 || len(s.Samples) != 30 {
			t.Errorf("series %s labels %v, %d points", s.Name, ls, len(s.Samples))
		}
	}
}

func TestGPUAttributedByProcesses(t *testing.T) {
	t.Parallel()
	// No allocation known: only the devices the job's processes run on are
	// its. The simulator only places processes for a known allocation, so
	// nothing is attributed and no summary is written.
	st, _ := simJob(t, gpu.SimConfig{Devices: 2, Profile: gpu.ProfileSteady}, nil, gpu.AttributionProcesses, 3)
	var doc jobmodel.Node
	st.Fill(&doc, st.LastSample)
	if doc.GPU != nil || doc.Allocated.GPUs != nil {
		t.Errorf("job without GPUs got %+v / %v", doc.GPU, doc.Allocated.GPUs)
	}
}

func TestGPUUnavailableIsMissingNotZero(t *testing.T) {
	t.Parallel()
	st := NewNodeState(time.Now(), time.Second, 0.05)
	st.GPUUnavailable("nvidia: library not found", 2)
	var doc jobmodel.Node
	st.Fill(&doc, time.Now())
	if doc.GPU == nil || doc.GPU.Count != 0 || *doc.GPU.Held != 2 || doc.GPU.UtilizationAvg != nil || doc.GPU.EffectiveGPUs != nil {
		t.Errorf("summary = %+v", doc.GPU)
	}
	found := false
	for _, m := range doc.MissingMetrics {
		found = found || m == "gpu"
	}
	if !found {
		t.Errorf("missing_metrics %v lacks gpu", doc.MissingMetrics)
	}
}

func TestGPUStateCheckpointRoundTrip(t *testing.T) {
	t.Parallel()
	st, _ := simJob(t, gpu.SimConfig{Devices: 4, Profile: gpu.ProfileOneOfN}, []int{0, 1}, gpu.AttributionSlurm, 5)
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back NodeState
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	var d1, d2 jobmodel.Node
	st.Fill(&d1, st.LastSample)
	back.Fill(&d2, st.LastSample)
	j1, _ := json.Marshal(d1)
	j2, _ := json.Marshal(d2)
	if string(j1) != string(j2) {
		t.Errorf("checkpoint changed the document:\n%s\n%s", j1, j2)
	}
}

// noProcs is a node whose driver cannot list processes.
type noProcs struct{ *gpu.Simulated }

func (n noProcs) Processes(int, []gpu.Process) ([]gpu.Process, error) {
	return nil, gpu.ErrNoProcessList
}

// A GPU whose processes cannot be listed is not "held and idle": which
// processes used it is unknown, and the documents and series say so.
func TestGPUProcessesUnknownAreAbsent(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	sim, _ := gpu.NewSimulated(gpu.SimConfig{Devices: 2, Profile: gpu.ProfileIdle, Now: func() time.Time { return now }})
	gc, err := collector.NewGPUCollector(noProcs{sim}, pidList{1}, []int{0, 1}, gpu.AttributionSlurm)
	if err != nil {
		t.Fatal(err)
	}
	st := NewNodeState(now, time.Second, 0.05)
	st.EnableGPU("nvml", gpu.AttributionSlurm, 2, 0.1)
	buf := NewBuffer(4)
	var s collector.Sample
	for i := 0; i < 3; i++ {
		s.Reset(now)
		s.Missing &^= collector.MetricProcesses
		if err := gc.Collect(&s); err != nil {
			t.Fatalf("an unlistable process list is not a collector error: %v", err)
		}
		st.Add(&s)
		buf.Add(&s)
		now = now.Add(time.Second)
	}
	var doc jobmodel.Node
	st.Fill(&doc, now)
	if doc.GPU == nil || len(doc.GPUs) != 2 {
		t.Fatalf("gpu %+v", doc.GPU)
	}
	for _, g := range doc.GPUs {
		if g.HeldIdle || g.ProcessSeconds != nil || !slices.Contains(g.MissingMetrics, "gpu_processes") {
			t.Errorf("gpu %d: held_idle %v process_seconds %v missing %v", g.Index, g.HeldIdle, g.ProcessSeconds, g.MissingMetrics)
		}
	}
	if *doc.GPU.HeldIdle != 0 || !slices.Contains(doc.MissingMetrics, "gpu_processes") {
		t.Errorf("summary held_idle %v, missing %v", *doc.GPU.HeldIdle, doc.MissingMetrics)
	}
	for _, s := range buf.gpuSeries(nil, nil) {
		if s.Name == "jobsight_job_gpu_processes" {
			t.Errorf("processes series written while the processes are unknown: %+v", s)
		}
	}
}
