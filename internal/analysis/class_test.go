package analysis

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

func TestBaseJobsAreCleanAndEfficient(t *testing.T) {
	t.Parallel()
	for name, j := range map[string]jobmodel.Job{"cpu": baseCPU(), "gpu1": baseGPU(1), "gpu4": baseGPU(4)} {
		a := analyze(j, Default())
		checkInvariants(t, a)
		if a.Class != jobmodel.ClassEfficient || len(a.Causes) != 0 || len(a.Recommendation.Changes) != 0 || len(a.MissingMetrics) != 0 {
			t.Errorf("%s: class %s, causes %v, changes %+v, missing %v", name, a.Class, ids(a), a.Recommendation.Changes, a.MissingMetrics)
		}
	}
}

func TestGPUClassBoundaries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		util float64
		want string
	}{
		{1, jobmodel.ClassEfficient},
		{0.70, jobmodel.ClassEfficient},
		{0.699, jobmodel.ClassAcceptable},
		{0.40, jobmodel.ClassAcceptable},
		{0.399, jobmodel.ClassInefficient},
		{0.15, jobmodel.ClassInefficient},
		{0.149, jobmodel.ClassWasted},
		{0, jobmodel.ClassWasted},
	} {
		j := baseGPU(1)
		setGPU(&j, 0, tc.util, 0.75)
		a := analyze(j, Default())
		checkInvariants(t, a)
		if a.Class != tc.want || a.Kind != jobmodel.KindGPU || a.Score == nil || *a.Score != tc.util {
			t.Errorf("GPU utilisation %v: class %s (kind %s, score %v), want %s", tc.util, a.Class, a.Kind, a.Score, tc.want)
		}
	}
}

// A job-wide average that lands on a bound through floating-point sums is
// on the bound, not below it.
func TestClassBoundaryFloatNoise(t *testing.T) {
	t.Parallel()
	j := baseGPU(3)
	for i := 0; i < 3; i++ {
		setGPU(&j, i, 0.7, 0.75)
	}
	j.GPU.UtilizationAvg = p(0.1 + 0.2 + 0.4) // 0.7000000000000001
	if a := analyze(j, Default()); a.Class != jobmodel.ClassEfficient {
		t.Errorf("0.1+0.2+0.4: class %s", a.Class)
	}
	j.GPU.UtilizationAvg = p(0.7 - 1e-12)
	if a := analyze(j, Default()); a.Class != jobmodel.ClassEfficient {
		t.Errorf("0.7-1e-12: class %s", a.Class)
	}
	j.GPU.UtilizationAvg = p(0.7 - 1e-6)
	if a := analyze(j, Default()); a.Class != jobmodel.ClassAcceptable {
		t.Errorf("0.7-1e-6: class %s", a.Class)
	}
}

func TestGPUClassBoundariesConfigurable(t *testing.T) {
	t.Parallel()
	cfg := Default()
	cfg.Classes.GPUEfficient, cfg.Classes.GPUAcceptable, cfg.Classes.GPUInefficient = 0.8, 0.5, 0.2
	for util, want := range map[float64]string{0.79: jobmodel.ClassAcceptable, 0.8: jobmodel.ClassEfficient,
		0.49: jobmodel.ClassInefficient, 0.2: jobmodel.ClassInefficient, 0.19: jobmodel.ClassWasted} {
		j := baseGPU(1)
		setGPU(&j, 0, util, 0.75)
		if a := analyze(j, cfg); a.Class != want {
			t.Errorf("GPU utilisation %v with bounds 0.8/0.5/0.2: class %s, want %s", util, a.Class, want)
		}
	}
}

