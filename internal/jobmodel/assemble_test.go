package jobmodel

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func node(name string, coreSec, peakCores float64, peakMem, limit int64) Node {
	return Node{
		Node:       name,
		AgentState: AgentFinished,
		Allocated:  Allocation{CPUs: Ptr[int64](2)},
		Usage: Usage{
			CPU:    &CPUUsage{CoreSeconds: Ptr(coreSec), PeakCores: Ptr(peakCores), AvgCores: Ptr(coreSec / 100)},
			Memory: &MemoryUsage{PeakBytes: Ptr(peakMem), RSSPeakBytes: Ptr(peakMem / 2), LimitBytes: Ptr(limit), Efficiency: Ptr(float64(peakMem/2) / float64(limit))},
			IO:     &IOUsage{ReadBytes: Ptr[int64](10), WrittenBytes: Ptr[int64](20)},
		},
		Sampling: Sampling{IntervalSeconds: 5, Count: 20},
	}
}

func TestAssembleSumsNodes(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := Job{Nodes: []string{"n1", "n2"}, StartTime: At(start), EndTime: At(start.Add(100 * time.Second)),
		Requested: Request{CPUs: Ptr[int64](4)}}
	Assemble(&job, []Node{node("n1", 150, 2, 1000, 4000), node("n2", 50, 1, 3000, 4000)})

	if got := *job.CPU.CoreSeconds; got != 200 {
		t.Errorf("core_seconds = %v, want 200", got)
	}
	if got := *job.CPU.AvgCores; got != 2 {
		t.Errorf("avg_cores = %v, want 2 (200 core-s over 100 s)", got)
	}
	if got := *job.CPU.Efficiency; math.Abs(got-0.5) > 1e-9 {
		t.Errorf("efficiency = %v, want 0.5 (2 of 4 cores)", got)
	}
	if *job.Memory.PeakBytes != 4000 || *job.Memory.MaxNodePeakBytes != 3000 {
		t.Errorf("memory peak %d / max node %d, want 4000 / 3000", *job.Memory.PeakBytes, *job.Memory.MaxNodePeakBytes)
	}
	if *job.Memory.Efficiency != 1500.0/4000 {
		t.Errorf("memory efficiency = %v, want the fullest node's 0.375", *job.Memory.Efficiency)
	}
	if *job.IO.ReadBytes != 20 || *job.IO.WrittenBytes != 40 {
		t.Errorf("io = %d/%d, want 20/40", *job.IO.ReadBytes, *job.IO.WrittenBytes)
	}
	if job.Sampling.Count != 40 || job.MissingMetrics != nil {
		t.Errorf("sampling count %d, missing %v", job.Sampling.Count, job.MissingMetrics)
	}
}

func TestAssemblePartialSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	n1 := node("n1", 10, 1, 100, 1000)
	n1.IO = nil
	n1.MissingMetrics = []string{"io"}
	n1.AgentState = AgentLost
	job := Job{Nodes: []string{"n1", "n2"}}
	Assemble(&job, []Node{n1})
	want := []string{"io", "node:n2", "samples_after_agent_loss:n1"}
	if !reflect.DeepEqual(job.MissingMetrics, want) {
		t.Errorf("missing_metrics = %v, want %v", job.MissingMetrics, want)
	}
	if job.IO != nil {
		t.Errorf("io = %+v, want absent (not zero)", job.IO)
	}
	if job.CPU == nil || *job.CPU.CoreSeconds != 10 {
		t.Errorf("cpu from the node that has it should be kept: %+v", job.CPU)
	}
}

