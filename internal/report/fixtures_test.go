package report

import (
	"math"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// Fixtures: realistic jobs with hand-built analyses, at fixed times.

const gib = int64(1) << 30

var p = jobmodel.Ptr[float64]

func pi(v int64) *int64 { return &v }

func at(s string) *jobmodel.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return jobmodel.At(t)
}

// testCase is one golden input.
type testCase struct {
	name string
	in   Input
}

func testCases() []testCase {
	return []testCase{
		{"cpu-overrequest", cpuOverRequest()},
		{"gpu4-held-idle", gpu4HeldIdle()},
		{"gpu8-efficient-series", gpu8Efficient()},
		{"short", shortJob()},
		{"partial", partialJob()},
		{"amd", amdJob()},
		{"simulated", simulatedJob()},
		{"gpu-activity", gpuActivityJob()},
		{"gpu-older", gpuOlderJob()},
	}
}

func st(avg, p95, peak float64) *jobmodel.Stat {
	return &jobmodel.Stat{Avg: p(avg), P95: p(p95), Peak: p(peak)}
}

// gpuActivityJob: two H100 PCIe cards kept "busy" by small kernels, with
// their activity figures (NVML GPM); no NVLink on these cards, so the link
// figures are missing, and GPU 1's occupancy has an average only.
func gpuActivityJob() Input {
	var devs []jobmodel.GPUDevice
	for i := 0; i < 2; i++ {
		a := &jobmodel.GPUActivity{
			SM: st([]float64{0.12, 0.14}[i], 0.19, 0.41), SMOccupancy: st(0.05, 0.08, 0.2),
			Tensor: st(0.004, 0.01, 0.05), TensorFP64: st(0, 0, 0), TensorFP16: st(0.004, 0.01, 0.05), TensorINT8: st(0, 0, 0),
			FP64: st(0, 0, 0.01), FP32: st(0.03, 0.05, 0.12), FP16: st(0.002, 0.004, 0.02), DRAM: st(0.04, 0.07, 0.2),
			PCIeRxBytesPerSecond: st(0.35e9, 0.8e9, 3.1e9), PCIeTxBytesPerSecond: st(0.12e9, 0.3e9, 1.2e9)}
		if i == 1 {
			a.SMOccupancy = &jobmodel.Stat{Avg: p(0.06)}
		}
		devs = append(devs, jobmodel.GPUDevice{Node: "gpu207", Index: int64(i), Model: "NVIDIA H100 PCIe", Vendor: "nvidia", Held: true,
			ProcessSeconds: p(21560), UtilizationAvg: p(0.95), UtilizationP95: p(1), UtilizationPeak: p(1),
			MemoryPeakBytes: pi(7 * gib), MemoryTotalBytes: pi(80 * gib), JobMemoryPeakBytes: pi(6 * gib),
			PowerAvgWatts: p(188), EnergyJoules: p(4.0608e6), Activity: a, MissingMetrics: []string{"gpu_link"}})
	}
	j := jobmodel.Job{
		DocID: "hpc1:91310", SchemaVersion: 1, Source: jobmodel.SourceSlurm, Cluster: "hpc1",
		JobID: "91310", SlurmJobID: 91310, Name: "md-small-box", User: "gina", Account: "chem", Partition: "gpu-h100-pcie",
		Nodes: []string{"gpu207"}, NodeCount: 1, State: jobmodel.StateCompleted, ExitCode: jobmodel.Ptr(0),
		SubmitTime: at("2026-11-23T07:05:31Z"), StartTime: at("2026-11-23T07:12:00Z"), EndTime: at("2026-11-23T13:12:00Z"),
		TimeLimitSeconds: pi(8 * 3600), ElapsedSeconds: p(21600),
		Requested: jobmodel.Request{CPUs: pi(16), MemoryBytes: pi(64 * gib), GPUs: pi(2), Nodes: pi(1), Tasks: pi(2)},
		Usage: jobmodel.Usage{
			CPU:    &jobmodel.CPUUsage{AvgCores: p(9.8), P95Cores: p(11.7), PeakCores: p(14.6), Efficiency: p(0.61)},
			Memory: &jobmodel.MemoryUsage{PeakBytes: pi(30 * gib), RSSPeakBytes: pi(24 * gib), LimitBytes: pi(64 * gib), Efficiency: p(0.469)},
			GPU: &jobmodel.GPUUsage{Count: 2, Held: pi(2), Source: jobmodel.GPUSourceNVML, Attribution: "slurm", UtilizationAvg: p(0.95),
				EffectiveGPUs: pi(2), EffectiveRatio: p(1), HeldIdle: pi(0), MemoryPeakBytes: pi(7 * gib), EnergyJoules: p(8.1216e6),
				Activity:      &jobmodel.GPUActivity{SM: st(0.13, 0.19, 0.41)},
				TimelineStart: at("2026-11-23T07:12:00Z"), TimelineStepSeconds: p(600),
				UtilizationTimeline: activityTimeline(36, 0.95, 0.02), SMActivityTimeline: activityTimeline(36, 0.13, 0.04)},
			GPUs: devs,
		},
		MissingMetrics: []string{"gpu_link"},
		Final:          true, AgentVersion: "0.5.0",
	}
	a := &jobmodel.Analysis{
		Version: 4, AnalyzedAt: at("2026-11-23T13:12:04Z"), Kind: jobmodel.KindGPU, Vendor: "nvidia", Class: jobmodel.ClassWasted, Score: p(0.13),
		Figures: jobmodel.AnalysisFigures{GPUUtilization: p(0.95), GPUSMActivity: p(0.13), GPUs: pi(2), EffectiveGPUs: pi(2), EffectiveGPURatio: p(1),
			GPUHours: p(12), GPUHoursWasted: p(0.6), CPUEfficiency: p(0.61), WalltimeEfficiency: p(0.75)},
		Causes: []jobmodel.Cause{{ID: "gpu_launch_bound", Title: "GPU busy with kernels too small to fill it (launch-bound)", Confidence: 0.77,
			Evidence: "Both GPUs in use averaged 95% utilisation but 12–14% SM activity: a kernel ran most of the time, yet the kernels kept few of the SMs busy (gpu207 GPU 0: utilisation 95%, SM activity 12%, SM occupancy 5.0%; gpu207 GPU 1: utilisation 95%, SM activity 14%, SM occupancy 6.0%)",
			Lesson:   "A kernel ran on the GPU most of the time, but the kernels kept few of its SMs busy: they were too small for the GPU, or were launched one at a time while the host did other work. Larger batches, CUDA graphs or torch.compile(mode=\"reduce-overhead\"), fused kernels and fewer host synchronisations give each launch more work. Where the work cannot grow, a smaller GPU or a MIG slice would likely run it at a similar speed.",
			DocURL:   "https://pytorch.org/docs/stable/notes/cuda.html#cuda-graphs"}},
	}
	return Input{Job: j, Analysis: a}
}

