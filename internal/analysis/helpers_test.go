package analysis

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

const giB = int64(1) << 30

var testNow = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func p[T any](v T) *T { return &v }

// baseCPU is a healthy single-node CPU job: no rule fires on it.
func baseCPU() jobmodel.Job {
	el := 7200.0
	return jobmodel.Job{
		DocID: "hpc1:1", Cluster: "hpc1", JobID: "1", Partition: "cpu",
		Nodes: []string{"cn001"}, NodeCount: 1,
		State: jobmodel.StateCompleted, ElapsedSeconds: p(el), TimeLimitSeconds: p[int64](3 * 3600),
		Requested: jobmodel.Request{CPUs: p[int64](8), MemoryBytes: p(16 * giB), MemoryPerNodeBytes: p(16 * giB),
			Nodes: p[int64](1), Tasks: p[int64](1)},
		Usage: jobmodel.Usage{
			CPU: &jobmodel.CPUUsage{CoreSeconds: p(0.9 * 8 * el), AvgCores: p(7.2), P95Cores: p(7.9), PeakCores: p(8.0)},
			Memory: &jobmodel.MemoryUsage{PeakBytes: p(12 * giB), RSSPeakBytes: p(11 * giB), LimitBytes: p(16 * giB),
				MaxNodePeakBytes: p(12 * giB)},
			Threads: &jobmodel.CountUsage{Peak: p[int64](9)},
		},
		Final: true,
	}
}

// baseGPU is a healthy single-node job on n A100-80GB GPUs, all busy:
// no rule fires on it.
func baseGPU(n int) jobmodel.Job {
	j := baseCPU()
	j.Partition = "gpu"
	cpus := int64(8 * n)
	j.Requested.CPUs = p(cpus)
	j.Requested.GPUs = p(int64(n))
	j.Requested.MemoryBytes = p(int64(n) * 64 * giB)
	j.Requested.MemoryPerNodeBytes = p(int64(n) * 64 * giB)
	j.Memory.PeakBytes = p(int64(n) * 40 * giB)
	j.Memory.MaxNodePeakBytes = p(int64(n) * 40 * giB)
	j.Memory.LimitBytes = p(int64(n) * 64 * giB)
	el := *j.ElapsedSeconds
	j.CPU = &jobmodel.CPUUsage{CoreSeconds: p(0.5 * float64(cpus) * el), AvgCores: p(0.5 * float64(cpus)),
		P95Cores: p(0.6 * float64(cpus)), PeakCores: p(0.8 * float64(cpus))}
	j.GPU = &jobmodel.GPUUsage{Count: int64(n), Held: p(int64(n)), Source: jobmodel.GPUSourceNVML, Attribution: "slurm",
		HeldIdle: p[int64](0)}
	j.GPUs = nil
	for i := 0; i < n; i++ {
		j.GPUs = append(j.GPUs, jobmodel.GPUDevice{Node: "gpu001", Index: int64(i), Model: "NVIDIA A100-SXM4-80GB",
			Vendor: "nvidia", Held: true})
		setGPU(&j, i, 0.85, 0.75)
	}
	return j
}

// setGPU sets GPU i's average utilisation and the job's memory share on
// it (negative: unknown), and keeps the summary's average in step.
func setGPU(j *jobmodel.Job, i int, util, memFrac float64) {
	d := &j.GPUs[i]
	d.UtilizationAvg = nil
	if util >= 0 {
		d.UtilizationAvg = p(util)
	}
	d.MemoryTotalBytes = p(80 * giB)
	d.MemoryPeakBytes, d.JobMemoryPeakBytes = nil, nil
	if memFrac >= 0 {
		d.MemoryPeakBytes = p(int64(memFrac * float64(80*giB)))
		d.JobMemoryPeakBytes = p(int64(memFrac * float64(80*giB)))
	}
	syncGPU(j)
}

// syncGPU recomputes the summary's average utilisation and held-idle count
// from the per-GPU entries, as the agent does.
func syncGPU(j *jobmodel.Job) {
	var sum float64
	n, idle := 0, int64(0)
	for _, d := range j.GPUs {
		if d.UtilizationAvg != nil {
			sum += *d.UtilizationAvg
			n++
		}
		if d.HeldIdle {
			idle++
		}
	}
	j.GPU.UtilizationAvg = nil
	if n > 0 {
		j.GPU.UtilizationAvg = p(sum / float64(n))
	}
	j.GPU.HeldIdle = p(idle)
}

// holdIdle marks GPU i held with no process of the job and no load.
func holdIdle(j *jobmodel.Job, i int) {
	setGPU(j, i, 0, 0)
	j.GPUs[i].HeldIdle = true
	j.GPUs[i].JobMemoryPeakBytes = p[int64](0)
	syncGPU(j)
}

// setCPUEff sets the job's CPU use to eff of its CPUs.
func setCPUEff(j *jobmodel.Job, eff float64) {
	cpus := float64(*j.Requested.CPUs)
	el := *j.ElapsedSeconds
	j.CPU.CoreSeconds = p(eff * cpus * el)
	j.CPU.AvgCores = p(eff * cpus)
	j.CPU.P95Cores = p(math.Min(cpus, eff*cpus*1.1))
	j.CPU.PeakCores = p(math.Min(cpus, eff*cpus*1.3))
}

func analyze(j jobmodel.Job, cfg Config) jobmodel.Analysis {
	return Analyze(Input{Job: j, At: testNow}, cfg)
}