func TestAssembleJoinsGPUs(t *testing.T) {
	t.Parallel()
	n1 := node("g1", 10, 1, 10, 100)
	n1.GPU = &GPUUsage{Count: 2, Held: Ptr[int64](2), Source: GPUSourceNVML, Attribution: "slurm", EffectiveGPUs: Ptr[int64](2),
		HeldIdle: Ptr[int64](0), GPUSeconds: Ptr(200.0), EnergyJoules: Ptr(1000.0), MemoryPeakBytes: Ptr[int64](5 << 30)}
	n1.GPUs = []GPUDevice{{Index: 0, Held: true, UtilizationAvg: Ptr(0.9)}, {Index: 1, Held: true, UtilizationAvg: Ptr(0.7)}}
	n2 := node("g2", 10, 1, 10, 100)
	n2.GPU = &GPUUsage{Count: 2, Held: Ptr[int64](2), Source: GPUSourceNVML, Attribution: "slurm", EffectiveGPUs: Ptr[int64](0),
		HeldIdle: Ptr[int64](2), GPUSeconds: Ptr(200.0), EnergyJoules: Ptr(300.0), MemoryPeakBytes: Ptr[int64](1 << 30)}
	n2.GPUs = []GPUDevice{{Index: 0, Held: true, HeldIdle: true, UtilizationAvg: Ptr(0.0)}, {Index: 1, Held: true, HeldIdle: true, UtilizationAvg: Ptr(0.0)}}
	n3 := node("cpu1", 10, 1, 10, 100) // a node of the job without GPUs
	job := Job{Nodes: []string{"g1", "g2", "cpu1"}}
	Assemble(&job, []Node{n1, n2, n3})
	g := job.GPU
	if g == nil || g.Count != 4 || *g.Held != 4 || *g.EffectiveGPUs != 2 || *g.HeldIdle != 2 || *g.EnergyJoules != 1300 ||
		*g.GPUSeconds != 400 || *g.MemoryPeakBytes != 5<<30 || g.Source != "nvml" || g.Attribution != "slurm" {
		t.Fatalf("gpu summary = %+v", g)
	}
	if math.Abs(*g.UtilizationAvg-0.4) > 1e-9 || *g.EffectiveRatio != 0.5 {
		t.Errorf("utilization %v ratio %v, want 0.4 and 0.5", *g.UtilizationAvg, *g.EffectiveRatio)
	}
	if len(job.GPUs) != 4 || job.GPUs[0].Node != "g1" || job.GPUs[3].Node != "g2" || !job.GPUs[3].HeldIdle {
		t.Errorf("per-GPU entries = %+v", job.GPUs)
	}
	// No node with GPUs: no GPU fields at all.
	job = Job{Nodes: []string{"cpu1"}}
	Assemble(&job, []Node{n3})
	if job.GPU != nil || job.GPUs != nil {
		t.Errorf("CPU-only job got GPU fields %+v", job.GPU)
	}
}

func TestJoinTimelinesAlignsSteps(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := Node{Node: "a", Usage: Usage{GPU: &GPUUsage{Count: 1, UtilizationTimeline: []*float64{Ptr(1.0), Ptr(1.0), Ptr(0.0), nil}, TimelineStepSeconds: Ptr(5.0), TimelineStart: At(t0)}}}
	b := Node{Node: "b", Usage: Usage{GPU: &GPUUsage{Count: 3, UtilizationTimeline: []*float64{Ptr(0.2), Ptr(0.2)}, TimelineStepSeconds: Ptr(10.0), TimelineStart: At(t0.Add(time.Second))}}}
	step, start := timelineFrame([]Node{a, b})
	tl := joinTimelines([]Node{a, b}, utilTimeline, step)
	// a at 10 s steps: [1, 0] (its gap left out); weighted with b (3
	// GPUs): [(1+0.6)/4, (0+0.6)/4].
	if step != 10 || !start.Equal(t0) || len(tl) != 2 || math.Abs(*tl[0]-0.4) > 1e-9 || math.Abs(*tl[1]-0.15) > 1e-9 {
		t.Errorf("timeline %v step %v start %v", tl, step, start)
	}
	if step, _ := timelineFrame([]Node{{Node: "c"}}); step != 0 || joinTimelines([]Node{{Node: "c"}}, utilTimeline, 1) != nil {
		t.Errorf("no GPU node gave a timeline")
	}
	// A gap on every node stays a gap.
	gap := Node{Node: "g", Usage: Usage{GPU: &GPUUsage{Count: 1, UtilizationTimeline: []*float64{Ptr(0.5), nil, Ptr(0.5)},
		TimelineStepSeconds: Ptr(5.0), TimelineStart: At(t0)}}}
	if tl := joinTimelines([]Node{gap}, utilTimeline, 5); len(tl) != 3 || tl[1] != nil {
		t.Errorf("gap filled: %v", tl)
	}
}

func deref[T any](p *T) T {
	var zero T
	if p != nil {
		return *p
	}
	return zero
}