// activityTimeline is n points around mean, wobbling by ±wobble.
func activityTimeline(n int, mean, wobble float64) []*float64 {
	out := make([]*float64, n)
	for i := range out {
		out[i] = p(mean + wobble*float64(i%3-1))
	}
	return out
}

// gpuOlderJob: two A100s without GPM: no activity figure at all, each
// named in the GPUs' missing_metrics; the report says so and shows no 0.
func gpuOlderJob() Input {
	missing := []string{"gpu_pcie", "gpu_sm_activity", "gpu_sm_occupancy", "gpu_tensor_activity", "gpu_tensor_precision",
		"gpu_pipe_activity", "gpu_dram_activity", "gpu_link"}
	var devs []jobmodel.GPUDevice
	for i := 0; i < 2; i++ {
		g := a100(int64(i))
		g.ProcessSeconds = p(25150)
		g.UtilizationAvg, g.UtilizationP95, g.UtilizationPeak = p([]float64{0.93, 0.91}[i]), p(0.99), p(1)
		g.MemoryPeakBytes, g.JobMemoryPeakBytes = pi(66*gib), pi(65*gib)
		g.MissingMetrics = missing
		devs = append(devs, g)
	}
	j := jobmodel.Job{
		DocID: "hpc1:91700", SchemaVersion: 1, Source: jobmodel.SourceSlurm, Cluster: "hpc1",
		JobID: "91700", SlurmJobID: 91700, Name: "protein-fold", User: "hal", Account: "bio", Partition: "gpu-a100",
		Nodes: []string{"gpu017"}, NodeCount: 1, State: jobmodel.StateCompleted, ExitCode: jobmodel.Ptr(0),
		SubmitTime: at("2026-11-19T15:50:02Z"), StartTime: at("2026-11-19T16:00:00Z"), EndTime: at("2026-11-19T23:00:00Z"),
		TimeLimitSeconds: pi(10 * 3600), ElapsedSeconds: p(25200),
		Requested: jobmodel.Request{CPUs: pi(16), MemoryBytes: pi(128 * gib), GPUs: pi(2), Nodes: pi(1), Tasks: pi(2)},
		Usage: jobmodel.Usage{
			CPU:    &jobmodel.CPUUsage{AvgCores: p(9.9), P95Cores: p(11.9), PeakCores: p(14.9), Efficiency: p(0.62)},
			Memory: &jobmodel.MemoryUsage{PeakBytes: pi(70 * gib), RSSPeakBytes: pi(56 * gib), LimitBytes: pi(128 * gib), Efficiency: p(0.547)},
			GPU: &jobmodel.GPUUsage{Count: 2, Held: pi(2), Source: jobmodel.GPUSourceNVML, Attribution: "slurm", UtilizationAvg: p(0.92),
				EffectiveGPUs: pi(2), EffectiveRatio: p(1), HeldIdle: pi(0), MemoryPeakBytes: pi(66 * gib)},
			GPUs: devs,
		},
		MissingMetrics: missing,
		Final:          true, AgentVersion: "0.5.0",
	}
	a := &jobmodel.Analysis{
		Version: 4, AnalyzedAt: at("2026-11-19T23:00:05Z"), Kind: jobmodel.KindGPU, Vendor: "nvidia", Class: jobmodel.ClassEfficient, Score: p(0.92),
		Figures: jobmodel.AnalysisFigures{GPUUtilization: p(0.92), GPUs: pi(2), EffectiveGPUs: pi(2), EffectiveGPURatio: p(1),
			GPUHours: p(14), GPUHoursWasted: p(1.12), CPUEfficiency: p(0.62), MemoryEfficiency: p(0.547), MemoryBasis: "total", WalltimeEfficiency: p(0.7)},
	}
	return Input{Job: j, Analysis: a}
}

