package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// gpuAct is a GPU's activity in tests: each figure's average, a ratio
// (PCIe receive in GB/s); negative means absent, as on a device that cannot
// give the figure.
type gpuAct struct {
	sm, occ, tensor, fp64, fp32, fp16, dram, pcieRx float64
}

// busyAct is a well-used GPU's activity (bf16 training): no rule fires on
// it.
func busyAct() gpuAct {
	return gpuAct{sm: 0.8, occ: 0.5, tensor: 0.45, fp64: 0, fp32: 0.15, fp16: 0.05, dram: 0.35, pcieRx: 0.5}
}

// ratioStat is a ratio figure with its 95th percentile and peak above the
// average; nil for a negative (absent) one.
func ratioStat(v float64) *jobmodel.Stat {
	if v < 0 {
		return nil
	}
	return &jobmodel.Stat{Avg: p(v), P95: p(math.Min(1, v*1.5)), Peak: p(math.Min(1, v*2))}
}

// rateStat is a GB/s figure in bytes per second.
func rateStat(gbPerSecond float64) *jobmodel.Stat {
	if gbPerSecond < 0 {
		return nil
	}
	return &jobmodel.Stat{Avg: p(gbPerSecond * 1e9), P95: p(gbPerSecond * 1.5e9), Peak: p(gbPerSecond * 3e9)}
}

// setAct gives GPU i the activity a, and names what is absent in its
// missing_metrics as the agent does (the precision split and the links are
// never given here).
func setAct(j *jobmodel.Job, i int, a gpuAct) {
	d := &j.GPUs[i]
	d.Activity = &jobmodel.GPUActivity{SM: ratioStat(a.sm), SMOccupancy: ratioStat(a.occ), Tensor: ratioStat(a.tensor),
		FP64: ratioStat(a.fp64), FP32: ratioStat(a.fp32), FP16: ratioStat(a.fp16), DRAM: ratioStat(a.dram),
		PCIeRxBytesPerSecond: rateStat(a.pcieRx), PCIeTxBytesPerSecond: rateStat(a.pcieRx / 10)}
	d.MissingMetrics = nil
	for _, m := range []struct {
		name   string
		absent bool
	}{{"gpu_sm_activity", a.sm < 0}, {"gpu_sm_occupancy", a.occ < 0}, {"gpu_tensor_activity", a.tensor < 0},
		{"gpu_tensor_precision", true}, {"gpu_pipe_activity", a.fp64 < 0 || a.fp32 < 0 || a.fp16 < 0},
		{"gpu_dram_activity", a.dram < 0}, {"gpu_link", true}, {"gpu_pcie", a.pcieRx < 0}} {
		if m.absent {
			d.MissingMetrics = append(d.MissingMetrics, m.name)
		}
	}
}

// actGPU builds a job on n busy GPUs, each with activity a, then edits it.
func actWith(n int, a gpuAct, edit func(j *jobmodel.Job)) func() jobmodel.Job {
	return gpuWith(n, func(j *jobmodel.Job) {
		for i := range j.GPUs {
			setAct(j, i, a)
		}
		edit(j)
	})
}

// with returns busyAct changed by edit.
func with(edit func(a *gpuAct)) gpuAct {
	a := busyAct()
	edit(&a)
	return a
}