func TestCPUClassBoundaries(t *testing.T) {
	t.Parallel()
	// With the memory weight at 0 the score is the CPU efficiency itself.
	cfg := Default()
	cfg.Classes.CPUMemoryWeight = 0
	for _, tc := range []struct {
		eff  float64
		want string
	}{
		{0.70, jobmodel.ClassEfficient}, {0.699, jobmodel.ClassAcceptable},
		{0.40, jobmodel.ClassAcceptable}, {0.399, jobmodel.ClassInefficient},
		{0.15, jobmodel.ClassInefficient}, {0.149, jobmodel.ClassWasted},
	} {
		j := baseCPU()
		setCPUEff(&j, tc.eff)
		a := analyze(j, cfg)
		checkInvariants(t, a)
		if a.Class != tc.want || a.Kind != jobmodel.KindCPU || a.Score == nil || math.Abs(*a.Score-tc.eff) > 1e-12 {
			t.Errorf("CPU efficiency %v: class %s (score %v), want %s", tc.eff, a.Class, a.Score, tc.want)
		}
	}
}

func TestCPUScoreBlendsMemory(t *testing.T) {
	t.Parallel()
	j := baseCPU()
	setCPUEff(&j, 0.6)
	j.Memory.MaxNodePeakBytes = p(16 * giB) // memory fully used
	a := analyze(j, Default())
	// 0.75 × 0.6 + 0.25 × 1 = 0.7: the memory the job needed lifts it.
	if a.Score == nil || math.Abs(*a.Score-0.7) > 1e-9 || a.Class != jobmodel.ClassEfficient {
		t.Errorf("score %v class %s, want 0.7 efficient", a.Score, a.Class)
	}
	// A job that uses all its cores and little memory stays efficient.
	j = baseCPU()
	setCPUEff(&j, 1)
	j.Memory.MaxNodePeakBytes = p(giB / 10)
	if a := analyze(j, Default()); a.Class != jobmodel.ClassEfficient {
		t.Errorf("all cores busy, little memory: class %s (score %v)", a.Class, *a.Score)
	}
	// Without a memory figure the score is the CPU efficiency alone.
	j = baseCPU()
	setCPUEff(&j, 0.5)
	j.Memory = nil
	a = analyze(j, Default())
	if a.Score == nil || *a.Score != 0.5 || a.Class != jobmodel.ClassAcceptable {
		t.Errorf("no memory: score %v class %s", a.Score, a.Class)
	}
	if !slices.Contains(a.MissingMetrics, "memory.peak_bytes") {
		t.Errorf("missing %v lacks memory.peak_bytes", a.MissingMetrics)
	}
}

func TestShortJobLimit(t *testing.T) {
	t.Parallel()
	bad := func(el float64) jobmodel.Job {
		// A job that would have every kind of cause were it long enough.
		j := baseGPU(4)
		for i := 1; i < 4; i++ {
			holdIdle(&j, i)
		}
		j.ElapsedSeconds = p(el)
		j.TimeLimitSeconds = p[int64](86400)
		j.Memory.MaxNodePeakBytes = p(giB)
		return j
	}
	for _, tc := range []struct {
		el   float64
		cfg  func(*Config)
		want string
	}{
		{599.9, nil, jobmodel.ClassShort},
		{600, nil, jobmodel.ClassInefficient},
		{0, nil, jobmodel.ClassShort},
		{1799, func(c *Config) { c.ShortJob = 30 * time.Minute }, jobmodel.ClassShort},
		{1800, func(c *Config) { c.ShortJob = 30 * time.Minute }, jobmodel.ClassInefficient},
		{1, func(c *Config) { c.ShortJob = 0 }, jobmodel.ClassInefficient},
	} {
		cfg := Default()
		if tc.cfg != nil {
			tc.cfg(&cfg)
		}
		a := analyze(bad(tc.el), cfg)
		checkInvariants(t, a)
		if a.Class != tc.want {
			t.Errorf("elapsed %v (short_job %s): class %s, want %s", tc.el, cfg.ShortJob, a.Class, tc.want)
		}
		if a.Class == jobmodel.ClassShort {
			if len(a.Causes) != 0 || len(a.Recommendation.Changes) != 0 || a.Savings != (jobmodel.Savings{}) {
				t.Errorf("short job has causes %v, changes %v or savings %+v", ids(a), a.Recommendation.Changes, a.Savings)
			}
			if a.Figures.GPUUtilization == nil || a.Figures.EffectiveGPUs == nil || a.Score == nil {
				t.Errorf("short job's figures not computed: %+v", a.Figures)
			}
		} else if len(a.Causes) == 0 {
			t.Errorf("elapsed %v: judged job without causes", tc.el)
		}
	}
}