func cpuOverRequest() Input {
	j := jobmodel.Job{
		DocID: "hpc1:4242", SchemaVersion: 1, Source: jobmodel.SourceSlurm, Cluster: "hpc1",
		JobID: "4242", SlurmJobID: 4242, Name: "assemble_genome", User: "alice", UID: jobmodel.Ptr[uint32](1001),
		Account: "bio-lab", Partition: "cpu", QOS: "normal", Nodes: []string{"cn017"}, NodeCount: 1,
		State: jobmodel.StateCompleted, ExitCode: jobmodel.Ptr(0),
		SubmitTime: at("2026-11-21T08:02:10Z"), StartTime: at("2026-11-21T08:05:00Z"), EndTime: at("2026-11-21T11:17:00Z"),
		TimeLimitSeconds: pi(12 * 3600), ElapsedSeconds: p(3*3600 + 12*60),
		Requested: jobmodel.Request{CPUs: pi(32), MemoryBytes: pi(128 * gib), MemoryPerNodeBytes: pi(128 * gib), Nodes: pi(1), Tasks: pi(1)},
		Usage: jobmodel.Usage{
			CPU: &jobmodel.CPUUsage{CoreSeconds: p(36864), AvgCores: p(3.2), P95Cores: p(4.0), PeakCores: p(6.1), ActiveSeconds: p(11400), Efficiency: p(0.1)},
			Memory: &jobmodel.MemoryUsage{AvgBytes: pi(9 * gib), P95Bytes: pi(13 * gib), PeakBytes: pi(14*gib + 200<<20), RSSAvgBytes: pi(7 * gib),
				RSSPeakBytes: pi(9*gib + 800<<20), LimitBytes: pi(128 * gib), MaxNodePeakBytes: pi(14*gib + 200<<20), Efficiency: p(0.0762),
				OOMKills: pi(1)},
			IO:        &jobmodel.IOUsage{ReadBytes: pi(41 * gib), WrittenBytes: pi(3 * gib)},
			Processes: &jobmodel.CountUsage{Avg: p(3.4), Peak: pi(9)},
			// A single node: no worst node; memory never stalled.
			Pressure: &jobmodel.PressureUsage{WatchedSeconds: p(11455),
				CPUSomeSeconds: p(115), CPUSomeRatio: p(0.01), CPUSomePeakRatio: p(0.12),
				MemorySomeSeconds: p(0), MemorySomeRatio: p(0), MemoryFullSeconds: p(0), MemoryFullRatio: p(0),
				IOSomeSeconds: p(3551), IOSomeRatio: p(0.31), IOSomePeakRatio: p(0.96), IOFullSeconds: p(916), IOFullRatio: p(0.08), IOFullPeakRatio: p(0.6)},
		},
		Sampling: jobmodel.Sampling{IntervalSeconds: 5, Count: 2304, First: at("2026-11-21T08:05:01Z"), Last: at("2026-11-21T11:16:56Z")},
		Final:    true, AgentVersion: "0.4.0", UpdatedAt: at("2026-11-21T11:17:02Z"),
	}
	a := &jobmodel.Analysis{
		Version: 1, AnalyzedAt: at("2026-11-21T11:17:03Z"), Kind: jobmodel.KindCPU, Class: jobmodel.ClassInefficient, Score: p(0.18),
		Figures: jobmodel.AnalysisFigures{CPUEfficiency: p(0.1), MemoryEfficiency: p(0.0762), WalltimeEfficiency: p(0.267), CoreHours: p(102.4), CoreHoursWasted: p(92.2)},
		Causes: []jobmodel.Cause{
			{ID: "cpu_overrequest", Title: "The job used far fewer CPUs than it requested", Confidence: 0.9,
				Evidence: "Average 3.2 cores of 32 requested (10%); the busiest moment used 6.1 cores.",
				Lesson:   "Many programs use one thread unless told otherwise. Check that the program's thread count matches --cpus-per-task (for example through SLURM_CPUS_PER_TASK), or request fewer CPUs.",
				DocURL:   "https://hpc.example.edu/docs/cpu-requests"},
			{ID: "memory_overrequest", Title: "Less than a tenth of the requested memory was used", Confidence: 0.85,
				Evidence: "Peak resident memory 9.8 GiB against a 128 GiB limit (8%).",
				Lesson:   "Memory that is requested but not used cannot be given to other jobs on the node. A request of the peak plus a margin leaves room for others.",
				DocURL:   "https://hpc.example.edu/docs/memory"},
		},
		Recommendation: jobmodel.Recommendation{CPUs: pi(8), MemoryBytes: pi(16 * gib), TimeLimitSeconds: pi(5 * 3600),
			Changes: []jobmodel.SbatchChange{
				{Option: "--cpus-per-task", From: "32", To: "8", Reason: "The peak was 6.1 cores; 8 leaves a margin."},
				{Option: "--mem", From: "128G", To: "16G", Reason: "Peak resident memory was 9.8 GiB."},
				{Option: "--time", From: "12:00:00", To: "05:00:00", Reason: "The job ran 3 h 12 min; 5 h leaves a margin and may start sooner."},
			}},
		Savings: jobmodel.Savings{CoreHours: p(76.8), MemoryGiBHours: p(358.4)},
	}
	return Input{Job: j, Analysis: a, JobURL: "https://grafana.example.edu/d/jobsight-job?var-cluster=hpc1&var-job=4242"}
}