func ids(a jobmodel.Analysis) []string {
	var out []string
	for _, c := range a.Causes {
		out = append(out, c.ID)
	}
	return out
}

func causeOf(a jobmodel.Analysis, id string) *jobmodel.Cause {
	for i := range a.Causes {
		if a.Causes[i].ID == id {
			return &a.Causes[i]
		}
	}
	return nil
}

func changeOf(a jobmodel.Analysis, option string) *jobmodel.SbatchChange {
	for i := range a.Recommendation.Changes {
		if a.Recommendation.Changes[i].Option == option {
			return &a.Recommendation.Changes[i]
		}
	}
	return nil
}

func loadFixture(t testing.TB, name string) jobmodel.Job {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var j jobmodel.Job
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return j
}

// checkInvariants checks what must hold for every analysis, whatever the
// document: known class and kind, ratios in 0–1, finite non-negative
// hours, sorted causes with text, and a result that encodes as JSON.
func checkInvariants(t testing.TB, a jobmodel.Analysis) {
	t.Helper()
	switch a.Class {
	case jobmodel.ClassEfficient, jobmodel.ClassAcceptable, jobmodel.ClassInefficient, jobmodel.ClassWasted,
		jobmodel.ClassShort, jobmodel.ClassUnknown:
	default:
		t.Fatalf("class %q", a.Class)
	}
	if a.Kind != jobmodel.KindCPU && a.Kind != jobmodel.KindGPU {
		t.Fatalf("kind %q", a.Kind)
	}
	if a.Version != Version {
		t.Fatalf("version %d", a.Version)
	}
	ratio := func(name string, v *float64) {
		if v != nil && !(*v >= 0 && *v <= 1) {
			t.Fatalf("%s = %v, outside 0–1", name, *v)
		}
	}
	nonNeg := func(name string, v *float64) {
		if v != nil && !(*v >= 0 && !math.IsInf(*v, 0)) {
			t.Fatalf("%s = %v, want finite and >= 0", name, *v)
		}
	}
	f := a.Figures
	ratio("score", a.Score)
	ratio("gpu_utilization", f.GPUUtilization)
	ratio("gpu_sm_activity", f.GPUSMActivity)
	ratio("effective_gpu_ratio", f.EffectiveGPURatio)
	ratio("cpu_efficiency", f.CPUEfficiency)
	ratio("memory_efficiency", f.MemoryEfficiency)
	ratio("walltime_efficiency", f.WalltimeEfficiency)
	for name, v := range map[string]*float64{"gpu_hours": f.GPUHours, "gpu_hours_wasted": f.GPUHoursWasted,
		"core_hours": f.CoreHours, "core_hours_wasted": f.CoreHoursWasted, "savings.gpu_hours": a.Savings.GPUHours,
		"savings.core_hours": a.Savings.CoreHours, "savings.memory_gib_hours": a.Savings.MemoryGiBHours} {
		nonNeg(name, v)
	}
	if f.GPUHoursWasted != nil && *f.GPUHoursWasted > *f.GPUHours*(1+1e-9) {
		t.Fatalf("gpu_hours_wasted %v > gpu_hours %v", *f.GPUHoursWasted, *f.GPUHours)
	}
	if f.CoreHoursWasted != nil && *f.CoreHoursWasted > *f.CoreHours*(1+1e-9) {
		t.Fatalf("core_hours_wasted %v > core_hours %v", *f.CoreHoursWasted, *f.CoreHours)
	}
	if a.Class == jobmodel.ClassShort && (len(a.Causes) > 0 || len(a.Recommendation.Changes) > 0) {
		t.Fatalf("short job with causes or changes: %+v", a)
	}
	known := CauseIDs()
	for i, c := range a.Causes {
		if !slices.Contains(known, c.ID) {
			t.Fatalf("unknown cause %q", c.ID)
		}
		if !(c.Confidence >= 0 && c.Confidence <= 1) {
			t.Fatalf("cause %s confidence %v", c.ID, c.Confidence)
		}
		if c.Title == "" || c.Evidence == "" || c.Lesson == "" {
			t.Fatalf("cause %s lacks text: %+v", c.ID, c)
		}
		if i > 0 {
			prev := a.Causes[i-1]
			if prev.Confidence < c.Confidence || (prev.Confidence == c.Confidence && prev.ID > c.ID) {
				t.Fatalf("causes not sorted: %v", ids(a))
			}
		}
	}
	r := a.Recommendation
	for name, v := range map[string]*int64{"gpus": r.GPUs, "cpus": r.CPUs, "memory_bytes": r.MemoryBytes,
		"memory_per_node_bytes": r.MemoryPerNodeBytes, "time_limit_seconds": r.TimeLimitSeconds} {
		if v != nil && *v <= 0 {
			t.Fatalf("recommendation %s = %d", name, *v)
		}
	}
	for _, c := range r.Changes {
		if !strings.HasPrefix(c.From, c.Option+"=") || !strings.HasPrefix(c.To, c.Option+"=") || c.Reason == "" || c.From == c.To {
			t.Fatalf("bad change %+v", c)
		}
	}
	if !slices.IsSorted(a.MissingMetrics) {
		t.Fatalf("missing metrics not sorted: %v", a.MissingMetrics)
	}
	if _, err := json.Marshal(a); err != nil {
		t.Fatalf("analysis does not encode: %v", err)
	}
}

func equalJSON(t testing.TB, a, b any) bool {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(x) == string(y)
}
