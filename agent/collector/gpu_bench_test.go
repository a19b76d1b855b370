package collector

import (
	"testing"

	"github.com/jobsight/jobsight/agent/gpu"
)

type benchPIDs []int32

func (p benchPIDs) PIDs() []int32 { return p }

// BenchmarkGPUCollect8 is one pass of the GPU collector over a job holding
// 8 GPUs of the simulated source with its program on each: the collector's
// own cost (attribution, process matching, samples) without a driver's.
// The NVML backend's calls are measured in agent/gpu/nvidia.
func BenchmarkGPUCollect8(b *testing.B) {
	sim, err := gpu.NewSimulated(gpu.SimConfig{Devices: 8, Profile: gpu.ProfileSteady})
	if err != nil {
		b.Fatal(err)
	}
	pids := make(benchPIDs, 64)
	for i := range pids {
		pids[i] = int32(4000 + i)
	}
	c, err := NewGPUCollector(sim, pids, []int{0, 1, 2, 3, 4, 5, 6, 7}, gpu.AttributionSlurm)
	if err != nil {
		b.Fatal(err)
	}
	var s Sample
	b.ReportAllocs()
	for b.Loop() {
		s.Reset(s.Time)
		if err := c.Collect(&s); err != nil {
			b.Fatal(err)
		}
	}
	if len(s.GPUs) != 8 || s.GPUs[7].JobProcesses != 1 {
		b.Fatalf("last pass: %d GPUs, %d job processes on GPU 7", len(s.GPUs), s.GPUs[7].JobProcesses)
	}
}
