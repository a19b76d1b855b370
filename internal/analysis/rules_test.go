package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// ruleCase is one job for one rule: whether the rule fires, and if so
// with what confidence (0: not checked) and evidence.
type ruleCase struct {
	name     string
	job      func() jobmodel.Job
	cfg      func(*Config)
	timeline []float64
	fire     bool
	conf     float64
	evidence []string
	// absent are causes that must not fire alongside (false positives).
	absent []string
	// present are causes that must fire alongside.
	present []string
}

func gpuWith(n int, edit func(j *jobmodel.Job)) func() jobmodel.Job {
	return func() jobmodel.Job {
		j := baseGPU(n)
		edit(&j)
		return j
	}
}

func cpuWith(edit func(j *jobmodel.Job)) func() jobmodel.Job {
	return func() jobmodel.Job {
		j := baseCPU()
		edit(&j)
		return j
	}
}

// serial makes a CPU job that used about one of its cpus CPUs.
func serial(j *jobmodel.Job, cpus int64) {
	el := *j.ElapsedSeconds
	j.Requested.CPUs = p(cpus)
	j.CPU = &jobmodel.CPUUsage{CoreSeconds: p(0.98 * el), AvgCores: p(0.98), P95Cores: p(1.0), PeakCores: p(1.02)}
	j.Threads = &jobmodel.CountUsage{Peak: p[int64](1)}
}

// withStalls gives a single-node job pressure figures over its whole run:
// the share of the time its tasks stalled per family (in
// jobmodel.PressureFamilies order; negative: not measured), the worst
// interval half as much again.
func withStalls(j *jobmodel.Job, ratios [5]float64) {
	w := *j.ElapsedSeconds
	j.Pressure = &jobmodel.PressureUsage{WatchedSeconds: p(w)}
	for i, f := range j.Pressure.Families() {
		if ratios[i] < 0 {
			continue
		}
		*f.Seconds, *f.Ratio, *f.PeakRatio = p(ratios[i]*w), p(ratios[i]), p(math.Min(1, 1.5*ratios[i]))
	}
}

