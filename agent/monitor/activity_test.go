package monitor

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/gpu"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// activityPass is one pass over two held GPUs: device 0 a Hopper GPU with
// GPM figures (utilisation u, SM activity sm, PCIe receive rx), device 1
// an older one that gives only utilisation and memory.
func activityPass(t time.Time, u, sm, rx float64) collector.Sample {
	var s collector.Sample
	s.Reset(t)
	s.Missing &^= collector.MetricProcesses
	s.Processes = 1
	hopper := collector.GPUSample{Device: gpu.Device{Index: 0, UUID: "GPU-h", Model: "NVIDIA H200", Parent: -1}, Held: true, ProcessesKnown: true, JobProcesses: 1}
	hopper.Reading.Reset()
	hopper.Reading.UtilizationRatio, hopper.Reading.SMActivity, hopper.Reading.PCIeRxBytesPerSecond = u, sm, rx
	hopper.Reading.TensorActivity, hopper.Reading.DRAMActivity = sm/2, 0.1
	hopper.Reading.Set(gpu.FieldUtilization | gpu.FieldSMActivity | gpu.FieldTensorActivity | gpu.FieldDRAMActivity | gpu.FieldPCIe)
	old := collector.GPUSample{Device: gpu.Device{Index: 1, UUID: "GPU-a", Model: "NVIDIA A100", Parent: -1}, Held: true, ProcessesKnown: true, JobProcesses: 1}
	old.Reading.Reset()
	old.Reading.UtilizationRatio, old.Reading.MemoryUsedBytes = u, 1<<30
	old.Reading.Set(gpu.FieldUtilization | gpu.FieldMemoryUsed)
	s.GPUs = []collector.GPUSample{hopper, old}
	return s
}

func TestGPUActivitySummaries(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	st := NewNodeState(t0, time.Second, 0.05)
	st.EnableGPU("nvml", gpu.AttributionSlurm, 2, 0.10)
	// 20 passes of a launch-bound job (utilisation 0.95, SM activity
	// 0.1), then 5 with the SMs busy: the average, p95 and peak must
	// follow, and the timeline must show SM activity beside utilisation.
	for i := range 25 {
		sm := 0.1
		if i >= 20 {
			sm = 0.9
		}
		s := activityPass(t0.Add(time.Duration(i)*time.Second), 0.95, sm, 2e9)
		st.Add(&s)
	}
	var doc jobmodel.Node
	st.Fill(&doc, st.LastSample)
	if len(doc.GPUs) != 2 {
		t.Fatalf("%d GPU entries", len(doc.GPUs))
	}
	h, old := doc.GPUs[0], doc.GPUs[1]
	a := h.Activity
	if a == nil || a.SM == nil || a.SM.Avg == nil {
		t.Fatalf("Hopper GPU without SM activity: %+v", h)
	}
	if avg := *a.SM.Avg; math.Abs(avg-(20*0.1+5*0.9)/25) > 0.02 {
		t.Errorf("SM activity avg %v, want ~0.26", avg)
	}
	if p95, peak := *a.SM.P95, *a.SM.Peak; math.Abs(p95-0.9) > 0.02 || peak != 0.9 {
		t.Errorf("SM activity p95 %v peak %v, want ~0.9 and 0.9", p95, peak)
	}
	if a.PCIeRxBytesPerSecond == nil || math.Abs(*a.PCIeRxBytesPerSecond.Avg-2e9) > 1 {
		t.Errorf("PCIe receive %+v, want 2e9", a.PCIeRxBytesPerSecond)
	}
	// What the device did not give is absent, never zero, and named.
	if a.SMOccupancy != nil || a.LinkRxBytesPerSecond != nil || a.FP32 != nil {
		t.Errorf("figures the device never gave are present: %+v", a)
	}
	if slices.Contains(h.MissingMetrics, "gpu_sm_activity") || !slices.Contains(h.MissingMetrics, "gpu_sm_occupancy") {
		t.Errorf("Hopper GPU missing %v", h.MissingMetrics)
	}
	if old.Activity != nil {
		t.Errorf("the older GPU has activity %+v", old.Activity)
	}
	for _, m := range []string{"gpu_sm_activity", "gpu_tensor_activity", "gpu_dram_activity", "gpu_link"} {
		if !slices.Contains(old.MissingMetrics, m) || !slices.Contains(doc.MissingMetrics, m) {
			t.Errorf("%s not named missing: GPU %v, node %v", m, old.MissingMetrics, doc.MissingMetrics)
		}
	}
	// The summary: the mean of the GPUs that have the figure (not diluted
	// by the one that has none), the larger peak.
	sum := doc.GPU.Activity
	if sum == nil || sum.SM == nil || *sum.SM.Avg != *a.SM.Avg || *sum.SM.Peak != 0.9 {
		t.Errorf("summary activity %+v", sum)
	}
	tl, sm := doc.GPU.UtilizationTimeline, doc.GPU.SMActivityTimeline
	if len(sm) != len(tl) || len(sm) != 25 || sm[0] == nil || math.Abs(*sm[0]-0.1) > 1e-9 || math.Abs(*sm[24]-0.9) > 1e-9 || math.Abs(*tl[0]-0.95) > 1e-9 {
		t.Errorf("timelines: util %d points, SM %d points (%v)", len(tl), len(sm), values(sm))
	}

	// The state round-trips through the checkpoint with its activity.
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back NodeState
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	var doc2 jobmodel.Node
	back.Fill(&doc2, back.LastSample)
	if doc2.GPUs[0].Activity == nil || *doc2.GPUs[0].Activity.SM.Avg != *a.SM.Avg || len(doc2.GPU.SMActivityTimeline) != 25 {
		t.Errorf("after a checkpoint round trip: %+v", doc2.GPUs[0].Activity)
	}
}