var activityRuleCases = map[string][]ruleCase{
	CauseGPULaunchBound: {
		{name: "utilisation 95%, SM activity 12%", job: actWith(1, with(func(a *gpuAct) { a.sm, a.occ, a.tensor = 0.12, 0.05, 0.01 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.95, 0.1) }),
			fire: true, conf: 0.78, evidence: []string{"The GPU in use (gpu001 GPU 0) averaged 95% utilisation but 12% SM activity",
				"95th percentile of SM activity 18%", "SM occupancy 5.0%"},
			absent: []string{CauseGPUTensorUnused, CauseSmallJobLargeGPU, CauseOverScaled, CauseGPUMemoryBandwidthBound}},
		{name: "SM activity measured at zero", job: actWith(1, with(func(a *gpuAct) { a.sm, a.occ = 0, 0 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.95, 0.1) }), fire: true, conf: 0.9},
		{name: "SM activity not measured (absent, not zero)", job: actWith(1, with(func(a *gpuAct) { a.sm, a.occ = -1, -1 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.95, 0.1) })},
		{name: "no activity at all (an older GPU)", job: gpuWith(1, func(j *jobmodel.Job) { setGPU(j, 0, 0.95, 0.1) })},
		{name: "SM activity 35%", job: actWith(1, with(func(a *gpuAct) { a.sm = 0.35 }), func(j *jobmodel.Job) { setGPU(j, 0, 0.95, 0.1) })},
		{name: "SM activity 35%, bound raised", job: actWith(1, with(func(a *gpuAct) { a.sm = 0.35 }), func(j *jobmodel.Job) { setGPU(j, 0, 0.95, 0.1) }),
			cfg: func(c *Config) { c.Rules.GPULaunchBound.MaxSMActivity = 0.4 }, fire: true, conf: 0.64},
		{name: "utilisation 60%", job: actWith(1, with(func(a *gpuAct) { a.sm = 0.1 }), func(j *jobmodel.Job) { setGPU(j, 0, 0.6, 0.1) })},
		{name: "one of four GPUs", job: actWith(4, busyAct(), func(j *jobmodel.Job) {
			setGPU(j, 2, 0.95, 0.5)
			setAct(j, 2, with(func(a *gpuAct) { a.sm = 0.1 }))
		}), fire: true, evidence: []string{"Of the 4 GPUs in use, gpu001 GPU 2 averaged 95% utilisation but 10% SM activity"}},
		{name: "three of four, the fourth not measured", job: actWith(4, busyAct(), func(j *jobmodel.Job) {
			for i, sm := range []float64{0.1, 0.12, 0.14, -1} {
				setGPU(j, i, 0.9, 0.5)
				setAct(j, i, with(func(a *gpuAct) { a.sm, a.occ = sm, -1 }))
			}
		}), fire: true, conf: 0.78, evidence: []string{"3 of the 4 GPUs in use averaged 90% utilisation but 10–14% SM activity",
			"gpu001 GPU 0: utilisation 90%, SM activity 10%; gpu001 GPU 1:", "SM activity not measured on 1 other GPU in use"}},
		{name: "all of eight", job: actWith(8, with(func(a *gpuAct) { a.sm = 0.1 }), func(j *jobmodel.Job) {
			for i := range j.GPUs {
				setGPU(j, i, 0.9, 0.5)
			}
		}), fire: true, evidence: []string{"All 8 GPUs in use averaged 90% utilisation but 10% SM activity", "; and 4 more)"}},
		{name: "summary figures only", job: gpuWith(2, func(j *jobmodel.Job) {
			j.GPUs = nil
			j.GPU.UtilizationAvg = p(0.9)
			j.GPU.Activity = &jobmodel.GPUActivity{SM: ratioStat(0.1)}
		}), fire: true, evidence: []string{"The job's GPUs (summary figures) averaged 90% utilisation but 10% SM activity"}},
		{name: "summary figures only, a GPU held idle", job: gpuWith(2, func(j *jobmodel.Job) {
			j.GPUs = nil
			j.GPU.UtilizationAvg, j.GPU.HeldIdle = p(0.9), p[int64](1)
			j.GPU.Activity = &jobmodel.GPUActivity{SM: ratioStat(0.1)}
		}), present: []string{CauseGPUsHeldIdle}},
		{name: "CPU job", job: cpuWith(func(j *jobmodel.Job) {})},
	},
	CauseGPUInputPipelineBound: {
		{name: "9 GB/s in, GPU 30% busy", job: actWith(1, with(func(a *gpuAct) { a.sm, a.pcieRx = 0.15, 9 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.3, 0.2) }),
			fire: true, conf: 0.79, evidence: []string{"The GPU in use (gpu001 GPU 0) received 9.0 GB/s from the host over PCIe on average (the rule's bound: 4.0 GB/s)",
				"30% utilisation and 15% SM activity", "95th percentile of PCIe receive 13.5 GB/s", "PCIe send 0.9 GB/s", "the job's CPUs were 50% busy"},
			// Low utilisation and memory: over_scaled defers to the copies.
			absent: []string{CauseOverScaled, CauseSmallJobLargeGPU, CauseCPUBottleneck}},
		{name: "CPUs saturated: cpu_bottleneck instead", job: actWith(1, with(func(a *gpuAct) { a.sm, a.pcieRx = 0.15, 9 }),
			func(j *jobmodel.Job) {
				setGPU(j, 0, 0.3, 0.2)
				setCPUEff(j, 0.95)
			}), present: []string{CauseCPUBottleneck}},
		{name: "SM activity not measured: utilisation alone", job: actWith(1, with(func(a *gpuAct) { a.sm, a.pcieRx = -1, 9 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.3, 0.2) }), fire: true, conf: 0.69},
		{name: "PCIe not measured", job: actWith(1, with(func(a *gpuAct) { a.sm, a.pcieRx = 0.15, -1 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.3, 0.2) }), present: []string{CauseOverScaled}},
		{name: "PCIe measured, nothing received", job: actWith(1, with(func(a *gpuAct) { a.sm, a.pcieRx = 0.15, 0 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.3, 0.2) }), present: []string{CauseOverScaled}},
		{name: "3 GB/s", job: actWith(1, with(func(a *gpuAct) { a.sm, a.pcieRx = 0.15, 3 }), func(j *jobmodel.Job) { setGPU(j, 0, 0.3, 0.2) })},
		{name: "3 GB/s over a configured 5 GB/s link", job: actWith(1, with(func(a *gpuAct) { a.sm, a.pcieRx = 0.15, 3 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.3, 0.2) }), cfg: func(c *Config) { c.Rules.GPUInputPipelineBound.PCIeLinkGBPerSecond = 5 },
			fire: true, evidence: []string{"(the rule's bound: 2.0 GB/s; 60% of the configured 5.0 GB/s link)"}},
		{name: "GPU busy", job: actWith(1, with(func(a *gpuAct) { a.sm, a.pcieRx = 0.15, 9 }), func(j *jobmodel.Job) { setGPU(j, 0, 0.8, 0.2) })},
		{name: "SMs busy", job: actWith(1, with(func(a *gpuAct) { a.sm, a.pcieRx = 0.6, 9 }), func(j *jobmodel.Job) { setGPU(j, 0, 0.65, 0.2) })},
		{name: "memory held, little computing, copies streaming: not memory_resident_low_util", job: actWith(1, with(func(a *gpuAct) { a.sm, a.pcieRx = 0.05, 12 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.1, 0.7) }), fire: true, absent: []string{CauseMemoryResidentLowUtil}},
		{name: "two GPUs", job: actWith(2, with(func(a *gpuAct) { a.sm, a.pcieRx = 0.2, 8 }), func(j *jobmodel.Job) {
			setGPU(j, 0, 0.35, 0.3)
			setGPU(j, 1, 0.45, 0.3)
		}), fire: true, evidence: []string{"Both GPUs in use received 8.0 GB/s", "35–45% utilisation",
			"(gpu001 GPU 0: PCIe in 8.0 GB/s, utilisation 35%, SM activity 20%; gpu001 GPU 1:"}},
	},
	CauseGPUMemoryBandwidthBound: {
		{name: "memory bandwidth 80%, pipes idle", job: actWith(1, with(func(a *gpuAct) { a.dram, a.tensor, a.fp32, a.fp16 = 0.8, 0.02, 0.12, 0.03 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.95, 0.5) }),
			fire: true, conf: 0.75, evidence: []string{"The GPU in use (gpu001 GPU 0) used 80% of its memory bandwidth on average while its tensor cores averaged 2.0% and its FP32 pipes 12%",
				"95th percentile of memory bandwidth 100%", "FP64 pipes 0%, FP16 pipes 3.0%"},
			absent: []string{CauseGPUTensorUnused, CauseGPULaunchBound}},
		{name: "tensor cores busy", job: actWith(1, with(func(a *gpuAct) { a.dram, a.tensor = 0.8, 0.5 }), func(j *jobmodel.Job) { setGPU(j, 0, 0.95, 0.5) })},
		{name: "FP32 pipes busy: gpu_tensor_unused instead", job: actWith(1, with(func(a *gpuAct) { a.dram, a.tensor, a.fp32 = 0.8, 0.02, 0.5 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.95, 0.5) }), present: []string{CauseGPUTensorUnused}},
		{name: "FP64 pipes busy (a double-precision code)", job: actWith(1, with(func(a *gpuAct) { a.dram, a.tensor, a.fp32, a.fp64 = 0.8, 0.02, 0.1, 0.6 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.95, 0.5) })},
		{name: "memory bandwidth not measured", job: actWith(1, with(func(a *gpuAct) { a.dram, a.tensor, a.fp32 = -1, 0.02, 0.12 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.95, 0.5) })},
		{name: "tensor activity not measured", job: actWith(1, with(func(a *gpuAct) { a.dram, a.tensor, a.fp32 = 0.8, -1, 0.12 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.95, 0.5) })},
		{name: "pipes not measured", job: actWith(1, with(func(a *gpuAct) { a.dram, a.tensor, a.fp32, a.fp64, a.fp16 = 0.8, 0.02, -1, -1, -1 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.95, 0.5) })},
		{name: "memory bandwidth 50%", job: actWith(1, with(func(a *gpuAct) { a.dram, a.tensor, a.fp32 = 0.5, 0.02, 0.12 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.95, 0.5) })},
		{name: "memory bandwidth 50%, bound lowered", job: actWith(1, with(func(a *gpuAct) { a.dram, a.tensor, a.fp32 = 0.5, 0.02, 0.12 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.95, 0.5) }), cfg: func(c *Config) { c.Rules.GPUMemoryBandwidthBound.MinDRAMActivity = 0.5 },
			fire: true, conf: 0.6},
	},
	CauseGPUTensorUnused: {
		{name: "FP32 work, tensor cores idle", job: actWith(1, with(func(a *gpuAct) { a.sm, a.fp32, a.tensor = 0.75, 0.55, 0 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.93, 0.6) }),
			fire: true, conf: 0.71, evidence: []string{"The GPU in use (gpu001 GPU 0) averaged 75% SM activity with its FP32 pipes 55% busy, while its tensor cores (measured) averaged 0%",
				"95th percentile of tensor activity 0%", "FP64 pipes 0%"},
			absent: []string{CauseGPUMemoryBandwidthBound, CauseGPULaunchBound}},
		{name: "tensor activity not measured (absent, not zero)", job: actWith(1, with(func(a *gpuAct) { a.sm, a.fp32, a.tensor = 0.75, 0.55, -1 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.93, 0.6) })},
		{name: "tensor cores in use", job: actWith(1, with(func(a *gpuAct) { a.sm, a.fp32, a.tensor = 0.75, 0.55, 0.3 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.93, 0.6) })},
		{name: "a double-precision code", job: actWith(1, with(func(a *gpuAct) { a.sm, a.fp32, a.fp64, a.tensor = 0.75, 0.3, 0.6, 0 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.93, 0.6) })},
		{name: "little FP32 work", job: actWith(1, with(func(a *gpuAct) { a.sm, a.fp32, a.tensor = 0.75, 0.1, 0 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.93, 0.6) })},
		{name: "FP32 pipes not measured", job: actWith(1, with(func(a *gpuAct) { a.sm, a.fp32, a.tensor = 0.75, -1, 0 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.93, 0.6) })},
		{name: "SMs barely busy: launch-bound instead", job: actWith(1, with(func(a *gpuAct) { a.sm, a.fp32, a.tensor = 0.3, 0.25, 0 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.93, 0.6) }), present: []string{CauseGPULaunchBound}},
		{name: "memory-bound: gpu_memory_bandwidth_bound instead", job: actWith(1, with(func(a *gpuAct) { a.sm, a.fp32, a.tensor, a.dram = 0.75, 0.25, 0, 0.8 }),
			func(j *jobmodel.Job) { setGPU(j, 0, 0.93, 0.6) }), present: []string{CauseGPUMemoryBandwidthBound}},
		{name: "two GPUs", job: actWith(2, with(func(a *gpuAct) { a.sm, a.fp32, a.tensor = 0.75, 0.55, 0.01 }), func(j *jobmodel.Job) {}),
			fire: true, evidence: []string{"Both GPUs in use averaged 75% SM activity with their FP32 pipes 55% busy, while their tensor cores (measured) averaged 1.0%",
				"(gpu001 GPU 0: SM activity 75%, FP32 55%, tensor 1.0%; gpu001 GPU 1:"}},
	},
}