func TestEverythingMissing(t *testing.T) {
	t.Parallel()
	a := Analyze(Input{}, Default())
	checkInvariants(t, a)
	if a.Class != jobmodel.ClassUnknown || a.Kind != jobmodel.KindCPU || a.Score != nil || a.AnalyzedAt != nil {
		t.Errorf("empty job: %+v", a)
	}
	if a.Figures != (jobmodel.AnalysisFigures{}) || len(a.Causes) != 0 || len(a.Recommendation.Changes) != 0 || a.Savings != (jobmodel.Savings{}) {
		t.Errorf("empty job has figures, causes, changes or savings: %+v", a)
	}
	want := []string{"cpu.core_seconds", "elapsed_seconds", "memory.peak_bytes", "requested.cpus", "requested.memory_bytes"}
	if !slices.Equal(a.MissingMetrics, want) {
		t.Errorf("missing %v, want %v", a.MissingMetrics, want)
	}

	// A GPU job known only from its request.
	a = Analyze(Input{Job: jobmodel.Job{State: jobmodel.StateCompleted, ElapsedSeconds: p(3600.0),
		Requested: jobmodel.Request{GPUs: p[int64](2)}}}, Default())
	checkInvariants(t, a)
	if a.Class != jobmodel.ClassUnknown || a.Kind != jobmodel.KindGPU || a.Figures.GPUs == nil || *a.Figures.GPUs != 2 ||
		a.Figures.GPUUtilization != nil || a.Figures.GPUHours == nil || a.Figures.GPUHoursWasted != nil {
		t.Errorf("GPU job with no GPU data: %+v", a)
	}
	for _, m := range []string{"gpu.utilization_avg", "gpus.utilization_avg"} {
		if !slices.Contains(a.MissingMetrics, m) {
			t.Errorf("missing %v lacks %s", a.MissingMetrics, m)
		}
	}
}

func TestFiguresAbsentStayAbsent(t *testing.T) {
	t.Parallel()
	j := baseCPU()
	j.TimeLimitSeconds = nil // unlimited: no walltime figure, and nothing missing
	j.CPU = nil
	a := analyze(j, Default())
	checkInvariants(t, a)
	if a.Figures.WalltimeEfficiency != nil || a.Figures.CPUEfficiency != nil || a.Figures.CoreHoursWasted != nil {
		t.Errorf("figures made up: %+v", a.Figures)
	}
	if a.Figures.CoreHours == nil || *a.Figures.CoreHours != 16 {
		t.Errorf("core-hours %v, want 16", a.Figures.CoreHours)
	}
	if a.Class != jobmodel.ClassUnknown || !slices.Equal(a.MissingMetrics, []string{"cpu.core_seconds"}) {
		t.Errorf("class %s missing %v", a.Class, a.MissingMetrics)
	}

	// Elapsed time from start and end when elapsed_seconds is absent.
	j = baseCPU()
	j.ElapsedSeconds = nil
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	j.StartTime, j.EndTime = jobmodel.At(start), jobmodel.At(start.Add(2*time.Hour))
	if a := analyze(j, Default()); a.Class != jobmodel.ClassEfficient || a.Figures.CoreHours == nil || *a.Figures.CoreHours != 16 {
		t.Errorf("elapsed from start/end: class %s core-hours %v", a.Class, a.Figures.CoreHours)
	}

	// The document's own cpu.efficiency when core-seconds cannot be used.
	j = baseCPU()
	j.Requested.CPUs = nil
	j.CPU.Efficiency = p(0.42)
	a = analyze(j, Default())
	if a.Figures.CPUEfficiency == nil || *a.Figures.CPUEfficiency != 0.42 || a.Figures.CoreHours != nil {
		t.Errorf("fallback efficiency: %+v", a.Figures)
	}
	if !slices.Contains(a.MissingMetrics, "requested.cpus") {
		t.Errorf("missing %v lacks requested.cpus", a.MissingMetrics)
	}
}