var ruleCases = map[string][]ruleCase{
	CauseGPUsHeldIdle: {
		{name: "three of four held idle", job: gpuWith(4, func(j *jobmodel.Job) {
			holdIdle(j, 1)
			holdIdle(j, 2)
			holdIdle(j, 3)
		}), fire: true, conf: 0.95, evidence: []string{"3 of 4 GPUs", "gpu001 GPU 1, 2, 3", "2h run"},
			present: []string{CauseParallelismMismatch}, absent: []string{CauseOverScaled, CauseGPUUnused}},
		{name: "held idle, utilisation unreadable", job: gpuWith(2, func(j *jobmodel.Job) {
			holdIdle(j, 1)
			j.GPUs[1].UtilizationAvg = nil
			syncGPU(j)
		}), fire: true, conf: 0.8},
		{name: "no process seen but the GPU was busy: not idle", job: gpuWith(2, func(j *jobmodel.Job) {
			j.GPUs[1].HeldIdle = true
			syncGPU(j)
		})},
		{name: "summary only", job: gpuWith(2, func(j *jobmodel.Job) {
			j.GPUs = nil
			j.GPU.HeldIdle = p[int64](1)
		}), fire: true, conf: 0.8, evidence: []string{"1 of 2 GPUs"}},
		{name: "none held idle", job: gpuWith(4, func(j *jobmodel.Job) {})},
		{name: "below min_gpus", job: gpuWith(4, func(j *jobmodel.Job) { holdIdle(j, 3) }),
			cfg: func(c *Config) { c.Rules.GPUsHeldIdle.MinGPUs = 2 }},
		{name: "CPU job", job: cpuWith(func(j *jobmodel.Job) {})},
	},
	CauseGPUUnused: {
		{name: "process on the GPU, no work, little memory", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.01, 0.02) }),
			fire: true, conf: 0.85, evidence: []string{"1.0% utilisation", "2.0% of GPU memory"},
			absent: []string{CauseOverScaled, CauseSmallJobLargeGPU, CauseMemoryResidentLowUtil}},
		{name: "no work but memory held: not unused", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.01, 0.9) }),
			present: []string{CauseMemoryResidentLowUtil}},
		{name: "some work", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.05, 0.02) })},
		{name: "GPU memory unknown", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.01, -1) })},
		{name: "all GPUs held idle: no GPU in use", job: gpuWith(2, func(j *jobmodel.Job) {
			holdIdle(j, 0)
			holdIdle(j, 1)
		}), present: []string{CauseGPUsHeldIdle}},
		{name: "threshold raised", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.05, 0.02) }),
			cfg: func(c *Config) { c.Rules.GPUUnused.MaxGPUUtilization = 0.06 }, fire: true},
	},
	CauseParallelismMismatch: {
		{name: "one of four busy", job: gpuWith(4, func(j *jobmodel.Job) {
			for i := 1; i < 4; i++ {
				setGPU(j, i, 0, 0.01)
			}
		}), fire: true, conf: 0.9, evidence: []string{"1 of 4 GPUs", "more than 10%", "per GPU: 85%, 0%, 0%, 0%"},
			absent: []string{CauseOverScaled, CauseGPUsHeldIdle}},
		{name: "three of eight busy", job: gpuWith(8, func(j *jobmodel.Job) {
			for i := 3; i < 8; i++ {
				setGPU(j, i, 0.02, 0.01)
			}
		}), fire: true, conf: 0.7, evidence: []string{"3 of 8 GPUs"}},
		{name: "three of four busy", job: gpuWith(4, func(j *jobmodel.Job) { setGPU(j, 3, 0, 0.01) })},
		{name: "three of four busy, ratio raised", job: gpuWith(4, func(j *jobmodel.Job) { setGPU(j, 3, 0, 0.01) }),
			cfg: func(c *Config) { c.Rules.ParallelismMismatch.MaxEffectiveRatio = 0.8 }, fire: true},
		{name: "single GPU", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.05, 0.5) })},
		{name: "no GPU busy", job: gpuWith(4, func(j *jobmodel.Job) {
			for i := 0; i < 4; i++ {
				setGPU(j, i, 0.05, 0.05)
			}
		})},
		{name: "a GPU without utilisation", job: gpuWith(4, func(j *jobmodel.Job) {
			for i := 1; i < 4; i++ {
				setGPU(j, i, 0, 0.01)
			}
			setGPU(j, 3, -1, 0.01)
		})},
	},
	CauseCPUBottleneck: {
		{name: "GPU at 30%, CPUs saturated", job: gpuWith(1, func(j *jobmodel.Job) {
			setGPU(j, 0, 0.3, 0.3)
			setCPUEff(j, 0.95)
		}), fire: true, conf: 0.82, evidence: []string{"30% utilisation", "95% busy", "8 CPUs"},
			absent: []string{CauseOverScaled, CauseSmallJobLargeGPU}},
		{name: "CPUs not saturated", job: gpuWith(1, func(j *jobmodel.Job) {
			setGPU(j, 0, 0.3, 0.3)
			setCPUEff(j, 0.6)
		})},
		{name: "CPUs not saturated, threshold lowered", job: gpuWith(1, func(j *jobmodel.Job) {
			setGPU(j, 0, 0.3, 0.3)
			setCPUEff(j, 0.6)
		}), cfg: func(c *Config) { c.Rules.CPUBottleneck.MinCPUEfficiency = 0.5 }, fire: true},
		{name: "GPU busy enough", job: gpuWith(1, func(j *jobmodel.Job) {
			setGPU(j, 0, 0.6, 0.3)
			setCPUEff(j, 0.95)
		})},
		{name: "GPU not used at all: the code runs on the CPU", job: gpuWith(1, func(j *jobmodel.Job) {
			setGPU(j, 0, 0.01, 0.1)
			setCPUEff(j, 0.95)
		}), present: []string{CauseGPUUnused}},
		{name: "held-idle GPUs do not lower the GPUs-in-use average", job: gpuWith(2, func(j *jobmodel.Job) {
			setGPU(j, 0, 0.6, 0.5)
			holdIdle(j, 1)
			setCPUEff(j, 0.95)
		}), present: []string{CauseGPUsHeldIdle}},
		{name: "CPU job", job: cpuWith(func(j *jobmodel.Job) { setCPUEff(j, 0.99) })},
	},
	CauseUtilizationDrop: {
		{name: "busy, then idle", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.4, 0.3) }),
			timeline: []float64{0.9, 0.9, 0.85, 0.9, 0.1, 0.05, 0.05, 0.05}, fire: true, conf: 0.87,
			evidence: []string{"90% over the first 25%", "6.2% over the last 50%", "8 timeline points"},
			absent:   []string{CauseOverScaled}},
		{name: "not finite points are ignored", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.4, 0.3) }),
			timeline: []float64{0.9, math.NaN(), 0.9, 0.85, 0.9, math.Inf(1), 0.1, 0.05, 0.05, 0.05}, fire: true},
		{name: "no timeline", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.4, 0.3) })},
		{name: "too few points", job: gpuWith(1, func(j *jobmodel.Job) {}), timeline: []float64{0.9, 0.9, 0.1, 0.1, 0.1}},
		{name: "steady", job: gpuWith(1, func(j *jobmodel.Job) {}), timeline: []float64{0.9, 0.8, 0.9, 0.85, 0.9, 0.8, 0.9, 0.85}},
		{name: "warm-up, then busy", job: gpuWith(1, func(j *jobmodel.Job) {}), timeline: []float64{0.1, 0.2, 0.5, 0.8, 0.9, 0.9, 0.9, 0.9}},
		{name: "low from the start", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.2, 0.5) }),
			timeline: []float64{0.3, 0.3, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1}},
		{name: "CPU job", job: cpuWith(func(j *jobmodel.Job) {}), timeline: []float64{0.9, 0.9, 0.85, 0.9, 0.1, 0.05, 0.05, 0.05}},
	},
	CauseSmallJobLargeGPU: {
		{name: "4 GiB of 80 GiB at 8%", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.08, 0.05) }),
			fire: true, conf: 0.8, evidence: []string{"4.0 GiB of the 80.0 GiB", "NVIDIA A100-SXM4-80GB", "8.0% utilisation"},
			absent: []string{CauseOverScaled, CauseGPUUnused}},
		{name: "8 GiB of 80 GiB", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.08, 0.1) }), fire: true, conf: 0.7},
		{name: "already a MIG slice", job: gpuWith(1, func(j *jobmodel.Job) {
			setGPU(j, 0, 0.08, 0.05)
			j.GPUs[0].ParentIndex = p[int64](0)
			j.GPUs[0].Partition = "3g.40gb"
		})},
		{name: "already an AMD CPX partition", job: gpuWith(1, func(j *jobmodel.Job) {
			setGPU(j, 0, 0.08, 0.05)
			j.GPUs[0].Partition = "CPX"
		})},
		{name: "an MI250X GCD is a whole device", job: gpuWith(1, func(j *jobmodel.Job) {
			setGPU(j, 0, 0.08, 0.05)
			j.GPUs[0].Partition, j.GPUs[0].Vendor, j.GPUs[0].Model = "GCD", "amd", "AMD Instinct MI250X"
		}), fire: true},
		{name: "small GPU", job: gpuWith(1, func(j *jobmodel.Job) {
			setGPU(j, 0, 0.08, 0.05)
			j.GPUs[0].MemoryTotalBytes = p(24 * giB)
		})},
		{name: "a fifth of the memory", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.08, 0.2) })},
		{name: "busy", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.3, 0.05) })},
		{name: "two GPUs", job: gpuWith(2, func(j *jobmodel.Job) {
			setGPU(j, 0, 0.08, 0.05)
			setGPU(j, 1, 0.08, 0.05)
		})},
		{name: "others' memory on the device is not the job's", job: gpuWith(1, func(j *jobmodel.Job) {
			setGPU(j, 0, 0.08, 0.05)
			j.GPUs[0].MemoryPeakBytes = p(70 * giB)
		}), fire: true},
		{name: "device memory when the job's own is unknown", job: gpuWith(1, func(j *jobmodel.Job) {
			setGPU(j, 0, 0.08, 0.05)
			j.GPUs[0].MemoryPeakBytes = p(70 * giB)
			j.GPUs[0].JobMemoryPeakBytes = nil
		})},
	},
	CauseMemoryResidentLowUtil: {
		{name: "model in memory, few requests", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.03, 0.9) }),
			fire: true, conf: 0.6, evidence: []string{"3.0% utilisation", "90% of a GPU's memory", "72.0 GiB of 80.0 GiB"},
			absent: []string{CauseOverScaled, CauseGPUUnused, CauseGPUsHeldIdle, CauseSmallJobLargeGPU}},
		{name: "busier", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.3, 0.9) })},
		{name: "little memory", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.03, 0.3) })},
		{name: "data loading explains it", job: gpuWith(1, func(j *jobmodel.Job) {
			setGPU(j, 0, 0.1, 0.9)
			setCPUEff(j, 0.95)
		}), present: []string{CauseCPUBottleneck}},
	},
	CauseOverScaled: {
		{name: "four GPUs lightly used", job: gpuWith(4, func(j *jobmodel.Job) {
			for i := 0; i < 4; i++ {
				setGPU(j, i, 0.2, 0.1)
			}
			setCPUEff(j, 0.3)
		}), fire: true, conf: 0.7, evidence: []string{"The 4 GPUs in use averaged 20%", "10% of its memory", "8.0 GiB of 80.0 GiB"}},
		{name: "four GPUs barely used", job: gpuWith(4, func(j *jobmodel.Job) {
			for i := 0; i < 4; i++ {
				setGPU(j, i, 0.1, 0.1)
			}
		}), fire: true, conf: 0.8},
		{name: "lightly used but memory full", job: gpuWith(4, func(j *jobmodel.Job) {
			for i := 0; i < 4; i++ {
				setGPU(j, i, 0.2, 0.6)
			}
		})},
		{name: "held-idle GPUs are not blamed", job: gpuWith(4, func(j *jobmodel.Job) {
			setGPU(j, 0, 0.9, 0.05)
			for i := 1; i < 4; i++ {
				holdIdle(j, i)
			}
		}), present: []string{CauseGPUsHeldIdle, CauseParallelismMismatch}},
		{name: "GPU memory unknown", job: gpuWith(4, func(j *jobmodel.Job) {
			for i := 0; i < 4; i++ {
				setGPU(j, i, 0.2, -1)
			}
		})},
		{name: "threshold lowered", job: gpuWith(4, func(j *jobmodel.Job) {
			for i := 0; i < 4; i++ {
				setGPU(j, i, 0.2, 0.1)
			}
		}), cfg: func(c *Config) { c.Rules.OverScaled.MaxGPUUtilization = 0.15 }},
	},
	CauseTooManyCoresPerGPU: {
		{name: "64 cores for one GPU, idle", job: gpuWith(1, func(j *jobmodel.Job) {
			j.Requested.CPUs = p[int64](64)
			setCPUEff(j, 0.05)
		}), fire: true, conf: 0.8, evidence: []string{"64 CPUs for 1 GPU", "64 per GPU, above 16", "5.0% of them busy"}},
		{name: "64 cores for one GPU, busy", job: gpuWith(1, func(j *jobmodel.Job) {
			j.Requested.CPUs = p[int64](64)
			setCPUEff(j, 0.7)
		})},
		{name: "16 cores per GPU", job: gpuWith(2, func(j *jobmodel.Job) {
			j.Requested.CPUs = p[int64](32)
			setCPUEff(j, 0.05)
		})},
		{name: "site with 8 cores per GPU", job: gpuWith(1, func(j *jobmodel.Job) {
			j.Requested.CPUs = p[int64](12)
			setCPUEff(j, 0.3)
		}), cfg: func(c *Config) { c.Rules.TooManyCoresPerGPU.MaxCoresPerGPU = 8 }, fire: true, conf: 0.7},
		{name: "CPU job", job: cpuWith(func(j *jobmodel.Job) {
			j.Requested.CPUs = p[int64](64)
			setCPUEff(j, 0.05)
		})},
	},
	CauseTooMuchMemoryPerGPU: {
		{name: "512 GiB for one GPU, 50 GiB used", job: gpuWith(1, func(j *jobmodel.Job) {
			j.Requested.MemoryBytes, j.Requested.MemoryPerNodeBytes = p(512*giB), p(512*giB)
			j.Memory.MaxNodePeakBytes = p(50 * giB)
		}), fire: true, conf: 0.8, evidence: []string{"512.0 GiB of host memory for 1 GPU", "above 128.0 GiB", "9.8% of the request"},
			absent: []string{CauseMemoryOverrequest}},
		{name: "512 GiB for one GPU, 300 GiB used", job: gpuWith(1, func(j *jobmodel.Job) {
			j.Requested.MemoryBytes, j.Requested.MemoryPerNodeBytes = p(512*giB), p(512*giB)
			j.Memory.MaxNodePeakBytes = p(300 * giB)
		})},
		{name: "128 GiB per GPU", job: gpuWith(2, func(j *jobmodel.Job) {
			j.Requested.MemoryBytes, j.Requested.MemoryPerNodeBytes = p(256*giB), p(256*giB)
			j.Memory.MaxNodePeakBytes = p(20 * giB)
		}), present: []string{CauseMemoryOverrequest}},
		{name: "failed early", job: gpuWith(1, func(j *jobmodel.Job) {
			j.Requested.MemoryBytes, j.Requested.MemoryPerNodeBytes = p(512*giB), p(512*giB)
			j.Memory.MaxNodePeakBytes = p(50 * giB)
			j.State = jobmodel.StateFailed
		})},
	},
	CauseCPUJobOnGPUPartition: {
		{name: "no GPU partitions configured", job: cpuWith(func(j *jobmodel.Job) { j.Partition = "gpu" })},
		{name: "pattern", job: cpuWith(func(j *jobmodel.Job) { j.Partition = "gpu-a100" }),
			cfg:  func(c *Config) { c.Rules.CPUJobOnGPUPartition.Partitions = []string{"gpu*"} },
			fire: true, conf: 0.9, evidence: []string{`partition "gpu-a100"`, `("gpu*")`}},
		{name: "exact name", job: cpuWith(func(j *jobmodel.Job) { j.Partition = "a100" }),
			cfg: func(c *Config) { c.Rules.CPUJobOnGPUPartition.Partitions = []string{"gpu", "a100"} }, fire: true},
		{name: "GPU job there", job: gpuWith(1, func(j *jobmodel.Job) { j.Partition = "gpu" }),
			cfg: func(c *Config) { c.Rules.CPUJobOnGPUPartition.Partitions = []string{"gpu*"} }},
		{name: "CPU partition", job: cpuWith(func(j *jobmodel.Job) { j.Partition = "cpu" }),
			cfg: func(c *Config) { c.Rules.CPUJobOnGPUPartition.Partitions = []string{"gpu*"} }},
		{name: "GPUs the agent could not read", job: cpuWith(func(j *jobmodel.Job) {
			j.Partition = "gpu"
			j.MissingMetrics = []string{"gpu"}
		}), cfg: func(c *Config) { c.Rules.CPUJobOnGPUPartition.Partitions = []string{"gpu"} }},
	},
	CauseSerialJobManyCores: {
		{name: "one thread on four CPUs", job: cpuWith(func(j *jobmodel.Job) { serial(j, 4) }),
			fire: true, conf: 0.95, evidence: []string{"4 CPUs", "peaked at 1.02 cores", "averaged 0.98 cores", "at most 1 thread"},
			absent: []string{CauseCPUOverrequest}},
		{name: "a few threads", job: cpuWith(func(j *jobmodel.Job) {
			serial(j, 4)
			j.Threads.Peak = p[int64](3)
		}), fire: true, conf: 0.85},
		{name: "no sampled peak", job: cpuWith(func(j *jobmodel.Job) {
			serial(j, 4)
			j.CPU.PeakCores = nil
			j.Threads = nil
		}), fire: true, conf: 0.65, evidence: []string{"no sampled peak"}},
		{name: "peaks of several cores", job: cpuWith(func(j *jobmodel.Job) {
			serial(j, 4)
			j.CPU.PeakCores = p(2.5)
		})},
		{name: "mostly idle: not serial", job: cpuWith(func(j *jobmodel.Job) {
			serial(j, 4)
			j.CPU.AvgCores, j.CPU.CoreSeconds, j.CPU.PeakCores = p(0.1), p(0.1**j.ElapsedSeconds), p(0.3)
		}), present: []string{CauseCPUOverrequest}},
		{name: "one CPU", job: cpuWith(func(j *jobmodel.Job) { serial(j, 1) })},
		{name: "below min_cpus", job: cpuWith(func(j *jobmodel.Job) { serial(j, 4) }),
			cfg: func(c *Config) { c.Rules.SerialJobManyCores.MinCPUs = 8 }},
		{name: "GPU job", job: gpuWith(1, func(j *jobmodel.Job) {
			j.CPU = &jobmodel.CPUUsage{CoreSeconds: p(0.98 * *j.ElapsedSeconds), AvgCores: p(0.98), P95Cores: p(1.0), PeakCores: p(1.02)}
		})},
	},
	CauseCPUOverrequest: {
		{name: "16 CPUs at 20%", job: cpuWith(func(j *jobmodel.Job) {
			j.Requested.CPUs = p[int64](16)
			setCPUEff(j, 0.2)
		}), fire: true, conf: 0.78, evidence: []string{"20% of the CPU time of its 16 CPUs", "95th percentile of use: 3.52 cores"}},
		{name: "16 CPUs at 60%", job: cpuWith(func(j *jobmodel.Job) {
			j.Requested.CPUs = p[int64](16)
			setCPUEff(j, 0.6)
		})},
		{name: "GPU job", job: gpuWith(1, func(j *jobmodel.Job) { setCPUEff(j, 0.05) })},
		{name: "one CPU", job: cpuWith(func(j *jobmodel.Job) {
			j.Requested.CPUs = p[int64](1)
			setCPUEff(j, 0.2)
		})},
	},
	CauseIOStall: {
		{name: "60% of the run on I/O", job: cpuWith(func(j *jobmodel.Job) {
			withStalls(j, [5]float64{0.02, 0, 0, 0.6, 0.1})
			j.IO = &jobmodel.IOUsage{ReadBytes: p(100 * giB), WrittenBytes: p(20 * giB)}
		}), fire: true, conf: 0.75, evidence: []string{"waited for I/O during 60% of the 2h they were watched: 1h12m stalled;",
			"all of its tasks at once during 10%", "90% in the worst sampling interval", "read 100.0 GiB and wrote 20.0 GiB"},
			absent: []string{CauseMemoryStall, CauseCPUStall}},
		{name: "I/O all the time, on a GPU job too", job: gpuWith(1, func(j *jobmodel.Job) { withStalls(j, [5]float64{0, 0, 0, 1, 0.5}) }),
			fire: true, conf: 0.9},
		{name: "19% on I/O", job: cpuWith(func(j *jobmodel.Job) { withStalls(j, [5]float64{0, 0, 0, 0.19, 0.1}) })},
		{name: "19% on I/O, threshold 0.1", job: cpuWith(func(j *jobmodel.Job) { withStalls(j, [5]float64{0, 0, 0, 0.19, 0.1}) }),
			cfg: func(c *Config) { c.Rules.IOStall.MinRatio = 0.1 }, fire: true},
		{name: "no pressure figures (cgroup v1)", job: cpuWith(func(j *jobmodel.Job) { j.Pressure = nil })},
		{name: "I/O ratio not measured", job: cpuWith(func(j *jobmodel.Job) { withStalls(j, [5]float64{0, 0, 0, -1, -1}) })},
		{name: "watched five minutes only", job: cpuWith(func(j *jobmodel.Job) {
			withStalls(j, [5]float64{0, 0, 0, 0.6, 0.1})
			j.Pressure.WatchedSeconds = p(300.0)
		})},
	},
	CauseMemoryStall: {
		{name: "reclaiming at its limit", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory.MaxNodeWorkingSetPeakBytes = p(158 * giB / 10)
			withStalls(j, [5]float64{0, 0.3, 0.1, 0.05, 0})
		}), fire: true, conf: 0.72, evidence: []string{"waited for memory", "during 30% of the 2h", "all of its tasks at once during 10%",
			"memory peak reached 99% of its request"}, absent: []string{CauseIOStall, CauseMemoryOverrequest}},
		{name: "memory use unknown", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory = nil
			withStalls(j, [5]float64{0, 0.3, 0, 0, 0})
		}), fire: true, conf: 0.67},
		{name: "killed for memory after stalling", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory.MaxNodeWorkingSetPeakBytes = p(16 * giB)
			j.State = jobmodel.StateOutOfMemory
			withStalls(j, [5]float64{0, 0.5, 0.2, 0, 0})
		}), fire: true, evidence: []string{"killed for memory"}, absent: []string{CauseOOMKilledChild}},
		// The v2 test node's memstall job: a file twice its limit read
		// again and again; the page cache fills the limit, the working
		// set stays well below it.
		{name: "page cache at the limit, small working set", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory.MaxNodeWorkingSetPeakBytes = p(8 * giB)
			j.Memory.MaxNodePeakBytes, j.Memory.PeakBytes = p(16*giB), p(16*giB)
			withStalls(j, [5]float64{0, 0.18, 0.02, 0, 0})
		}), fire: true, evidence: []string{"page cache included, reached 100% of its request", "its working set 50%"}},
		{name: "stalls far below the limit (the node's memory, not the job's)", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory.MaxNodeWorkingSetPeakBytes = p(5 * giB)
			withStalls(j, [5]float64{0, 0.3, 0.1, 0, 0})
		})},
		{name: "5% on memory", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory.MaxNodeWorkingSetPeakBytes = p(16 * giB)
			withStalls(j, [5]float64{0, 0.05, 0, 0, 0})
		})},
		{name: "no pressure figures", job: cpuWith(func(j *jobmodel.Job) { j.Memory.MaxNodeWorkingSetPeakBytes = p(16 * giB) })},
	},
	CauseCPUStall: {
		{name: "32 threads on 8 CPUs", job: cpuWith(func(j *jobmodel.Job) {
			j.Threads = &jobmodel.CountUsage{Peak: p[int64](32)}
			withStalls(j, [5]float64{0.7, 0, 0, 0, 0})
		}), fire: true, conf: 0.83, evidence: []string{"waited for a CPU during 70%", "up to 32 threads ran on its 8 CPUs"},
			absent: []string{CauseCPUOverrequest}},
		{name: "waits with as many threads as CPUs", job: cpuWith(func(j *jobmodel.Job) {
			j.Threads = &jobmodel.CountUsage{Peak: p[int64](8)}
			withStalls(j, [5]float64{0.3, 0, 0, 0, 0})
		}), fire: true, conf: 0.62},
		{name: "10% waiting", job: cpuWith(func(j *jobmodel.Job) { withStalls(j, [5]float64{0.1, 0, 0, 0, 0}) })},
		{name: "no pressure figures", job: cpuWith(func(j *jobmodel.Job) { j.Threads = &jobmodel.CountUsage{Peak: p[int64](32)} })},
	},
	CauseOOMKilledChild: {
		{name: "two processes killed, job completed", job: cpuWith(func(j *jobmodel.Job) { j.Memory.OOMKills = p[int64](2) }),
			fire: true, conf: 0.9, evidence: []string{"killed 2 processes of the job", "ended COMPLETED", "peak reached 75% of its request"}},
		{name: "a process killed, the job failed", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory.OOMKills, j.State = p[int64](1), jobmodel.StateFailed
		}), fire: true, evidence: []string{"killed 1 process of", "ended FAILED"}},
		// A process killed for memory: the request is not lowered, however
		// small the peak the samples saw.
		{name: "killed, small sampled peak", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory.OOMKills, j.Memory.MaxNodePeakBytes = p[int64](1), p[int64](200<<20)
		}), fire: true, absent: []string{CauseMemoryOverrequest}},
		{name: "the job itself ran out of memory", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory.OOMKills, j.State = p[int64](1), jobmodel.StateOutOfMemory
		})},
		{name: "no process killed", job: cpuWith(func(j *jobmodel.Job) { j.Memory.OOMKills = p[int64](0) })},
		{name: "kills not measured (cgroup v1)", job: cpuWith(func(j *jobmodel.Job) { j.Memory.OOMKills = nil })},
		{name: "one kill, min_kills 2", job: cpuWith(func(j *jobmodel.Job) { j.Memory.OOMKills = p[int64](1) }),
			cfg: func(c *Config) { c.Rules.OOMKilledChild.MinKills = 2 }},
	},
	CauseMemoryOverrequest: {
		{name: "200 MiB of 16 GiB", job: cpuWith(func(j *jobmodel.Job) { j.Memory.MaxNodePeakBytes = p[int64](200 << 20) }),
			fire: true, conf: 0.89, evidence: []string{"fullest node was 200 MiB of the 16.0 GiB requested per node (1.2%)"}},
		{name: "200 MiB working set of 16 GiB, 12 GiB charged with page cache", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory.WorkingSetPeakBytes, j.Memory.MaxNodeWorkingSetPeakBytes = p[int64](200<<20), p[int64](200<<20)
		}), fire: true, conf: 0.89, evidence: []string{"Peak working set", "fullest node was 200 MiB of the 16.0 GiB requested per node (1.2%)"}},
		{name: "small RSS but 10 GiB of shared memory in the working set", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory.MaxNodePeakBytes, j.Memory.RSSPeakBytes, j.Memory.ShmemPeakBytes = p(11*giB), p[int64](200<<20), p(10*giB)
			j.Memory.WorkingSetPeakBytes, j.Memory.MaxNodeWorkingSetPeakBytes = p(11*giB), p(11*giB)
		})},
		{name: "small request", job: cpuWith(func(j *jobmodel.Job) {
			j.Requested.MemoryBytes, j.Requested.MemoryPerNodeBytes = p(3*giB/2), p(3*giB/2)
			j.Memory.MaxNodePeakBytes = p[int64](50 << 20)
		})},
		{name: "small request, floor lowered", job: cpuWith(func(j *jobmodel.Job) {
			j.Requested.MemoryBytes, j.Requested.MemoryPerNodeBytes = p(3*giB/2), p(3*giB/2)
			j.Memory.MaxNodePeakBytes = p[int64](50 << 20)
		}), cfg: func(c *Config) { c.Rules.MemoryOverrequest.MinRequestGiB = 1 }, fire: true},
		{name: "failed", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory.MaxNodePeakBytes = p[int64](200 << 20)
			j.State = jobmodel.StateFailed
		})},
		{name: "cancelled", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory.MaxNodePeakBytes = p[int64](200 << 20)
			j.State = jobmodel.StateCancelled
		})},
		{name: "out of memory", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory.MaxNodePeakBytes = p[int64](200 << 20)
			j.State = jobmodel.StateOutOfMemory
		})},
		{name: "still running", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory.MaxNodePeakBytes = p[int64](200 << 20)
			j.State = jobmodel.StateRunning
		})},
		{name: "timed out", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory.MaxNodePeakBytes = p[int64](200 << 20)
			j.State = jobmodel.StateTimeout
		}), fire: true},
		{name: "30% used", job: cpuWith(func(j *jobmodel.Job) { j.Memory.MaxNodePeakBytes = p(16 * giB * 3 / 10) })},
		{name: "resident memory only", job: cpuWith(func(j *jobmodel.Job) {
			j.Memory = &jobmodel.MemoryUsage{RSSPeakBytes: p[int64](200 << 20)}
		}), fire: true, conf: 0.79, evidence: []string{"Peak resident memory was 200 MiB of the 16.0 GiB requested"}},
		{name: "the floor leaves nothing to change", job: cpuWith(func(j *jobmodel.Job) {
			j.Requested.MemoryBytes, j.Requested.MemoryPerNodeBytes = p(2*giB), p(2*giB)
			j.Memory.MaxNodePeakBytes = p[int64](400 << 20)
		}), cfg: func(c *Config) { c.Recommend.MinMemoryGiB = 2 }},
	},
	CauseWalltimeOverrequest: {
		{name: "1h18m of 24h", job: cpuWith(func(j *jobmodel.Job) {
			j.ElapsedSeconds, j.TimeLimitSeconds = p(4700.0), p[int64](86400)
		}), fire: true, conf: 0.86, evidence: []string{"1h18m of its 1d time limit (5.4%)"}},
		{name: "failed early", job: cpuWith(func(j *jobmodel.Job) {
			j.ElapsedSeconds, j.TimeLimitSeconds, j.State = p(4700.0), p[int64](86400), jobmodel.StateFailed
		})},
		{name: "cancelled early", job: cpuWith(func(j *jobmodel.Job) {
			j.ElapsedSeconds, j.TimeLimitSeconds, j.State = p(4700.0), p[int64](86400), jobmodel.StateCancelled
		})},
		{name: "node failure", job: cpuWith(func(j *jobmodel.Job) {
			j.ElapsedSeconds, j.TimeLimitSeconds, j.State = p(4700.0), p[int64](86400), jobmodel.StateNodeFail
		})},
		{name: "15 minutes of one hour", job: cpuWith(func(j *jobmodel.Job) {
			j.ElapsedSeconds, j.TimeLimitSeconds = p(900.0), p[int64](3600)
		})},
		{name: "15 minutes of one hour, min_unused 0", job: cpuWith(func(j *jobmodel.Job) {
			j.ElapsedSeconds, j.TimeLimitSeconds = p(900.0), p[int64](3600)
		}), cfg: func(c *Config) { c.Rules.WalltimeOverrequest.MinUnused = 0 }, fire: true},
		{name: "half the limit", job: cpuWith(func(j *jobmodel.Job) {
			j.ElapsedSeconds, j.TimeLimitSeconds = p(43200.0), p[int64](86400)
		})},
		{name: "no limit", job: cpuWith(func(j *jobmodel.Job) {
			j.ElapsedSeconds, j.TimeLimitSeconds = p(4700.0), nil
		})},
	},
}

