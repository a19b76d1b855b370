package demo

import (
	"math"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// What the GPUs did beyond utilisation (jobmodel.GPUActivity): the agent
// reads it through NVML's GPM on Hopper and later, so the H100 jobs have
// it and the A100 jobs name it missing, as the real agent does. The
// figures are shaped by what the agent measured on an H200
// (docs/performance.md, "What the GPUs did"): a bf16 matrix job's SM
// activity ≈ 0.95 × its utilisation, occupancy ~14 %, tensor ~93 %, DRAM
// ~17 %, PCIe in ~12 MiB/s; tiny kernels from a CUDA graph 99 %
// utilisation at 0.3 % SM activity; host-to-device copies 6–8 GiB/s at
// 13–16 % utilisation. They are drawn from the job's id (unit), not the
// generator's random source, so every other figure stays as it was.

// activityMissing are the missing_metrics names of what a GPU without GPM
// (an A100) cannot give, in the agent's order (agent/gpu: Field.Names):
// PCIe throughput too, which NVML measures on such a GPU only where the
// site turned it on (gpu.pcie), and the demo site did not.
var activityMissing = []string{
	"gpu_pcie", "gpu_sm_activity", "gpu_sm_occupancy", "gpu_tensor_activity", "gpu_tensor_precision",
	"gpu_pipe_activity", "gpu_dram_activity", "gpu_link",
}

// gpuWork is what an H100 job's kernels do.
type gpuWork int

const (
	// workTraining: healthy mixed-precision training: SMs 80–95 % of the
	// utilisation, tensor cores a good share of them, DRAM 15–40 %,
	// gradients over NVLink on multi-GPU jobs, little PCIe.
	workTraining gpuWork = iota
	// workLaunchBound: busy by utilisation, SM activity 5–20 %: tiny
	// kernels, or kernels launched one by one from the host
	// (gpu_launch_bound).
	workLaunchBound
	// workInputBound: low utilisation while 5–8 GiB/s come in over PCIe:
	// waiting for host-to-device copies (gpu_input_pipeline_bound).
	workInputBound
	// workFP32: busy SMs on the FP32 pipes with the tensor cores unused
	// (gpu_tensor_unused).
	workFP32
	// workMemoryBound: memory bandwidth 65–90 % with little arithmetic
	// (gpu_memory_bandwidth_bound).
	workMemoryBound
)

var gpuWorkNames = [...]string{"training", "launch-bound", "input-bound", "fp32-no-tensor", "memory-bound"}

func (w gpuWork) String() string { return gpuWorkNames[w] }

// gpuWorkOf picks an H100 job's kind of work from its id, given its level
// (its GPUs' busy level before Shape, 0–1): a fifth of the busy jobs
// (level ≥ 0.7) launch-bound, a quarter of the jobs between 8 % and 45 %
// input-bound, of the jobs from 45 % 7 % FP32 without tensor cores and,
// from 80 %, 3 % memory-bound; the others train. Over the generated H100
// jobs that is some 9–10 % launch-bound, 6 % input-bound, 5–6 % FP32,
// 1–1.5 % memory-bound and 78 % training (three month-long seeds).
func gpuWorkOf(id string, level float64) gpuWork {
	x := unit(id + "gpuwork")
	switch {
	case level >= 0.7 && x < 0.2:
		return workLaunchBound
	case level >= 0.08 && level < 0.45 && x < 0.25:
		return workInputBound
	case level >= 0.45 && x >= 0.2 && x < 0.27:
		return workFP32
	case level >= 0.8 && x >= 0.27 && x < 0.30:
		return workMemoryBound
	}
	return workTraining
}

// The figures of a GPUActivity in jobmodel.ActivityStats order: the first
// ratioFigures are fractions 0–1, the others bytes per second.
const (
	figSM = iota
	figOcc
	figTensor
	figTensorFP64
	figTensorFP16
	figTensorINT8
	figFP64
	figFP32
	figFP16
	figDRAM
	figPCIeRx
	figPCIeTx
	figLinkRx
	figLinkTx
	ratioFigures = figPCIeRx
)

// actLevels are a GPU's activity figures while it runs at its busy level
// (before Shape), in jobmodel.ActivityStats order.
type actLevels [jobmodel.ActivityFigures]float64

// activityLevels returns the figures of a GPU of the job with id doing
// work w at busy level b (its utilisation before Shape); multi says the
// job has several GPUs (NVLink traffic between them). The job's GPUs
// share the proportions; their levels set the rest.
func activityLevels(id string, w gpuWork, b float64, multi bool) actLevels {
	v := func(k string) float64 { return unit(id + "act" + k) }
	logU := func(k string, lo, hi float64) float64 { return lo * math.Exp(v(k)*math.Log(hi/lo)) }
	const mib, gib = 1 << 20, 1 << 30
	var l actLevels
	var link float64 // NVLink receive of a multi-GPU job
	switch w {
	case workTraining:
		sm := b * (0.8 + 0.15*v("sm"))
		tensor := sm * (0.35 + 0.6*v("tensor"))
		l = actLevels{figSM: sm, figOcc: sm * (0.15 + 0.45*v("occ")), figTensor: tensor,
			figTensorFP16: tensor * 0.97, figTensorINT8: tensor * 0.03,
			figFP64: sm * 0.01, figFP32: sm * (0.1 + 0.2*v("fp32")), figFP16: sm * (0.03 + 0.1*v("fp16")),
			figDRAM: b * (0.17 + 0.27*v("dram")), figPCIeRx: b * logU("pcie", 10*mib, 1e9)}
		link = b * logU("link", 5e9, 40e9)
	case workLaunchBound:
		// 5–20 %, whatever the utilisation; a GPU busier than the
		// job's others a little more.
		sm := (0.055 + 0.125*v("sm")) * clamp(b/0.85, 0.9, 1.1)
		tensor := sm * 0.05 * v("tensor")
		l = actLevels{figSM: sm, figOcc: sm * (0.2 + 0.4*v("occ")), figTensor: tensor, figTensorFP16: tensor,
			figFP32: sm * (0.2 + 0.3*v("fp32")), figFP16: sm * 0.05,
			figDRAM: 0.01 + 0.05*v("dram"), figPCIeRx: logU("pcie", 1*mib, 200*mib)}
		link = logU("link", 50e6, 1e9)
	case workInputBound:
		sm := b * (0.05 + 0.5*v("sm"))
		tensor := sm * (0.2 + 0.6*v("tensor"))
		l = actLevels{figSM: sm, figOcc: sm * (0.3 + 0.3*v("occ")), figTensor: tensor, figTensorFP16: tensor,
			figFP32: sm * (0.1 + 0.2*v("fp32")), figFP16: sm * 0.05,
			figDRAM: b * (0.05 + 0.15*v("dram")), figPCIeRx: (5 + 3*v("pcie")) * gib}
		link = b * logU("link", 0.1e9, 2e9)
	case workFP32:
		sm := b * (0.75 + 0.17*v("sm"))
		l = actLevels{figSM: sm, figOcc: sm * (0.3 + 0.3*v("occ")), figTensor: sm * 0.03 * v("tensor"),
			figFP64: sm * 0.01, figFP32: sm * (0.5 + 0.35*v("fp32")), figFP16: sm * 0.01,
			figDRAM: b * (0.2 + 0.25*v("dram")), figPCIeRx: b * logU("pcie", 10*mib, 1e9)}
		l[figTensorFP16] = l[figTensor]
		link = b * logU("link", 2e9, 20e9)
	case workMemoryBound:
		sm := b * (0.6 + 0.25*v("sm"))
		l = actLevels{figSM: sm, figOcc: sm * (0.4 + 0.4*v("occ")), figTensor: sm * 0.2 * v("tensor"),
			figFP64: sm * 0.01, figFP32: sm * (0.1 + 0.2*v("fp32")), figFP16: sm * 0.02,
			figDRAM: b * (0.8 + 0.15*v("dram")), figPCIeRx: b * logU("pcie", 10*mib, 1e9)}
		l[figTensorFP16] = l[figTensor]
		link = b * logU("link", 2e9, 20e9)
	}
	l[figPCIeTx] = l[figPCIeRx] * (0.1 + 0.3*v("pcietx"))
	if w == workInputBound { // the data comes in; little goes back
		l[figPCIeTx] = logU("pcietx", 20*mib, 500*mib)
	}
	if multi {
		l[figLinkRx], l[figLinkTx] = link, link*(0.95+0.1*v("linktx"))
	}
	return l
}

// gpuActivity is a GPU's entry of figures at levels over a run whose
// shape averages ms: each average the level × ms, its 95th percentile
// 1.1 × and peak 1.3 × the level (fractions at most 1), as
// utilisation's. An idle GPU's (levels zero) are zeros: read, just idle.
func gpuActivity(l actLevels, ms float64) *jobmodel.GPUActivity {
	// One allocation for the entry, its figures and their values.
	blk := new(struct {
		a  jobmodel.GPUActivity
		st [jobmodel.ActivityFigures]jobmodel.Stat
		v  [3 * jobmodel.ActivityFigures]float64
	})
	a := &blk.a
	for i, st := range jobmodel.ActivityStats(a) {
		avg, p95, peak := l[i]*ms, l[i]*1.1, l[i]*1.3
		if i < ratioFigures {
			avg, p95, peak = round3(math.Min(1, avg)), round3(math.Min(1, p95)), round3(math.Min(1, peak))
		} else {
			avg, p95, peak = math.Round(avg), math.Round(p95), math.Round(peak)
		}
		v := blk.v[3*i : 3*i+3]
		v[0], v[1], v[2] = avg, p95, peak
		blk.st[i] = jobmodel.Stat{Avg: &v[0], P95: &v[1], Peak: &v[2]}
		*st = &blk.st[i]
	}
	return a
}

// activitySeries are the per-GPU activity series the agent writes
// (agent/monitor/gpuseries.go) with the figure each follows.
var activitySeries = []struct {
	name string
	fig  int
}{
	{"jobsight_job_gpu_sm_activity_ratio", figSM},
	{"jobsight_job_gpu_sm_occupancy_ratio", figOcc},
	{"jobsight_job_gpu_tensor_activity_ratio", figTensor},
	{"jobsight_job_gpu_dram_activity_ratio", figDRAM},
	{"jobsight_job_gpu_pcie_receive_bytes_per_second", figPCIeRx},
	{"jobsight_job_gpu_pcie_transmit_bytes_per_second", figPCIeTx},
	{"jobsight_job_gpu_link_receive_bytes_per_second", figLinkRx},
	{"jobsight_job_gpu_link_transmit_bytes_per_second", figLinkTx},
}