// SM activity as the stronger evidence of which GPUs did the work.
var parallelismSMCases = []ruleCase{
	{name: "by SM activity one of four computed, by utilisation all four", job: actWith(4, busyAct(), func(j *jobmodel.Job) {
		for i := 1; i < 4; i++ {
			setAct(j, i, with(func(a *gpuAct) { a.sm, a.tensor = 0.02, 0 }))
		}
	}), fire: true, conf: 0.85, evidence: []string{"1 of 4 GPUs averaged more than 5.0% SM activity",
		"(per GPU: SM activity 80%, 2.0%, 2.0%, 2.0%; utilisation 85%, 85%, 85%, 85%)",
		"by utilisation 4 were above 10%, but the kernels on the others kept few of their SMs busy"},
		present: []string{CauseGPULaunchBound}},
	{name: "SM activity and utilisation agree", job: actWith(4, busyAct(), func(j *jobmodel.Job) {
		for i := 1; i < 4; i++ {
			setGPU(j, i, 0, 0.01)
			setAct(j, i, gpuAct{0, 0, 0, 0, 0, 0, 0, 0})
		}
	}), fire: true, conf: 0.95, evidence: []string{"per GPU: SM activity 80%, 0%, 0%, 0%; utilisation 85%, 0%, 0%, 0%"}},
	{name: "a GPU without SM activity: utilisation decides", job: actWith(4, busyAct(), func(j *jobmodel.Job) {
		for i := 1; i < 4; i++ {
			setAct(j, i, with(func(a *gpuAct) { a.sm = 0.02 }))
		}
		setAct(j, 3, with(func(a *gpuAct) { a.sm = -1 }))
	})},
	{name: "no GPU above the SM bound: utilisation decides", job: actWith(4, with(func(a *gpuAct) { a.sm = 0.03 }), func(j *jobmodel.Job) {}),
		present: []string{CauseGPULaunchBound}},
	// A launch-bound data-parallel job: every GPU did a little, rank 0 a
	// little more; none is idle next to the others.
	{name: "four GPUs alike at a few % SM activity: all did the work", job: actWith(4, with(func(a *gpuAct) { a.sm = 0.06 }), func(j *jobmodel.Job) {
		for i := 1; i < 4; i++ {
			setAct(j, i, with(func(a *gpuAct) { a.sm = 0.04 }))
		}
	}), present: []string{CauseGPULaunchBound}},
	{name: "one GPU at 8 %, three at 1 %: one did the work", job: actWith(4, with(func(a *gpuAct) { a.sm = 0.08 }), func(j *jobmodel.Job) {
		for i := 1; i < 4; i++ {
			setAct(j, i, with(func(a *gpuAct) { a.sm = 0.01 }))
		}
	}), fire: true, evidence: []string{"1 of 4 GPUs averaged more than 4.0% SM activity"}},
	{name: "held-idle GPUs count as idle whatever their figures", job: actWith(4, busyAct(), func(j *jobmodel.Job) {
		for i := 1; i < 4; i++ {
			holdIdle(j, i)
			j.GPUs[i].Activity = nil
		}
	}), fire: true, conf: 0.95, evidence: []string{"SM activity 80%, idle, idle, idle"}, present: []string{CauseGPUsHeldIdle}},
}