func TestRules(t *testing.T) {
	t.Parallel()
	for _, id := range CauseIDs() {
		cases := ruleCases[id]
		fires, quiet := 0, 0
		for _, tc := range cases {
			cfg := Default()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("%s/%s: %v", id, tc.name, err)
			}
			a := Analyze(Input{Job: tc.job(), At: testNow, GPUTimeline: tc.timeline}, cfg)
			checkInvariants(t, a)
			c := causeOf(a, id)
			if (c != nil) != tc.fire {
				t.Errorf("%s/%s: fired %v, want %v (causes %v)", id, tc.name, c != nil, tc.fire, ids(a))
				continue
			}
			if c == nil {
				quiet++
			} else {
				fires++
				if tc.conf != 0 && c.Confidence != tc.conf {
					t.Errorf("%s/%s: confidence %v, want %v", id, tc.name, c.Confidence, tc.conf)
				}
				for _, e := range tc.evidence {
					if !strings.Contains(c.Evidence, e) {
						t.Errorf("%s/%s: evidence %q lacks %q", id, tc.name, c.Evidence, e)
					}
				}
			}
			for _, other := range tc.absent {
				if causeOf(a, other) != nil {
					t.Errorf("%s/%s: %s fired too (causes %v)", id, tc.name, other, ids(a))
				}
			}
			for _, other := range tc.present {
				if causeOf(a, other) == nil {
					t.Errorf("%s/%s: %s did not fire (causes %v)", id, tc.name, other, ids(a))
				}
			}
		}
		if fires == 0 || quiet == 0 {
			t.Errorf("%s: %d cases fire and %d do not; want both", id, fires, quiet)
		}
	}
	for id := range ruleCases {
		if !slices.Contains(CauseIDs(), id) {
			t.Errorf("cases for unknown rule %s", id)
		}
	}
}

