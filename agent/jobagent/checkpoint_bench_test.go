package jobagent

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/gpu"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// BenchmarkCheckpoint is one job's checkpoint of an hour's samples,
// encoded and written into a state directory: durably (a new file synced
// and renamed over the old, at a watch's start, handover and end, and
// once a DurableCheckpointEvery while it runs) and in place into the two
// kept-open slots (at every other flush of a running watch).
func BenchmarkCheckpoint(b *testing.B) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := monitor.NewNodeState(start, time.Second, 0.05)
	for i := 0; i < 3600; i++ {
		s := collector.Sample{Time: start.Add(time.Duration(i) * time.Second), CPUUsageNanos: uint64(i) * 7e8,
			MemoryUsedBytes: uint64(1+i%97) << 20, MemoryRSSBytes: uint64(1+i%89) << 20, MemoryLimitBytes: 4 << 30,
			CPUsAllocated: 2, Processes: 3, Threads: 6, IOReadBytes: uint64(i) << 10, IOWriteBytes: uint64(i) << 11}
		st.Add(&s)
	}
	job := jobmodel.Job{DocID: "c1:4242", Cluster: "c1", JobID: "4242", User: "alice", Partition: "batch", Nodes: []string{"n001"}}
	ck := &Checkpoint{Job: job, Node: nodeTemplate(job, "n001"), State: st, Leader: true}
	dir := b.TempDir()
	if err := ensureStateDirs(dir); err != nil {
		b.Fatal(err)
	}
	f := jobFiles(dir, "c1", "n001", 4242)
	b.Run("atomic", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := f.saveCheckpoint(ck); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("in-place", func(b *testing.B) {
		w := newCheckpointWriter(f, time.Now)
		defer w.close()
		b.ReportAllocs()
		for b.Loop() {
			if err := w.save(ck); err != nil {
				b.Fatal(err)
			}
		}
	})
	// durable: what a save costs when it replaces the checkpoint and
	// syncs it and its directory (once a DurableCheckpointEvery).
	b.Run("durable", func(b *testing.B) {
		w := newCheckpointWriter(f, time.Now)
		w.every = 0
		defer w.close()
		b.ReportAllocs()
		for b.Loop() {
			if err := w.save(ck); err != nil {
				b.Fatal(err)
			}
		}
	})
	if got, err := f.loadCheckpoint(); err != nil || got.State.Count != 3600 {
		b.Fatalf("the checkpoint does not read back: %v", err)
	}
}

// BenchmarkCheckpoint8GPUs is the same hour's checkpoint of a job holding
// eight Hopper GPUs with every activity figure (GPM), noisy as real
// figures are: what the per-GPU activity summaries cost at each flush.
func BenchmarkCheckpoint8GPUs(b *testing.B) {
	// Every figure uniformly random over its range: the most histogram
	// buckets an hour can make (the worst case).
	b.Run("activity-worst", func(b *testing.B) { benchmarkCheckpointGPUs(b, false, 1) })
	// Training-like: each figure at a level, ±3 % noise, an evaluation
	// phase at a lower level every 10 minutes.
	b.Run("activity-plateaus", func(b *testing.B) { benchmarkCheckpointGPUs(b, false, 0.03) })
	// The same GPUs without the activity figures (a GPU before Hopper).
	b.Run("no-activity", func(b *testing.B) { benchmarkCheckpointGPUs(b, true, 1) })
}

func benchmarkCheckpointGPUs(b *testing.B, noActivity bool, noise float64) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := monitor.NewNodeState(start, time.Second, 0.05)
	st.EnableGPU("nvml", gpu.AttributionSlurm, 8, 0.1)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3600; i++ {
		s := collector.Sample{Time: start.Add(time.Duration(i) * time.Second), CPUUsageNanos: uint64(i) * 7e8,
			MemoryUsedBytes: uint64(1+i%97) << 20, MemoryRSSBytes: uint64(1+i%89) << 20, MemoryLimitBytes: 4 << 30,
			CPUsAllocated: 2, Processes: 3, Threads: 6, IOReadBytes: uint64(i) << 10, IOWriteBytes: uint64(i) << 11}
		for d := range 8 {
			g := collector.GPUSample{Device: gpu.Device{Index: d, UUID: fmt.Sprintf("GPU-%d", d), Parent: -1}, Held: true, ProcessesKnown: true, JobProcesses: 1}
			r := &g.Reading
			r.Reset()
			// x is a figure around level: uniformly anywhere below it
			// (noise 1), or within ±noise of it, lower in the
			// evaluation phase.
			x := func(level float64) float64 {
				if noise >= 1 {
					return level * rng.Float64()
				}
				if (i/60)%10 == 9 {
					level *= 0.3
				}
				return level * (1 + noise*(2*rng.Float64()-1))
			}
			u := min(1, x(0.97))
			r.UtilizationRatio, r.MemoryUsedBytes, r.PowerWatts, r.SMClockHz = u, uint64(x(70<<30)), 100+600*u, 1.98e9
			r.SMActivity, r.SMOccupancy, r.TensorActivity = min(1, x(0.85)), x(0.3), x(0.6)
			r.TensorFP64Activity, r.TensorFP16Activity, r.TensorINT8Activity = 0, r.TensorActivity, 0
			r.FP64Activity, r.FP32Activity, r.FP16Activity = x(0.01), x(0.2), x(0.05)
			r.DRAMActivity = x(0.4)
			r.PCIeRxBytesPerSecond, r.PCIeTxBytesPerSecond = x(2e9), x(2e8)
			r.LinkRxBytesPerSecond, r.LinkTxBytesPerSecond = x(4e10), x(4e10)
			r.Set(gpu.AllFields)
			if noActivity {
				r.Missing |= gpu.ActivityFields | gpu.FieldPCIe
			}
			s.GPUs = append(s.GPUs, g)
		}
		st.Add(&s)
	}
	job := jobmodel.Job{DocID: "c1:4243", Cluster: "c1", JobID: "4243", User: "alice", Partition: "gpu", Nodes: []string{"n001"}}
	ck := &Checkpoint{Job: job, Node: nodeTemplate(job, "n001"), State: st, Leader: true}
	dir := b.TempDir()
	if err := ensureStateDirs(dir); err != nil {
		b.Fatal(err)
	}
	f := jobFiles(dir, "c1", "n001", 4243)
	w := newCheckpointWriter(f, time.Now)
	defer w.close()
	b.ReportAllocs()
	for b.Loop() {
		if err := w.save(ck); err != nil {
			b.Fatal(err)
		}
	}
	enc, err := json.Marshal(ck)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(enc)), "bytes")
}