func TestPeakAtLimitIfOOM(t *testing.T) {
	t.Parallel()
	n := node("n1", 1, 1, 74<<20, 100<<20) // sampled 74 MiB of a 100 MiB limit
	job := Job{State: StateOutOfMemory, Nodes: []string{"n1"}}
	Assemble(&job, []Node{n})
	PeakAtLimitIfOOM(&job, []Node{n})
	if *job.Memory.PeakBytes != 100<<20 || *job.Memory.MaxNodePeakBytes != 100<<20 || !job.Memory.PeakFromLimit {
		t.Errorf("OOM job memory %+v", *job.Memory)
	}
	// A job not killed for memory keeps its sampled peak.
	ok := Job{State: StateCompleted, Nodes: []string{"n1"}}
	Assemble(&ok, []Node{n})
	PeakAtLimitIfOOM(&ok, []Node{n})
	if *ok.Memory.PeakBytes != 74<<20 || ok.Memory.PeakFromLimit {
		t.Errorf("completed job memory %+v", *ok.Memory)
	}
	// An OOM job whose sample caught the limit says nothing more.
	full := node("n1", 1, 1, 100<<20, 100<<20)
	oom := Job{State: StateOutOfMemory, Nodes: []string{"n1"}}
	Assemble(&oom, []Node{full})
	PeakAtLimitIfOOM(&oom, []Node{full})
	if oom.Memory.PeakFromLimit {
		t.Error("peak_from_limit set although the sampled peak reached the limit")
	}
}

// Shared memory, mapped files and the working set are summed over nodes
// like the other memory fields; the fullest node's working-set peak is kept.
func TestAssembleWorkingSetAndSharedMemory(t *testing.T) {
	t.Parallel()
	withWS := func(n Node, shm, ws int64) Node {
		m := *n.Memory
		m.ShmemAvgBytes, m.ShmemPeakBytes = Ptr(shm/2), Ptr(shm)
		m.MappedFileAvgBytes, m.MappedFilePeakBytes = Ptr(shm/4), Ptr(shm/2)
		m.WorkingSetAvgBytes, m.WorkingSetP95Bytes, m.WorkingSetPeakBytes = Ptr(ws/2), Ptr(ws-1), Ptr(ws)
		n.Memory = &m
		return n
	}
	nodes := []Node{withWS(node("n1", 1, 1, 1000, 4000), 300, 900), withWS(node("n2", 1, 1, 3000, 4000), 100, 2500)}
	job := Job{Nodes: []string{"n1", "n2"}}
	Assemble(&job, nodes)
	m := job.Memory
	got := []int64{deref(m.ShmemAvgBytes), deref(m.ShmemPeakBytes), deref(m.MappedFileAvgBytes), deref(m.MappedFilePeakBytes),
		deref(m.WorkingSetAvgBytes), deref(m.WorkingSetP95Bytes), deref(m.WorkingSetPeakBytes), deref(m.MaxNodeWorkingSetPeakBytes)}
	want := []int64{200, 400, 100, 200, 1700, 3398, 3400, 2500}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shmem avg/peak, mapped avg/peak, working set avg/p95/peak/max node = %v, want %v", got, want)
	}
	// A node that could not read the working set leaves it absent there,
	// not zero: the job's figures come from the nodes that have it.
	nodes[1].Memory.WorkingSetPeakBytes = nil
	Assemble(&job, nodes)
	if deref(job.Memory.WorkingSetPeakBytes) != 900 || deref(job.Memory.MaxNodeWorkingSetPeakBytes) != 900 {
		t.Errorf("working set peak %v / max node %v, want 900 from n1", job.Memory.WorkingSetPeakBytes, job.Memory.MaxNodeWorkingSetPeakBytes)
	}
	// Killed for memory: the working set reached the limit too.
	oomNode := withWS(node("n1", 1, 1, 100<<20, 100<<20), 0, 60<<20)
	oom := Job{State: StateOutOfMemory, Nodes: []string{"n1"}}
	Assemble(&oom, []Node{oomNode})
	PeakAtLimitIfOOM(&oom, []Node{oomNode})
	if deref(oom.Memory.MaxNodeWorkingSetPeakBytes) != 100<<20 || deref(oom.Memory.WorkingSetPeakBytes) != 100<<20 || !oom.Memory.PeakFromLimit {
		t.Errorf("OOM job memory %+v", *oom.Memory)
	}
}

// Per-node figures that saturated (a cgroup's "unlimited" read as the
// largest int64) add up to the largest int64, never to a negative job
// figure.
func TestJobSumsSaturate(t *testing.T) {
	big := int64(math.MaxInt64)
	nodes := []Node{{}, {}}
	for i := range nodes {
		nodes[i].Allocated.CPUs = &big
	}
	got := sumI(nodes, func(n *Node) *int64 { return n.Allocated.CPUs })
	if got == nil || *got != math.MaxInt64 {
		t.Fatalf("sum of two saturated figures = %v, want MaxInt64", got)
	}
}