func init() {
	for id, cs := range activityRuleCases {
		ruleCases[id] = cs
	}
	ruleCases[CauseParallelismMismatch] = append(ruleCases[CauseParallelismMismatch], parallelismSMCases...)
}

// A job whose GPUs all did the same little work keeps its GPU count: the
// cure is bigger kernels (launch-bound), not fewer GPUs.
func TestAlikeLaunchBoundGPUsKeepTheirCount(t *testing.T) {
	t.Parallel()
	j := actWith(4, with(func(a *gpuAct) { a.sm = 0.06 }), func(j *jobmodel.Job) {
		for i := 1; i < 4; i++ {
			setAct(j, i, with(func(a *gpuAct) { a.sm = 0.04 }))
		}
	})()
	a := analyze(j, Default())
	for _, ch := range a.Recommendation.Changes {
		if strings.Contains(ch.From, "--gpus") {
			t.Errorf("GPU count changed: %+v", ch)
		}
	}
}

// Healthy GPUs with every activity figure fire nothing and stay efficient.
func TestBusyActivityIsClean(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 4} {
		a := analyze(actWith(n, busyAct(), func(j *jobmodel.Job) {})(), Default())
		checkInvariants(t, a)
		if a.Class != jobmodel.ClassEfficient || len(a.Causes) != 0 || a.Figures.GPUSMActivity == nil || *a.Figures.GPUSMActivity != 0.8 {
			t.Errorf("%d GPUs: class %s causes %v SM %v", n, a.Class, ids(a), a.Figures.GPUSMActivity)
		}
	}
}