func a100(index int64) jobmodel.GPUDevice {
	return jobmodel.GPUDevice{Node: "gpu017", Index: index, UUID: "GPU-0d2c6b1e-7c4f-4a51-9e3b-00000000000" + string(rune('0'+index)),
		Model: "NVIDIA A100-SXM4-80GB", Vendor: "nvidia", PCIBusID: "00000000:0" + string(rune('7'+index)) + ":00.0",
		Held: true, MemoryTotalBytes: pi(80 * gib)}
}

func gpu4HeldIdle() Input {
	gpus := make([]jobmodel.GPUDevice, 4)
	for i := range gpus {
		g := a100(int64(i))
		if i == 0 {
			g.ProcessSeconds = p(8950)
			g.UtilizationAvg, g.UtilizationP95, g.UtilizationPeak = p(0.71), p(0.88), p(1)
			g.ActiveSeconds, g.IdleSeconds = p(7600), p(1400)
			g.MemoryAvgBytes, g.MemoryPeakBytes, g.JobMemoryPeakBytes = pi(28*gib), pi(31*gib+200<<20), pi(31*gib)
			g.PowerAvgWatts, g.PowerPeakWatts, g.EnergyJoules = p(265), p(398), p(2.385e6)
		} else {
			g.HeldIdle = true
			g.UtilizationAvg, g.UtilizationP95, g.UtilizationPeak = p(0), p(0), p(0)
			g.ActiveSeconds, g.IdleSeconds = p(0), p(9000)
			g.MemoryAvgBytes, g.MemoryPeakBytes = pi(0), pi(0)
			g.PowerAvgWatts, g.PowerPeakWatts, g.EnergyJoules = p(52), p(56), p(468000)
		}
		gpus[i] = g
	}
	j := jobmodel.Job{
		DocID: "hpc1:5120", SchemaVersion: 1, Source: jobmodel.SourceSlurm, Cluster: "hpc1",
		JobID: "5120", SlurmJobID: 5120, Name: "train-resnet50", User: "bob", UID: jobmodel.Ptr[uint32](1002),
		Account: "vision", Partition: "gpu", QOS: "normal", Nodes: []string{"gpu017"}, NodeCount: 1,
		State: jobmodel.StateCompleted, ExitCode: jobmodel.Ptr(0),
		SubmitTime: at("2026-11-21T13:40:00Z"), StartTime: at("2026-11-21T14:00:00Z"), EndTime: at("2026-11-21T16:30:00Z"),
		TimeLimitSeconds: pi(8 * 3600), ElapsedSeconds: p(9000),
		Requested: jobmodel.Request{CPUs: pi(32), MemoryBytes: pi(256 * gib), GPUs: pi(4), Nodes: pi(1), Tasks: pi(1), Gres: []string{"gpu:a100:4"}},
		Usage: jobmodel.Usage{
			CPU:    &jobmodel.CPUUsage{CoreSeconds: p(37800), AvgCores: p(4.2), P95Cores: p(6.8), PeakCores: p(9.5), Efficiency: p(0.131)},
			Memory: &jobmodel.MemoryUsage{PeakBytes: pi(61 * gib), RSSPeakBytes: pi(38 * gib), LimitBytes: pi(256 * gib), Efficiency: p(0.148)},
			GPU: &jobmodel.GPUUsage{Count: 4, Held: pi(4), Source: jobmodel.GPUSourceNVML, Attribution: "slurm",
				UtilizationAvg: p(0.1775), EffectiveGPUs: pi(1), EffectiveRatio: p(0.25), HeldIdle: pi(3),
				GPUSeconds: p(36000), ActiveSeconds: p(7600), MemoryPeakBytes: pi(31*gib + 200<<20), EnergyJoules: p(3.789e6)},
			GPUs: gpus,
		},
		Sampling: jobmodel.Sampling{IntervalSeconds: 5, Count: 1800},
		Final:    true, AgentVersion: "0.4.0", UpdatedAt: at("2026-11-21T16:30:02Z"),
	}
	a := &jobmodel.Analysis{
		Version: 1, AnalyzedAt: at("2026-11-21T16:30:04Z"), Kind: jobmodel.KindGPU, Vendor: "nvidia", Class: jobmodel.ClassInefficient, Score: p(0.1775),
		Figures: jobmodel.AnalysisFigures{GPUUtilization: p(0.1775), GPUs: pi(4), EffectiveGPUs: pi(1), EffectiveGPURatio: p(0.25),
			GPUHours: p(10), GPUHoursWasted: p(8.2), CPUEfficiency: p(0.131), MemoryEfficiency: p(0.148), MemoryBasis: "total_rss", WalltimeEfficiency: p(0.3125)},
		Causes: []jobmodel.Cause{
			{ID: "over_scaled", Title: "Three of the four GPUs were held but not used", Confidence: 0.95,
				Evidence: "No process of the job ran on GPUs 1, 2 and 3 during the run; GPU 0 averaged 71% utilisation.",
				Lesson:   "Most training scripts use a single GPU unless they are started once per GPU or use a data-parallel wrapper. Either launch one process per GPU, or request one GPU.",
				DocURL:   "https://hpc.example.edu/docs/multi-gpu"},
			{ID: "cpu_overrequest", Title: "The job used fewer CPUs than it requested", Confidence: 0.6,
				Evidence: "Average 4.2 cores of 32 requested (13%).",
				Lesson:   "Data-loading workers are the main CPU users of a training job; 8 CPUs per GPU is usually enough."},
		},
		Recommendation: jobmodel.Recommendation{GPUs: pi(1), CPUs: pi(8), MemoryBytes: pi(64 * gib), MemoryPerNodeBytes: pi(64 * gib),
			Changes: []jobmodel.SbatchChange{
				// As internal/analysis writes them: From and To are whole options.
				{Option: "--gpus", From: "--gpus=4", To: "--gpus=1", Reason: "Only GPU 0 ran the job's processes."},
				{Option: "--cpus-per-task", From: "--cpus-per-task=32", To: "--cpus-per-task=8", Reason: "The peak was 9.5 cores, mostly data loading for one GPU."},
				{Option: "--mem", From: "--mem=256G", To: "--mem=64G", Reason: "Peak memory was 61 GiB including page cache."},
			}},
		Savings: jobmodel.Savings{GPUHours: p(7.5), CoreHours: p(60), MemoryGiBHours: p(480)},
	}
	return Input{Job: j, Analysis: a}
}

