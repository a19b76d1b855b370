package jobmodel

import (
	"slices"
	"testing"
	"time"
)

func TestTotalsOfAFinishedJob(t *testing.T) {
	start := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	cpus, gpus, mem, limit := int64(8), int64(2), int64(16*GiB), int64(4*3600)
	avg := int64(4 * GiB)
	j := Job{StartTime: At(start), EndTime: At(start.Add(2 * time.Hour)), Final: true,
		TimeLimitSeconds: &limit,
		Requested:        Request{CPUs: &cpus, GPUs: &gpus, MemoryBytes: &mem},
		Usage: Usage{CPU: &CPUUsage{CoreSeconds: f64(4 * 2 * 3600)},
			GPU:    &GPUUsage{UtilizationAvg: f64(0.25), GPUSeconds: f64(2 * 2 * 3600)},
			Memory: &MemoryUsage{AvgBytes: &avg}}}
	tt := TotalsOf(&j)
	want := map[string]*float64{
		"elapsed": f64(2), "limit": f64(4), "wall unused": f64(2),
		"cores": f64(8), "cores used": f64(4), "core-h": f64(16), "core-h used": f64(8), "core-h unused": f64(8),
		"gpus": f64(2), "gpus used": f64(0.5), "gpu-h": f64(4), "gpu-h used": f64(1), "gpu-h unused": f64(3),
		"mem": f64(16), "mem used": f64(4), "mem-h": f64(32), "mem-h used": f64(8), "mem-h unused": f64(24),
	}
	got := map[string]*float64{
		"elapsed": tt.ElapsedHours, "limit": tt.TimeLimitHours, "wall unused": tt.WalltimeHoursUnused,
		"cores": tt.CoresReserved, "cores used": tt.CoresUsed, "core-h": tt.CoreHoursReserved, "core-h used": tt.CoreHoursUsed, "core-h unused": tt.CoreHoursUnused,
		"gpus": tt.GPUsReserved, "gpus used": tt.GPUsUsed, "gpu-h": tt.GPUHoursReserved, "gpu-h used": tt.GPUHoursUsed, "gpu-h unused": tt.GPUHoursUnused,
		"mem": tt.MemoryGiBReserved, "mem used": tt.MemoryGiBUsed, "mem-h": tt.MemoryGiBHoursReserved, "mem-h used": tt.MemoryGiBHoursUsed, "mem-h unused": tt.MemoryGiBHoursUnused,
	}
	for k, w := range want {
		if got[k] == nil || *got[k] != *w {
			t.Errorf("%s = %v, want %v", k, fval(got[k]), *w)
		}
	}
	if len(tt.Missing) != 0 || tt.Version != TotalsVersion {
		t.Errorf("missing %v version %d", tt.Missing, tt.Version)
	}
}

func TestTotalsNameWhatIsMissingNeverZero(t *testing.T) {
	start := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	cpus, gpus := int64(4), int64(0)
	// CPU use unreadable, no memory request, no limit; no GPUs: 0 used.
	j := Job{StartTime: At(start), EndTime: At(start.Add(time.Hour)), Final: true,
		Requested: Request{CPUs: &cpus, GPUs: &gpus}}
	tt := TotalsOf(&j)
	if tt.CoreHoursUsed != nil || tt.CoreHoursUnused != nil || tt.CoresUsed != nil {
		t.Errorf("CPU use unknown, got used %v unused %v", fval(tt.CoreHoursUsed), fval(tt.CoreHoursUnused))
	}
	if tt.GPUHoursUsed == nil || *tt.GPUHoursUsed != 0 || tt.GPUHoursUnused == nil || *tt.GPUHoursUnused != 0 {
		t.Errorf("a job without GPUs used 0 GPU-hours: %v", fval(tt.GPUHoursUsed))
	}
	for _, m := range []string{FigCoreUsed, FigTimeLimit, FigMemoryReserved, FigMemoryUsed} {
		if !slices.Contains(tt.Missing, m) {
			t.Errorf("missing %v lacks %s", tt.Missing, m)
		}
	}
	if slices.Contains(tt.Missing, FigCoreReserved) || slices.Contains(tt.Missing, FigGPUUsed) {
		t.Errorf("missing %v names a known figure", tt.Missing)
	}
	// Never started: nothing but the held amounts.
	never := TotalsOf(&Job{Final: true, Requested: Request{CPUs: &cpus}})
	if never.ElapsedHours != nil || never.CoreHoursReserved != nil || !slices.Contains(never.Missing, FigElapsed) {
		t.Errorf("a job that never started: %+v", never)
	}
	// Used more than reserved: nothing unused, not a negative waste.
	over := Job{StartTime: At(start), EndTime: At(start.Add(time.Hour)), Final: true,
		Requested: Request{CPUs: &cpus}, Usage: Usage{CPU: &CPUUsage{CoreSeconds: f64(6 * 3600)}}}
	if u := TotalsOf(&over).CoreHoursUnused; u == nil || *u != 0 {
		t.Errorf("over-use: unused %v, want 0", fval(u))
	}
}

func fval(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