func TestSMTimelineFollowsUtilisationBuckets(t *testing.T) {
	t.Parallel()
	// 300 passes: the utilisation timeline halves its buckets several
	// times; SM activity, reported from the second pass on (GPM's first
	// window), must come out on the same buckets.
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	st := NewNodeState(t0, time.Second, 0.05)
	st.EnableGPU("nvml", gpu.AttributionSlurm, 2, 0.10)
	for i := range 300 {
		s := activityPass(t0.Add(time.Duration(i)*time.Second), 0.5, 0.25, 0)
		if i == 0 {
			s.GPUs[0].Reading.Missing |= gpu.ActivityFields | gpu.FieldPCIe
		}
		st.Add(&s)
	}
	var doc jobmodel.Node
	st.Fill(&doc, st.LastSample)
	tl, sm := doc.GPU.UtilizationTimeline, doc.GPU.SMActivityTimeline
	if len(tl) < 32 || len(sm) != len(tl) {
		t.Fatalf("util %d points, SM %d", len(tl), len(sm))
	}
	for i, v := range sm {
		if v == nil || math.Abs(*v-0.25) > 1e-9 {
			t.Errorf("SM point %d = %v", i, values([]*float64{v}))
		}
	}
	// Filling a document leaves the state as it was: a second fill after
	// more passes gives the same buckets again.
	for i := 300; i < 310; i++ {
		s := activityPass(t0.Add(time.Duration(i)*time.Second), 0.5, 0.25, 0)
		st.Add(&s)
	}
	var doc2 jobmodel.Node
	st.Fill(&doc2, st.LastSample)
	for i, v := range doc2.GPU.SMActivityTimeline {
		if v == nil || math.Abs(*v-0.25) > 1e-9 {
			t.Errorf("after a second fill, SM point %d = %v", i, values([]*float64{v}))
		}
	}
}

func values(p []*float64) []any {
	out := make([]any, len(p))
	for i, v := range p {
		if v != nil {
			out[i] = *v
		}
	}
	return out
}

func TestSMTimelineWithoutUtilisation(t *testing.T) {
	t.Parallel()
	// A MIG instance: NVML gives no utilisation, GPM gives SM activity.
	// The document still gets the SM timeline, with its step and start.
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	st := NewNodeState(t0, time.Second, 0.05)
	st.EnableGPU("nvml", gpu.AttributionSlurm, 1, 0.10)
	for i := range 100 {
		s := activityPass(t0.Add(time.Duration(i)*time.Second), 0, 0.4, 0)
		s.GPUs = s.GPUs[:1]
		s.GPUs[0].Device.Parent, s.GPUs[0].Device.Partition = 0, "3g.71gb"
		s.GPUs[0].Reading.Missing |= gpu.FieldUtilization
		st.Add(&s)
	}
	var doc jobmodel.Node
	st.Fill(&doc, st.LastSample)
	g := doc.GPU
	if len(g.UtilizationTimeline) != 0 || len(g.SMActivityTimeline) < 32 || g.TimelineStepSeconds == nil || g.TimelineStart == nil || !g.TimelineStart.Equal(t0) {
		t.Fatalf("util %d points, SM %d points, step %v, start %v", len(g.UtilizationTimeline), len(g.SMActivityTimeline), g.TimelineStepSeconds, g.TimelineStart)
	}
	for i, v := range g.SMActivityTimeline {
		if v == nil || math.Abs(*v-0.4) > 1e-9 {
			t.Errorf("SM point %d = %v", i, values([]*float64{v}))
		}
	}
}

func TestTimelinesShareTheCoarserStep(t *testing.T) {
	t.Parallel()
	// Utilisation for the first 10 passes only, SM activity for 200: the
	// SM timeline halves its buckets more often; the document gives both
	// on the coarser step, utilisation's points where they belong.
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	st := NewNodeState(t0, time.Second, 0.05)
	st.EnableGPU("nvml", gpu.AttributionSlurm, 1, 0.10)
	for i := range 200 {
		s := activityPass(t0.Add(time.Duration(i)*time.Second), 0.9, 0.3, 0)
		s.GPUs = s.GPUs[:1]
		if i >= 10 {
			s.GPUs[0].Reading.Missing |= gpu.FieldUtilization
		}
		st.Add(&s)
	}
	var doc jobmodel.Node
	st.Fill(&doc, st.LastSample)
	g := doc.GPU
	step := *g.TimelineStepSeconds
	if step < 4 || len(g.SMActivityTimeline) > 64 || len(g.UtilizationTimeline) > len(g.SMActivityTimeline) {
		t.Fatalf("step %v, util %d points, SM %d points", step, len(g.UtilizationTimeline), len(g.SMActivityTimeline))
	}
	// The first 10 s of utilisation fill ceil(10/step) buckets, at 0.9.
	want := int(math.Ceil(10 / step))
	if len(g.UtilizationTimeline) != want || *g.UtilizationTimeline[0] != 0.9 {
		t.Errorf("util timeline %v on step %v, want %d points of 0.9", values(g.UtilizationTimeline), step, want)
	}
}