// wave is a deterministic utilisation pattern: high, with a dip every half
// hour (a checkpoint) and a small per-GPU ripple.
func wave(gpu int, minute int) float64 {
	v := 0.91 + 0.05*math.Sin(float64(minute)*0.37+float64(gpu))
	if minute%30 == 29 {
		v = 0.22
	}
	if minute < 3 {
		v = 0.1 * float64(minute+1)
	}
	return math.Round(v*1000) / 1000
}

func gpu8Efficient() Input {
	start, _ := time.Parse(time.RFC3339, "2026-11-22T02:00:00Z")
	nodes := []string{"gpu101", "gpu102"}
	var devs []jobmodel.GPUDevice
	var series []GPUSeries
	var mem []NodeSeries
	const minutes = 120
	for n, node := range nodes {
		var mpts []Point
		for m := 0; m <= minutes; m++ {
			used := float64(70*gib) + float64(m)*float64(200<<20) + float64(n)*float64(gib)
			if m < 3 {
				used = float64(int64(m+1) * 8 * gib)
			}
			mpts = append(mpts, Point{start.Add(time.Duration(m) * time.Minute), used})
		}
		mem = append(mem, NodeSeries{Node: node, Points: mpts})
		for i := 0; i < 4; i++ {
			g := n*4 + i
			var pts []Point
			sum, peak := 0.0, 0.0
			for m := 0; m <= minutes; m++ {
				v := wave(g, m)
				sum += v
				peak = math.Max(peak, v)
				pts = append(pts, Point{start.Add(time.Duration(m) * time.Minute), v})
			}
			series = append(series, GPUSeries{Node: node, Index: int64(i), Points: pts})
			avg := math.Round(sum/float64(minutes+1)*1000) / 1000
			devs = append(devs, jobmodel.GPUDevice{Node: node, Index: int64(i), Model: "NVIDIA H100 80GB HBM3", Vendor: "nvidia", Held: true,
				ProcessSeconds: p(7200), UtilizationAvg: p(avg), UtilizationP95: p(0.96), UtilizationPeak: p(peak),
				MemoryAvgBytes: pi(60 * gib), MemoryPeakBytes: pi(71 * gib), MemoryTotalBytes: pi(80 * gib), JobMemoryPeakBytes: pi(70 * gib),
				PowerAvgWatts: p(590), PowerPeakWatts: p(700), EnergyJoules: p(4.248e6)})
		}
	}
	j := jobmodel.Job{
		DocID: "hpc1:6001", SchemaVersion: 1, Source: jobmodel.SourceSlurm, Cluster: "hpc1",
		JobID: "6001", SlurmJobID: 6001, Name: "llm-finetune", User: "carol", Account: "nlp", Partition: "gpu-h100",
		Nodes: nodes, NodeCount: 2, State: jobmodel.StateCompleted, ExitCode: jobmodel.Ptr(0),
		SubmitTime: at("2026-11-22T01:58:30Z"), StartTime: at("2026-11-22T02:00:00Z"), EndTime: at("2026-11-22T04:00:00Z"),
		TimeLimitSeconds: pi(3 * 3600), ElapsedSeconds: p(7200),
		Requested: jobmodel.Request{CPUs: pi(128), MemoryBytes: pi(2 * 480 * gib), MemoryPerNodeBytes: pi(480 * gib), GPUs: pi(8), Nodes: pi(2), Tasks: pi(8)},
		Usage: jobmodel.Usage{
			CPU: &jobmodel.CPUUsage{AvgCores: p(76.8), P95Cores: p(98), PeakCores: p(112), Efficiency: p(0.6)},
			Memory: &jobmodel.MemoryUsage{PeakBytes: pi(189 * gib), RSSPeakBytes: pi(150 * gib), LimitBytes: pi(960 * gib), MaxNodePeakBytes: pi(95 * gib), Efficiency: p(0.16),
				OOMKills: pi(0)},
			// Two nodes: the job's share and its worst node's.
			Pressure: &jobmodel.PressureUsage{WatchedSeconds: p(14380),
				CPUSomeSeconds: p(575), CPUSomeRatio: p(0.04), CPUSomePeakRatio: p(0.3), MaxNodeCPUSomeRatio: p(0.05),
				MemorySomeSeconds: p(0), MemorySomeRatio: p(0), MemoryFullSeconds: p(0), MemoryFullRatio: p(0),
				IOSomeSeconds: p(1079), IOSomeRatio: p(0.075), IOSomePeakRatio: p(0.7), MaxNodeIOSomeRatio: p(0.12),
				IOFullSeconds: p(144), IOFullRatio: p(0.01)},
			GPU: &jobmodel.GPUUsage{Count: 8, Held: pi(8), Source: jobmodel.GPUSourceNVML, Attribution: "slurm", UtilizationAvg: p(0.87),
				EffectiveGPUs: pi(8), EffectiveRatio: p(1), HeldIdle: pi(0), GPUSeconds: p(57600), ActiveSeconds: p(55000), MemoryPeakBytes: pi(71 * gib), EnergyJoules: p(33.98e6)},
			GPUs: devs,
		},
		Final: true, AgentVersion: "0.4.0",
	}
	a := &jobmodel.Analysis{
		Version: 1, AnalyzedAt: at("2026-11-22T04:00:05Z"), Kind: jobmodel.KindGPU, Vendor: "nvidia", Class: jobmodel.ClassEfficient, Score: p(0.87),
		Figures: jobmodel.AnalysisFigures{GPUUtilization: p(0.87), GPUs: pi(8), EffectiveGPUs: pi(8), EffectiveGPURatio: p(1), GPUHours: p(16), GPUHoursWasted: p(2.1), WalltimeEfficiency: p(0.667)},
	}
	return Input{Job: j, Analysis: a, Series: &Series{GPUUtilization: series, MemoryUsed: mem}}
}