// pressure is a node's pressure figures: watched seconds, and per family
// (PressureFamilies order) stall seconds and peak ratio; the ratio is the
// seconds over the watched time.
func pressure(watched float64, seconds, peaks [5]float64) *PressureUsage {
	p := &PressureUsage{WatchedSeconds: Ptr(watched)}
	for i, f := range p.Families() {
		*f.Seconds, *f.PeakRatio = Ptr(seconds[i]), Ptr(peaks[i])
		*f.Ratio = Ptr(seconds[i] / watched)
	}
	return p
}

// A job's stall ratio over two nodes is their stall seconds over their
// watched seconds (a node watched longer weighs more), its peak and
// max_node ratios the worst node's; OOM kills are summed; a node without
// pressure figures (cgroup v1) leaves the others' and is named missing.
func TestAssemblePressureAndOOMKillsOverNodes(t *testing.T) {
	t.Parallel()
	n1 := node("n1", 10, 1, 100, 1000)
	n1.Pressure = pressure(100, [5]float64{10, 0, 0, 50, 20}, [5]float64{0.2, 0, 0, 0.95, 0.5})
	n1.Memory.OOMKills = Ptr[int64](2)
	n2 := node("n2", 10, 1, 100, 1000)
	n2.Pressure = pressure(300, [5]float64{30, 3, 1, 10, 0}, [5]float64{0.5, 0.1, 0.05, 0.2, 0})
	n2.Memory.OOMKills = Ptr[int64](1)
	n3 := node("n3", 10, 1, 100, 1000)
	n3.MissingMetrics = []string{"cpu_pressure", "io_pressure", "memory_pressure", "oom_kills"}
	job := Job{Nodes: []string{"n1", "n2", "n3"}}
	Assemble(&job, []Node{n1, n2, n3})

	p := job.Pressure
	if p == nil || p.WatchedSeconds == nil || *p.WatchedSeconds != 400 {
		t.Fatalf("pressure %+v, want 400 s watched (100 + 300)", p)
	}
	want := []struct{ seconds, ratio, peak, maxNode float64 }{
		{40, 0.1, 0.5, 0.1},          // cpu_some: 40 s of 400; n1 0.1, n2 0.1
		{3, 0.0075, 0.1, 0.01},       // memory_some
		{1, 0.0025, 0.05, 1.0 / 300}, // memory_full
		{60, 0.15, 0.95, 0.5},        // io_some: n1 50 %, n2 3.3 %: 60 of 400 s, not the mean 26.7 %
		{20, 0.05, 0.5, 0.2},         // io_full
	}
	for i, f := range p.Families() {
		w := want[i]
		for what, got := range map[string][2]*float64{
			"seconds": {*f.Seconds, &w.seconds}, "ratio": {*f.Ratio, &w.ratio},
			"peak_ratio": {*f.PeakRatio, &w.peak}, "max_node_ratio": {*f.MaxNodeRatio, &w.maxNode},
		} {
			if got[0] == nil || math.Abs(*got[0]-*got[1]) > 1e-12 {
				t.Errorf("%s %s = %v, want %v", PressureFamilies[i], what, got[0], *got[1])
			}
		}
	}
	if job.Memory.OOMKills == nil || *job.Memory.OOMKills != 3 {
		t.Errorf("memory.oom_kills = %v, want 3", job.Memory.OOMKills)
	}
	want2 := []string{"cpu_pressure", "io_pressure", "memory_pressure", "oom_kills"}
	if !reflect.DeepEqual(job.MissingMetrics, want2) {
		t.Errorf("missing_metrics = %v, want %v", job.MissingMetrics, want2)
	}

	// No node with pressure figures: absent, not zero.
	job = Job{Nodes: []string{"n3"}}
	Assemble(&job, []Node{n3})
	if job.Pressure != nil || job.Memory.OOMKills != nil {
		t.Errorf("pressure %+v, oom_kills %v from a node without them", job.Pressure, job.Memory.OOMKills)
	}
}

