package monitor

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/gpu"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// The kernel's figures are uint64 and the node document's int64. A figure
// past math.MaxInt64 (a memory.max or memory.peak file holding one, an I/O
// counter saturated at math.MaxUint64, a driver's reading, a checkpoint
// file a successor resumes from) is written as math.MaxInt64: it used to
// wrap to a negative number of bytes (and a float past 2^63 to
// math.MinInt64 on amd64).
func TestFillSaturatesFiguresPastInt64(t *testing.T) {
	t.Parallel()
	const huge = math.MaxUint64 - 1 // as memory.max may hold it; "max" is no limit
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	st := NewNodeState(t0, time.Second, 0.05)
	for i := range 2 {
		var s collector.Sample
		s.Reset(t0.Add(time.Duration(i) * time.Second))
		s.MemoryUsedBytes, s.MemoryWorkingSetBytes = huge, huge
		s.MemoryPeakBytes, s.MemoryLimitBytes = huge, huge
		s.IOReadBytes, s.IOWriteBytes = huge, huge
		s.Missing &^= collector.MetricMemory | collector.MetricMemoryWorkingSet | collector.MetricMemoryPeak |
			collector.MetricMemoryLimit | collector.MetricIO
		st.Add(&s)
	}
	// IO totals saturate at math.MaxUint64 across counter resets.
	st.IORead.Carried, st.IOWrite.Carried = math.MaxUint64, math.MaxUint64
	st.EnableGPU("simulated", gpu.AttributionSlurm, 1, 0.1)
	st.GPU.Devices = []GPUDeviceState{{
		Device: gpu.Device{Index: 0, MemoryTotalBytes: math.MaxUint64, Parent: -1},
		Held:   true, JobMemoryKnown: true, JobMemoryPeak: math.MaxUint64,
	}}
	// Through the checkpoint file, as a successor agent reads it.
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var resumed NodeState
	if err := json.Unmarshal(b, &resumed); err != nil {
		t.Fatal(err)
	}
	var doc jobmodel.Node
	resumed.Fill(&doc, t0.Add(2*time.Second))

	m := doc.Usage.Memory
	if m == nil || doc.Usage.IO == nil || doc.GPU == nil || len(doc.GPUs) != 1 {
		t.Fatalf("document lacks memory, io or gpu: %+v", doc.Usage)
	}
	d := doc.GPUs[0]
	for name, v := range map[string]*int64{
		"memory.peak_bytes": m.PeakBytes, "memory.limit_bytes": m.LimitBytes, "memory.avg_bytes": m.AvgBytes,
		"memory.working_set_peak_bytes": m.WorkingSetPeakBytes, "allocated.memory_bytes": doc.Allocated.MemoryBytes,
		"io.read_bytes": doc.Usage.IO.ReadBytes, "io.written_bytes": doc.Usage.IO.WrittenBytes,
		"gpu.memory_total_bytes": d.MemoryTotalBytes, "gpu.job_memory_peak_bytes": d.JobMemoryPeakBytes,
	} {
		if v == nil || *v != math.MaxInt64 {
			t.Errorf("%s = %v, want %d", name, deref(v), int64(math.MaxInt64))
		}
	}
	if m.Efficiency == nil || *m.Efficiency < 0 || *m.Efficiency > 1 {
		t.Errorf("memory efficiency %v, want within [0, 1]", deref(m.Efficiency))
	}
}