func shortJob() Input {
	j := jobmodel.Job{
		DocID: "hpc1:7000_3", SchemaVersion: 1, Source: jobmodel.SourceSlurm, Cluster: "hpc1",
		JobID: "7000_3", SlurmJobID: 7004, ArrayJobID: jobmodel.Ptr[uint64](7000), ArrayTaskID: jobmodel.Ptr[uint64](3),
		User: "dave", Account: "chem", Partition: "debug", Nodes: []string{"cn003"}, NodeCount: 1,
		State: jobmodel.StateFailed, ExitCode: jobmodel.Ptr(1), Reason: "NonZeroExitCode",
		SubmitTime: at("2026-11-21T09:00:00Z"), StartTime: at("2026-11-21T09:00:05Z"), EndTime: at("2026-11-21T09:00:47Z"),
		TimeLimitSeconds: pi(3600), ElapsedSeconds: p(42),
		Requested: jobmodel.Request{CPUs: pi(4), MemoryBytes: pi(8 * gib)},
		Usage: jobmodel.Usage{
			CPU:    &jobmodel.CPUUsage{CoreSeconds: p(30.2), AvgCores: p(0.72), PeakCores: p(1.0), Efficiency: p(0.18)},
			Memory: &jobmodel.MemoryUsage{RSSPeakBytes: pi(310 << 20), PeakBytes: pi(420 << 20), LimitBytes: pi(8 * gib), Efficiency: p(0.0378)},
		},
		Sampling: jobmodel.Sampling{IntervalSeconds: 5, Count: 8},
		Final:    true, AgentVersion: "0.4.0",
	}
	a := &jobmodel.Analysis{Version: 1, AnalyzedAt: at("2026-11-21T09:00:49Z"), Kind: jobmodel.KindCPU, Class: jobmodel.ClassShort}
	return Input{Job: j, Analysis: a}
}