// The GPU score is the lower of the utilisation and the mean SM activity
// where every GPU in use measured it; documents without it keep the
// utilisation score.
func TestGPUScoreSMActivity(t *testing.T) {
	t.Parallel()
	one := func(util, sm float64) jobmodel.Job {
		j := baseGPU(1)
		setGPU(&j, 0, util, 0.5)
		setAct(&j, 0, with(func(a *gpuAct) { a.sm = sm }))
		return j
	}
	for _, tc := range []struct {
		name        string
		job         jobmodel.Job
		off         bool
		score       float64
		class       string
		sm          float64 // -1: no figure
		utilization float64
	}{
		{"busy but barely filled", one(0.95, 0.10), false, 0.10, jobmodel.ClassWasted, 0.10, 0.95},
		{"busy, half filled", one(0.95, 0.50), false, 0.50, jobmodel.ClassAcceptable, 0.50, 0.95},
		{"SM activity measured at zero", one(0.95, 0), false, 0, jobmodel.ClassWasted, 0, 0.95},
		{"SM activity not measured: utilisation", one(0.95, -1), false, 0.95, jobmodel.ClassEfficient, -1, 0.95},
		{"SM activity above utilisation: utilisation", one(0.5, 0.6), false, 0.5, jobmodel.ClassAcceptable, 0.6, 0.5},
		{"switched off: utilisation, figure kept", one(0.95, 0.10), true, 0.95, jobmodel.ClassEfficient, 0.10, 0.95},
		{"no activity object (an older GPU)", func() jobmodel.Job { j := baseGPU(1); setGPU(&j, 0, 0.95, 0.5); return j }(),
			false, 0.95, jobmodel.ClassEfficient, -1, 0.95},
		{"a GPU in use without SM activity: utilisation", func() jobmodel.Job {
			j := actWith(2, with(func(a *gpuAct) { a.sm = 0.1 }), func(j *jobmodel.Job) {})()
			setAct(&j, 1, with(func(a *gpuAct) { a.sm = -1 }))
			return j
		}(), false, 0.85, jobmodel.ClassEfficient, -1, 0.85},
		{"a held-idle GPU without figures counts by its utilisation", func() jobmodel.Job {
			j := actWith(2, with(func(a *gpuAct) { a.sm = 0.6 }), func(j *jobmodel.Job) {})()
			setGPU(&j, 0, 0.9, 0.5)
			holdIdle(&j, 1)
			j.GPUs[1].Activity = nil
			return j
		}(), false, 0.3, jobmodel.ClassInefficient, 0.3, 0.45},
		{"summary figures only", func() jobmodel.Job {
			j := baseGPU(2)
			j.GPUs = nil
			j.GPU.Activity = &jobmodel.GPUActivity{SM: ratioStat(0.2)}
			return j
		}(), false, 0.2, jobmodel.ClassInefficient, 0.2, 0.85},
		{"summary figures only, a GPU held idle: utilisation", func() jobmodel.Job {
			j := baseGPU(2)
			j.GPUs = nil
			j.GPU.HeldIdle = p[int64](1)
			j.GPU.Activity = &jobmodel.GPUActivity{SM: ratioStat(0.2)}
			return j
		}(), false, 0.85, jobmodel.ClassEfficient, -1, 0.85},
	} {
		cfg := Default()
		cfg.Classes.GPUScoreSMActivity = !tc.off
		a := analyze(tc.job, cfg)
		checkInvariants(t, a)
		if a.Score == nil || math.Abs(*a.Score-tc.score) > 1e-9 || a.Class != tc.class {
			t.Errorf("%s: score %v class %s, want %v %s", tc.name, a.Score, a.Class, tc.score, tc.class)
		}
		if f := a.Figures.GPUSMActivity; (f == nil) != (tc.sm < 0) || (f != nil && math.Abs(*f-tc.sm) > 1e-9) {
			t.Errorf("%s: figures.gpu_sm_activity %v, want %v", tc.name, f, tc.sm)
		}
		if f := a.Figures.GPUUtilization; f == nil || math.Abs(*f-tc.utilization) > 1e-9 {
			t.Errorf("%s: figures.gpu_utilization %v, want %v", tc.name, f, tc.utilization)
		}
	}
}