func TestFigures(t *testing.T) {
	t.Parallel()
	j := baseGPU(4)
	setGPU(&j, 0, 0.9, 0.5)
	setGPU(&j, 1, 0.10, 0.5) // exactly at the threshold: not effective
	setGPU(&j, 2, 0.11, 0.5)
	setGPU(&j, 3, 0.0, 0.5)
	setCPUEff(&j, 0.25)
	a := analyze(j, Default())
	checkInvariants(t, a)
	f := a.Figures
	near := func(name string, got *float64, want float64) {
		t.Helper()
		if got == nil || math.Abs(*got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("gpu_utilization", f.GPUUtilization, (0.9+0.1+0.11)/4)
	near("effective_gpu_ratio", f.EffectiveGPURatio, 0.5)
	if f.EffectiveGPUs == nil || *f.EffectiveGPUs != 2 || f.GPUs == nil || *f.GPUs != 4 {
		t.Errorf("effective %v of %v, want 2 of 4", f.EffectiveGPUs, f.GPUs)
	}
	near("cpu_efficiency", f.CPUEfficiency, 0.25)
	near("memory_efficiency", f.MemoryEfficiency, 160.0/256)
	near("walltime_efficiency", f.WalltimeEfficiency, 2.0/3)
	near("gpu_hours", f.GPUHours, 8)
	near("gpu_hours_wasted", f.GPUHoursWasted, 8*(1-(0.9+0.1+0.11)/4))
	near("core_hours", f.CoreHours, 64)
	near("core_hours_wasted", f.CoreHoursWasted, 48)
	if f.MemoryBasis != MemoryBasisPerNode {
		t.Errorf("memory basis %q", f.MemoryBasis)
	}

	// The effective threshold is configurable.
	cfg := Default()
	cfg.EffectiveGPUThreshold = 0.05
	if a := analyze(j, cfg); a.Figures.EffectiveGPUs == nil || *a.Figures.EffectiveGPUs != 3 {
		t.Errorf("threshold 0.05: effective %v, want 3", a.Figures.EffectiveGPUs)
	}

	// A GPU without a utilisation reading leaves the effective count
	// absent (not a lower bound); the job-wide average comes from the
	// summary.
	setGPU(&j, 3, -1, 0.5)
	j.GPU.UtilizationAvg = p(0.3)
	a = analyze(j, Default())
	if a.Figures.EffectiveGPUs != nil || a.Figures.EffectiveGPURatio != nil || a.Figures.GPUUtilization == nil || *a.Figures.GPUUtilization != 0.3 {
		t.Errorf("partial per-GPU data: %+v", a.Figures)
	}
	if !slices.Contains(a.MissingMetrics, "gpus.utilization_avg") {
		t.Errorf("missing %v", a.MissingMetrics)
	}
}

func TestMemoryBasis(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		edit  func(*jobmodel.Job)
		basis string
		eff   float64
	}{
		{"per node", func(j *jobmodel.Job) {}, MemoryBasisPerNode, 0.75},
		{"multi-node, fullest node", func(j *jobmodel.Job) {
			j.Requested.Nodes = p[int64](2)
			j.Requested.MemoryBytes = p(32 * giB)
			j.Memory.PeakBytes = p(14 * giB)
			j.Memory.MaxNodePeakBytes = p(10 * giB)
		}, MemoryBasisPerNode, 10.0 / 16},
		{"no per-node request: totals", func(j *jobmodel.Job) {
			j.Requested.MemoryPerNodeBytes = nil
			j.Memory.PeakBytes = p(4 * giB)
		}, MemoryBasisTotal, 0.25},
		{"no node peak: totals", func(j *jobmodel.Job) {
			j.Memory.MaxNodePeakBytes = nil
			j.Memory.PeakBytes = p(8 * giB)
		}, MemoryBasisTotal, 0.5},
		{"only RSS (standalone run)", func(j *jobmodel.Job) {
			j.Memory = &jobmodel.MemoryUsage{RSSPeakBytes: p(2 * giB)}
		}, MemoryBasisTotalRSS, 0.125},
		{"request from the cgroup limit", func(j *jobmodel.Job) {
			j.Requested.MemoryBytes, j.Requested.MemoryPerNodeBytes = nil, nil
			j.Memory.LimitBytes = p(32 * giB)
		}, MemoryBasisTotal, 0.375},
		{"peak above request is clamped", func(j *jobmodel.Job) {
			j.Memory.MaxNodePeakBytes = p(20 * giB)
		}, MemoryBasisPerNode, 1},
		// The working set is preferred where the document has it.
		{"working set per node: page cache does not count", func(j *jobmodel.Job) {
			j.Memory.WorkingSetPeakBytes, j.Memory.MaxNodeWorkingSetPeakBytes = p(4*giB), p(4*giB)
		}, MemoryBasisPerNodeWorkingSet, 0.25},
		{"working set per node: shared memory counts", func(j *jobmodel.Job) {
			j.Memory.RSSPeakBytes, j.Memory.ShmemPeakBytes = p(giB/4), p(10*giB)
			j.Memory.WorkingSetPeakBytes, j.Memory.MaxNodeWorkingSetPeakBytes = p(11*giB), p(11*giB)
		}, MemoryBasisPerNodeWorkingSet, 11.0 / 16},
		{"working set, multi-node: fullest node", func(j *jobmodel.Job) {
			j.Requested.Nodes = p[int64](2)
			j.Requested.MemoryBytes = p(32 * giB)
			j.Memory.WorkingSetPeakBytes, j.Memory.MaxNodeWorkingSetPeakBytes = p(14*giB), p(12*giB)
		}, MemoryBasisPerNodeWorkingSet, 12.0 / 16},
		{"working set, no per-node request: totals", func(j *jobmodel.Job) {
			j.Requested.MemoryPerNodeBytes = nil
			j.Memory.WorkingSetPeakBytes, j.Memory.MaxNodeWorkingSetPeakBytes = p(2*giB), p(2*giB)
		}, MemoryBasisTotalWorkingSet, 0.125},
		{"working set without a node maximum: totals", func(j *jobmodel.Job) {
			j.Memory.WorkingSetPeakBytes = p(6 * giB)
		}, MemoryBasisTotalWorkingSet, 6.0 / 16},
	} {
		j := baseCPU()
		tc.edit(&j)
		a := analyze(j, Default())
		checkInvariants(t, a)
		if a.Figures.MemoryBasis != tc.basis || a.Figures.MemoryEfficiency == nil || math.Abs(*a.Figures.MemoryEfficiency-tc.eff) > 1e-9 {
			t.Errorf("%s: basis %q efficiency %v, want %q %v", tc.name, a.Figures.MemoryBasis, a.Figures.MemoryEfficiency, tc.basis, tc.eff)
		}
	}
}

func TestVendorAndAnalyzedAt(t *testing.T) {
	t.Parallel()
	j := baseGPU(2)
	a := analyze(j, Default())
	if a.Vendor != VendorNVIDIA || a.AnalyzedAt == nil || !a.AnalyzedAt.Equal(testNow) {
		t.Errorf("vendor %q analyzed_at %v", a.Vendor, a.AnalyzedAt)
	}
	for i := range j.GPUs {
		j.GPUs[i].Vendor = "AMD"
	}
	if a := analyze(j, Default()); a.Vendor != VendorAMD {
		t.Errorf("AMD GPUs: vendor %q", a.Vendor)
	}
	for i := range j.GPUs {
		j.GPUs[i].Vendor = ""
	}
	j.GPU.Source = jobmodel.GPUSourceAMDSMICLI
	if a := analyze(j, Default()); a.Vendor != VendorAMD {
		t.Errorf("amd-smi source: vendor %q", a.Vendor)
	}
	if a := analyze(baseCPU(), Default()); a.Vendor != "" {
		t.Errorf("CPU job: vendor %q", a.Vendor)
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	j := loadFixture(t, "gpu_four_held_one_used.json")
	first := analyze(j, Default())
	for i := 0; i < 20; i++ {
		if a := analyze(j, Default()); !equalJSON(t, a, first) {
			t.Fatalf("run %d differs", i)
		}
	}
}