// Every rule can be switched off: its first firing case then has no such
// cause, and the other rules are unaffected except those that deferred
// to it.
func TestEveryRuleCanBeDisabled(t *testing.T) {
	t.Parallel()
	for _, id := range CauseIDs() {
		for _, tc := range ruleCases[id] {
			if !tc.fire {
				continue
			}
			cfg := Default()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			for _, rt := range cfg.ruleTexts() {
				if rt.id == id {
					rt.t.Enabled = false
				}
			}
			a := Analyze(Input{Job: tc.job(), At: testNow, GPUTimeline: tc.timeline}, cfg)
			if causeOf(a, id) != nil {
				t.Errorf("%s disabled but fired", id)
			}
			break
		}
	}
	// All off: nothing fires, nothing is recommended, the class stands.
	cfg := Default()
	for _, rt := range cfg.ruleTexts() {
		rt.t.Enabled = false
	}
	j := loadFixture(t, "gpu_four_held_one_used.json")
	a := analyze(j, cfg)
	if len(a.Causes) != 0 || len(a.Recommendation.Changes) != 0 || a.Class != jobmodel.ClassInefficient {
		t.Errorf("all rules off: %+v", a)
	}
}

// A rule that defers to a more specific one fires once that one is off.
func TestDeferredRulesFireWhenTheSpecificOneIsOff(t *testing.T) {
	t.Parallel()
	j := baseGPU(1)
	setGPU(&j, 0, 0.08, 0.05)
	cfg := Default()
	if a := analyze(j, cfg); causeOf(a, CauseOverScaled) != nil || causeOf(a, CauseSmallJobLargeGPU) == nil {
		t.Fatalf("causes %v", ids(analyze(j, cfg)))
	}
	cfg.Rules.SmallJobLargeGPU.Enabled = false
	if a := analyze(j, cfg); causeOf(a, CauseOverScaled) == nil {
		t.Errorf("small_job_large_gpu off: causes %v, want over_scaled", ids(a))
	}
}

func TestCausesSortedByConfidenceThenID(t *testing.T) {
	t.Parallel()
	j := baseCPU()
	serial(&j, 4)
	j.Memory.MaxNodePeakBytes = p[int64](200 << 20)
	j.ElapsedSeconds, j.TimeLimitSeconds = p(4700.0), p[int64](86400)
	a := analyze(j, Default())
	checkInvariants(t, a)
	want := []string{CauseSerialJobManyCores, CauseMemoryOverrequest, CauseWalltimeOverrequest}
	if !slices.Equal(ids(a), want) {
		t.Errorf("causes %v, want %v", ids(a), want)
	}
	// Equal confidence: by id.
	j = baseGPU(4)
	for i := 1; i < 4; i++ {
		setGPU(&j, i, 0, 0.01)
	}
	j.Memory.MaxNodePeakBytes = p[int64](1 << 20)
	a = analyze(j, Default())
	checkInvariants(t, a)
	want = []string{CauseMemoryOverrequest, CauseParallelismMismatch}
	if !slices.Equal(ids(a), want) || a.Causes[0].Confidence != a.Causes[1].Confidence {
		t.Errorf("causes %v (%+v), want %v with equal confidence", ids(a), a.Causes, want)
	}
}