var activityCauses = []string{CauseGPULaunchBound, CauseGPUInputPipelineBound, CauseGPUMemoryBandwidthBound, CauseGPUTensorUnused}

// A figure the device could not give is never taken as zero: every firing
// case of the activity rules, with any one of its figures removed, fires
// no activity rule that the same case with that figure at zero would not
// explain; and with all activity removed, none fires and the class rests
// on utilisation.
func TestActivityAbsentIsNotZero(t *testing.T) {
	t.Parallel()
	strip := []struct {
		name string
		edit func(a *jobmodel.GPUActivity)
	}{
		{"sm", func(a *jobmodel.GPUActivity) { a.SM = nil }},
		{"tensor", func(a *jobmodel.GPUActivity) { a.Tensor = nil }},
		{"fp32", func(a *jobmodel.GPUActivity) { a.FP32 = nil }},
		{"dram", func(a *jobmodel.GPUActivity) { a.DRAM = nil }},
		{"pcie", func(a *jobmodel.GPUActivity) { a.PCIeRxBytesPerSecond = nil }},
	}
	for id, cases := range activityRuleCases {
		for _, tc := range cases {
			if !tc.fire || tc.cfg != nil {
				continue
			}
			base := tc.job()
			if len(base.GPUs) == 0 {
				continue
			}
			// Every activity figure removed: nothing of the kind fires.
			none := tc.job()
			for i := range none.GPUs {
				none.GPUs[i].Activity = nil
			}
			a := analyze(none, Default())
			for _, c := range activityCauses {
				if causeOf(a, c) != nil {
					t.Errorf("%s/%s without activity: %s fired", id, tc.name, c)
				}
			}
			if a.Figures.GPUSMActivity != nil || a.Score == nil || *a.Score != *a.Figures.GPUUtilization {
				t.Errorf("%s/%s without activity: score %v, SM %v", id, tc.name, a.Score, a.Figures.GPUSMActivity)
			}
			// One figure removed: the rules that need it stop, none starts.
			fired := ids(analyze(base, Default()))
			for _, s := range strip {
				j := tc.job()
				for i := range j.GPUs {
					if j.GPUs[i].Activity != nil {
						s.edit(j.GPUs[i].Activity)
					}
				}
				for _, c := range ids(analyze(j, Default())) {
					if slices.Contains(activityCauses, c) && !slices.Contains(fired, c) &&
						// Releasing a deferral is not a guess: the
						// deferring rule's own figures are all there.
						!(c == CauseGPUTensorUnused && s.name == "dram") {
						t.Errorf("%s/%s without %s: %s fired (before: %v)", id, tc.name, s.name, c, fired)
					}
				}
			}
		}
	}
}