func partialJob() Input {
	j := jobmodel.Job{
		DocID: "hpc2:900123", SchemaVersion: 1, Source: jobmodel.SourceSlurm, Cluster: "hpc2",
		JobID: "900123", SlurmJobID: 900123, User: "erin", Account: "climate", Partition: "compute",
		Nodes: []string{"cn040", "cn041", "cn042"}, NodeCount: 3, State: jobmodel.StateTimeout,
		SubmitTime: at("2026-11-20T18:00:00Z"), StartTime: at("2026-11-20T20:00:00Z"), EndTime: at("2026-11-21T20:00:00Z"),
		TimeLimitSeconds: pi(24 * 3600), ElapsedSeconds: p(24 * 3600),
		Requested: jobmodel.Request{CPUs: pi(3 * 48), Nodes: pi(3), Tasks: pi(144)},
		Usage: jobmodel.Usage{
			CPU:    &jobmodel.CPUUsage{AvgCores: p(79.2), P95Cores: p(94), PeakCores: p(96)},
			Memory: &jobmodel.MemoryUsage{RSSPeakBytes: pi(140 * gib)},
		},
		MissingMetrics: []string{"memory", "memory_limit", "memory_peak", "node:cn042", "samples_after_agent_loss:cn041"},
		Final:          true, AgentVersion: "0.4.0",
	}
	a := &jobmodel.Analysis{
		Version: 1, AnalyzedAt: at("2026-11-21T20:00:10Z"), Kind: jobmodel.KindCPU, Class: jobmodel.ClassAcceptable, Score: p(0.55),
		Figures: jobmodel.AnalysisFigures{CoreHours: p(3456), WalltimeEfficiency: p(1)},
		Causes: []jobmodel.Cause{{ID: "timeout", Title: "The job reached its time limit", Confidence: 1,
			Evidence: "State TIMEOUT after 1-00:00:00 of a 1-00:00:00 limit.",
			Lesson:   "A job stopped at its limit loses the work since its last checkpoint. Checkpointing regularly, or a longer limit where the partition allows it, keeps that work."}},
		MissingMetrics: []string{"memory_limit", "cpu_efficiency"},
	}
	return Input{Job: j, Analysis: a}
}

func amdJob() Input {
	var devs []jobmodel.GPUDevice
	for i := 0; i < 2; i++ {
		devs = append(devs, jobmodel.GPUDevice{Node: "amd005", Index: int64(i), Model: "AMD Instinct MI250X", Vendor: "amd",
			Held: true, ProcessSeconds: p(5400),
			UtilizationAvg: p([]float64{0.41, 0.29}[i]), UtilizationP95: p([]float64{0.83, 0.71}[i]), UtilizationPeak: p(1),
			MemoryPeakBytes: pi([]int64{41, 39}[i] * gib), MemoryTotalBytes: pi(64 * gib),
			PowerAvgWatts: p(212), EnergyJoules: p(1.1448e6),
			MissingMetrics: []string{"gpu_sm_clock"}})
	}
	j := jobmodel.Job{
		DocID: "lumi:31337", SchemaVersion: 1, Source: jobmodel.SourceSlurm, Cluster: "lumi",
		JobID: "31337", SlurmJobID: 31337, User: "frank", Account: "project_465000", Partition: "small-g",
		Nodes: []string{"amd005"}, NodeCount: 1, State: jobmodel.StateCompleted, ExitCode: jobmodel.Ptr(0),
		SubmitTime: at("2026-11-21T10:00:00Z"), StartTime: at("2026-11-21T10:10:00Z"), EndTime: at("2026-11-21T11:40:00Z"),
		TimeLimitSeconds: pi(4 * 3600), ElapsedSeconds: p(5400),
		Requested: jobmodel.Request{CPUs: pi(4), MemoryBytes: pi(60 * gib), GPUs: pi(2)},
		Usage: jobmodel.Usage{
			CPU:    &jobmodel.CPUUsage{AvgCores: p(3.9), P95Cores: p(4), PeakCores: p(4), Efficiency: p(0.975)},
			Memory: &jobmodel.MemoryUsage{PeakBytes: pi(31 * gib), RSSPeakBytes: pi(22 * gib), LimitBytes: pi(60 * gib), Efficiency: p(0.367)},
			GPU: &jobmodel.GPUUsage{Count: 2, Held: pi(2), Source: jobmodel.GPUSourceAMDSMI, Attribution: "cgroup", UtilizationAvg: p(0.35),
				EffectiveGPUs: pi(2), EffectiveRatio: p(1), HeldIdle: pi(0), MemoryPeakBytes: pi(41 * gib), EnergyJoules: p(2.2896e6)},
			GPUs: devs,
		},
		MissingMetrics: []string{"gpu_sm_clock"},
		Final:          true, AgentVersion: "0.4.0",
	}
	a := &jobmodel.Analysis{
		Version: 1, AnalyzedAt: at("2026-11-21T11:40:06Z"), Kind: jobmodel.KindGPU, Vendor: "amd", Class: jobmodel.ClassAcceptable, Score: p(0.35),
		Figures: jobmodel.AnalysisFigures{GPUUtilization: p(0.35), GPUs: pi(2), EffectiveGPUs: pi(2), EffectiveGPURatio: p(1), GPUHours: p(3), GPUHoursWasted: p(1.95), CPUEfficiency: p(0.975)},
		Causes: []jobmodel.Cause{{ID: "cpu_bottleneck", Title: "The GPUs often waited for the CPUs", Confidence: 0.7,
			Evidence: "All 4 CPUs were busy (97.5%) while the GPUs averaged 35%.",
			Lesson:   "Data loading and preprocessing run on the CPUs. More CPUs per GCD (LUMI-G offers 7 per GCD) let the loaders keep up with the GPUs.",
			DocURL:   "https://docs.example.org/lumi-g/cpu-binding"}},
		Recommendation: jobmodel.Recommendation{CPUs: pi(14), Changes: []jobmodel.SbatchChange{
			{Option: "--cpus-per-task", From: "4", To: "14", Reason: "The CPUs were saturated; 7 per GCD is what the node offers."}}},
	}
	return Input{Job: j, Analysis: a}
}