func TestAssembleGPUActivityAcrossNodes(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	stat := func(avg, p95, peak float64) *Stat { return &Stat{Avg: Ptr(avg), P95: Ptr(p95), Peak: Ptr(peak)} }
	// Node a: an H100 launch-bound (SM 0.1). Node b: an H100 busy (SM
	// 0.9) and an A100 with no activity figures at all.
	a := Node{Node: "a", Usage: Usage{GPU: &GPUUsage{Count: 1, UtilizationTimeline: []*float64{Ptr(0.9), Ptr(0.9)},
		SMActivityTimeline: []*float64{Ptr(0.1), Ptr(0.1)}, TimelineStepSeconds: Ptr(5.0), TimelineStart: At(t0)},
		GPUs: []GPUDevice{{Index: 0, Activity: &GPUActivity{SM: stat(0.1, 0.12, 0.2)}}}}}
	b := Node{Node: "b", Usage: Usage{GPU: &GPUUsage{Count: 2, UtilizationTimeline: []*float64{Ptr(0.9), Ptr(0.9)},
		SMActivityTimeline: []*float64{Ptr(0.9), nil}, TimelineStepSeconds: Ptr(5.0), TimelineStart: At(t0)},
		GPUs: []GPUDevice{{Index: 0, Activity: &GPUActivity{SM: stat(0.9, 0.95, 1), DRAM: stat(0.3, 0.4, 0.5)}}, {Index: 1}}}}
	sum, devs := assembleGPUs([]Node{a, b})
	if len(devs) != 3 || devs[2].Activity != nil {
		t.Fatalf("devices %+v", devs)
	}
	act := sum.Activity
	// The mean over the GPUs that give the figure: (0.1+0.9)/2, not /3.
	if act == nil || act.SM == nil || *act.SM.Avg != 0.5 || *act.SM.P95 != 0.95 || *act.SM.Peak != 1 {
		t.Fatalf("SM summary %+v", act)
	}
	if act.DRAM == nil || *act.DRAM.Avg != 0.3 || act.Tensor != nil {
		t.Errorf("DRAM %+v, tensor %+v (want 0.3 and absent)", act.DRAM, act.Tensor)
	}
	// The SM timelines join like the utilisation's: weighted by GPU count
	// where a node has a point, a node's gap left out.
	// A node of MIG instances: SM activity, no utilisation.
	mig := Node{Node: "m", Usage: Usage{GPU: &GPUUsage{Count: 1, SMActivityTimeline: []*float64{Ptr(0.4)},
		TimelineStepSeconds: Ptr(5.0), TimelineStart: At(t0)}}}
	if s, _ := assembleGPUs([]Node{mig}); len(s.SMActivityTimeline) != 1 || s.UtilizationTimeline != nil || s.TimelineStepSeconds == nil {
		t.Errorf("MIG-only job: SM %v, util %v, step %v", s.SMActivityTimeline, s.UtilizationTimeline, s.TimelineStepSeconds)
	}
	tl := sum.SMActivityTimeline
	if len(tl) != 2 || math.Abs(*tl[0]-(0.1+2*0.9)/3) > 1e-9 || math.Abs(*tl[1]-0.1) > 1e-9 {
		t.Errorf("SM timeline %v", tl)
	}
}

// A node whose watch began late: its stall total holds the seconds before
// its first sample, its ratio only those of its watched time. The job's
// ratio weighs the nodes' ratios, never the totals over the watched time
// (here 103 s of stall over 40 s watched).
func TestAssemblePressureFromTheNodesWatchedShares(t *testing.T) {
	t.Parallel()
	late := node("n1", 10, 1, 100, 1000)
	late.Pressure = pressure(10, [5]float64{100, 0, 0, 0, 0}, [5]float64{0.3, 0, 0, 0, 0})
	*late.Pressure.Families()[0].Ratio = Ptr(0.2)
	n2 := node("n2", 10, 1, 100, 1000)
	n2.Pressure = pressure(30, [5]float64{3, 0, 0, 0, 0}, [5]float64{0.2, 0, 0, 0, 0})
	job := Job{Nodes: []string{"n1", "n2"}}
	Assemble(&job, []Node{late, n2})
	f := job.Pressure.Families()[0]
	if *f.Seconds == nil || **f.Seconds != 103 || *f.Ratio == nil || math.Abs(**f.Ratio-0.125) > 1e-12 {
		t.Errorf("cpu_some: %v s, ratio %v; want 103 s and (0.2×10 + 0.1×30)/40 = 0.125", deref(*f.Seconds), deref(*f.Ratio))
	}
}