// The older A100 fixture has no GPM figures: nothing fires and the class
// rests on utilisation. Were its absent figures zero-filled, the launch
// rule would fire and the class would drop: the fixture would catch it.
func TestOlderGPUAbsentFiguresAreNotZero(t *testing.T) {
	t.Parallel()
	j := loadFixture(t, "gpu_a100_no_activity.json")
	for _, g := range j.GPUs {
		if !slices.Contains(g.MissingMetrics, "gpu_sm_activity") || g.Activity == nil || g.Activity.SM != nil {
			t.Fatalf("fixture: GPU %d activity %+v missing %v", g.Index, g.Activity, g.MissingMetrics)
		}
	}
	a := analyze(j, Default())
	if len(a.Causes) != 0 || a.Class != jobmodel.ClassEfficient || a.Figures.GPUSMActivity != nil {
		t.Fatalf("as recorded: class %s causes %v SM %v", a.Class, ids(a), a.Figures.GPUSMActivity)
	}
	zero := &jobmodel.Stat{Avg: p(0.0), P95: p(0.0), Peak: p(0.0)}
	for i := range j.GPUs {
		act := j.GPUs[i].Activity
		act.SM, act.SMOccupancy, act.Tensor, act.FP32, act.FP64, act.FP16, act.DRAM = zero, zero, zero, zero, zero, zero, zero
	}
	z := analyze(j, Default())
	if causeOf(z, CauseGPULaunchBound) == nil || z.Class != jobmodel.ClassWasted {
		t.Errorf("zero-filled: class %s causes %v; the fixture would not catch a zero-filling bug", z.Class, ids(z))
	}
}