func simulatedJob() Input {
	var devs []jobmodel.GPUDevice
	for i := 0; i < 2; i++ {
		devs = append(devs, jobmodel.GPUDevice{Node: "vm", Index: int64(i), Model: "Simulated GPU", Vendor: "nvidia", Simulated: true,
			Held: true, UtilizationAvg: p([]float64{0.04, 0.02}[i]), UtilizationP95: p(0.1), UtilizationPeak: p(0.25),
			MemoryPeakBytes: pi(2 * gib), MemoryTotalBytes: pi(16 * gib)})
	}
	j := jobmodel.Job{
		DocID: "jobsight-dev:12", SchemaVersion: 1, Source: jobmodel.SourceSlurm, Cluster: "jobsight-dev",
		JobID: "12", SlurmJobID: 12, User: "root", Partition: "debug", Nodes: []string{"vm"}, NodeCount: 1,
		State: jobmodel.StateCompleted, ExitCode: jobmodel.Ptr(0),
		SubmitTime: at("2026-11-23T15:00:00Z"), StartTime: at("2026-11-23T15:00:01Z"), EndTime: at("2026-11-23T17:00:01Z"),
		ElapsedSeconds: p(7200),
		Requested:      jobmodel.Request{CPUs: pi(2), MemoryBytes: pi(4 * gib), GPUs: pi(2)},
		Usage: jobmodel.Usage{
			CPU:    &jobmodel.CPUUsage{AvgCores: p(0.05), PeakCores: p(0.4), Efficiency: p(0.025)},
			Memory: &jobmodel.MemoryUsage{PeakBytes: pi(300 << 20), RSSPeakBytes: pi(120 << 20), LimitBytes: pi(4 * gib), Efficiency: p(0.029)},
			GPU: &jobmodel.GPUUsage{Count: 2, Held: pi(2), Source: jobmodel.GPUSourceSimulated, Attribution: "slurm", Simulated: true,
				UtilizationAvg: p(0.03), EffectiveGPUs: pi(0), EffectiveRatio: p(0), HeldIdle: pi(0)},
			GPUs: devs,
		},
		Final: true, AgentVersion: "dev",
	}
	a := &jobmodel.Analysis{
		Version: 1, AnalyzedAt: at("2026-11-23T17:00:03Z"), Kind: jobmodel.KindGPU, Class: jobmodel.ClassWasted, Score: p(0.03),
		Figures: jobmodel.AnalysisFigures{GPUUtilization: p(0.03), GPUs: pi(2), EffectiveGPUs: pi(0), EffectiveGPURatio: p(0), GPUHours: p(4), GPUHoursWasted: p(3.9)},
		Causes: []jobmodel.Cause{{ID: "gpu_idle", Title: "The GPUs were nearly idle", Confidence: 0.9,
			Evidence: "Average GPU utilisation 3%; no GPU was above the 10% activity threshold.",
			Lesson:   "A job whose work runs on the CPU does not need a GPU. Check that the program was built with GPU support and that it finds the GPU."}},
		Recommendation: jobmodel.Recommendation{GPUs: pi(0), Changes: []jobmodel.SbatchChange{
			{Option: "--gpus", From: "2", Reason: "The GPUs stayed near idle; a CPU partition may start the job sooner."}}},
		Savings: jobmodel.Savings{GPUHours: p(4)},
	}
	return Input{Job: j, Analysis: a}
}