// The GPU recommendation follows the GPUs that did the work by SM
// activity, and says so.
func TestRecommendationBySMActivity(t *testing.T) {
	t.Parallel()
	a := analyze(parallelismSMCases[0].job(), Default())
	c := changeOf(a, "--gpus")
	if c == nil || c.From != "--gpus=4" || c.To != "--gpus=1" || !strings.Contains(c.Reason, "1 of 4 GPUs did work (over 5.0% average SM activity)") {
		t.Errorf("change %+v", c)
	}
	if a.Savings.GPUHours == nil || math.Abs(*a.Savings.GPUHours-3*2) > 1e-9 {
		t.Errorf("GPU-hours saved %v, want 6", a.Savings.GPUHours)
	}
}

// The rules that defer to the copies fire once that rule is off; the
// tensor rule fires once the bandwidth rule is off.
func TestActivityDeferrals(t *testing.T) {
	t.Parallel()
	copies := actWith(1, with(func(a *gpuAct) { a.sm, a.pcieRx = 0.15, 9 }), func(j *jobmodel.Job) { setGPU(j, 0, 0.3, 0.2) })()
	cfg := Default()
	cfg.Rules.GPUInputPipelineBound.Enabled = false
	if a := analyze(copies, cfg); causeOf(a, CauseOverScaled) == nil {
		t.Errorf("gpu_input_pipeline_bound off: causes %v, want over_scaled", ids(a))
	}
	bw := actWith(1, with(func(a *gpuAct) { a.sm, a.fp32, a.tensor, a.dram = 0.75, 0.25, 0, 0.8 }), func(j *jobmodel.Job) { setGPU(j, 0, 0.93, 0.6) })()
	cfg = Default()
	cfg.Rules.GPUMemoryBandwidthBound.Enabled = false
	if a := analyze(bw, cfg); causeOf(a, CauseGPUTensorUnused) == nil {
		t.Errorf("gpu_memory_bandwidth_bound off: causes %v, want gpu_tensor_unused", ids(a))
	}
}

// Activity figures that are negative, not finite or above 1 are not
// measurements: negative and not finite ones are unknown, ratios above 1
// are clamped.
func TestActivityBadValues(t *testing.T) {
	t.Parallel()
	for _, v := range []float64{-0.5, math.NaN(), math.Inf(1), math.Inf(-1)} {
		j := baseGPU(1)
		setGPU(&j, 0, 0.95, 0.3)
		setAct(&j, 0, busyAct())
		j.GPUs[0].Activity.SM = &jobmodel.Stat{Avg: p(v)}
		a := analyze(j, Default())
		checkInvariants(t, a)
		if causeOf(a, CauseGPULaunchBound) != nil || a.Figures.GPUSMActivity != nil {
			t.Errorf("SM activity %v: causes %v SM %v", v, ids(a), a.Figures.GPUSMActivity)
		}
	}
	j := baseGPU(1)
	setAct(&j, 0, busyAct())
	j.GPUs[0].Activity.SM = &jobmodel.Stat{Avg: p(7.0)}
	if a := analyze(j, Default()); a.Figures.GPUSMActivity == nil || *a.Figures.GPUSMActivity != 1 {
		t.Errorf("SM activity 7: %v", a.Figures.GPUSMActivity)
	}
}
