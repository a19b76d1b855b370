package jobmodel

import (
	"math"
	"strings"
	"time"
)

// TotalsVersion is the version of the Totals computation; it changes when
// a figure would be computed differently.
const TotalsVersion = 1

// Totals are a finished job's reserved and used amounts, computed once
// when its final document is written (field "totals"). Grouped panels
// over months of history sum them with Elasticsearch aggregations instead
// of reading every document. Hours are resource-hours over the job's run
// (memory in GiB-hours); the "mean" figures are the amounts held or used
// on average over the run (cores, GPUs, GiB), the rate at which the hours
// accrue, so that usage over time can be summed from where jobs start and
// end. A figure that could not be computed is absent and named in
// Missing: aggregates count it as missing, never as 0.
type Totals struct {
	Version        int      `json:"version"`
	ElapsedHours   *float64 `json:"elapsed_hours,omitempty"`
	TimeLimitHours *float64 `json:"time_limit_hours,omitempty"`
	// WalltimeHoursUnused is the time limit not used (never negative).
	WalltimeHoursUnused *float64 `json:"walltime_hours_unused,omitempty"`

	CoresReserved     *float64 `json:"cores_reserved,omitempty"`
	CoresUsed         *float64 `json:"cores_used,omitempty"`
	CoreHoursReserved *float64 `json:"core_hours_reserved,omitempty"`
	CoreHoursUsed     *float64 `json:"core_hours_used,omitempty"`
	// CoreHoursUnused is reserved minus used, never negative (a job that
	// used more than it reserved wasted nothing); absent when either is.
	CoreHoursUnused *float64 `json:"core_hours_unused,omitempty"`

	GPUsReserved     *float64 `json:"gpus_reserved,omitempty"`
	GPUsUsed         *float64 `json:"gpus_used,omitempty"`
	GPUHoursReserved *float64 `json:"gpu_hours_reserved,omitempty"`
	GPUHoursUsed     *float64 `json:"gpu_hours_used,omitempty"`
	GPUHoursUnused   *float64 `json:"gpu_hours_unused,omitempty"`

	MemoryGiBReserved      *float64 `json:"memory_gib_reserved,omitempty"`
	MemoryGiBUsed          *float64 `json:"memory_gib_used,omitempty"`
	MemoryGiBHoursReserved *float64 `json:"memory_gib_hours_reserved,omitempty"`
	MemoryGiBHoursUsed     *float64 `json:"memory_gib_hours_used,omitempty"`
	MemoryGiBHoursUnused   *float64 `json:"memory_gib_hours_unused,omitempty"`

	// StartWeighted are the mean amounts above, each times the job's start
	// in hours since TotalsEpoch: with them, date histograms of where jobs
	// start and end give usage over time exactly (the plugin's levels).
	StartWeighted *StartWeighted `json:"start_weighted,omitempty"`

	// Missing names the figures above that could not be computed
	// (TotalsFigures), so that an aggregation can count the jobs lacking
	// each one.
	Missing []string `json:"missing,omitempty"`
	// MissingSet is Missing joined by commas, one value: terms
	// aggregations count the jobs by it (a server may count only the
	// first value of a list), "" when nothing is missing.
	MissingSet string `json:"missing_set"`
}

// StartWeighted are a job's mean amounts times its start (hours since
// TotalsEpoch); a nil amount stays nil.
type StartWeighted struct {
	CoresReserved     *float64 `json:"cores_reserved,omitempty"`
	CoresUsed         *float64 `json:"cores_used,omitempty"`
	GPUsReserved      *float64 `json:"gpus_reserved,omitempty"`
	GPUsUsed          *float64 `json:"gpus_used,omitempty"`
	MemoryGiBReserved *float64 `json:"memory_gib_reserved,omitempty"`
	MemoryGiBUsed     *float64 `json:"memory_gib_used,omitempty"`
}

// TotalsEpoch is the origin of StartWeighted's times.
var TotalsEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// The figures Totals.Missing may name: each reserved and used amount.
const (
	FigElapsed        = "elapsed_hours"
	FigTimeLimit      = "time_limit_hours"
	FigCoreReserved   = "core_hours_reserved"
	FigCoreUsed       = "core_hours_used"
	FigGPUReserved    = "gpu_hours_reserved"
	FigGPUUsed        = "gpu_hours_used"
	FigMemoryReserved = "memory_gib_hours_reserved"
	FigMemoryUsed     = "memory_gib_hours_used"
)

// TotalsFigures lists the figures Totals.Missing may name.
var TotalsFigures = []string{FigElapsed, FigTimeLimit, FigCoreReserved, FigCoreUsed,
	FigGPUReserved, FigGPUUsed, FigMemoryReserved, FigMemoryUsed}

// GiB is 2^30 bytes: memory figures are in GiB and GiB-hours.
const GiB = 1 << 30

// Amounts are one job's reserved and used amounts at a moment: for a
// finished job its whole run, for a running job its run so far (the used
// amounts then come from its live series). A figure that is unknown is
// nil.
type Amounts struct {
	ElapsedH, LimitH   *float64
	CPUs, GPUs, MemGiB *float64 // held (requested) amounts
	CPUResH, CPUUsedH  *float64
	GPUResH, GPUUsedH  *float64
	MemResH, MemUsedH  *float64
}

// AmountsOf computes a job's amounts from its document; elapsedH is its
// run so far (hours), or nil when it never started.
func AmountsOf(j *Job, elapsedH *float64) Amounts {
	var a Amounts
	if j.TimeLimitSeconds != nil {
		a.LimitH = f64(float64(*j.TimeLimitSeconds) / 3600)
	}
	r := j.Requested
	if r.CPUs != nil {
		a.CPUs = f64(float64(*r.CPUs))
	}
	if r.GPUs != nil {
		a.GPUs = f64(float64(*r.GPUs))
	} else if j.GPU != nil && j.GPU.Held != nil {
		a.GPUs = f64(float64(*j.GPU.Held))
	}
	if r.MemoryBytes != nil {
		a.MemGiB = f64(float64(*r.MemoryBytes) / GiB)
	}
	if elapsedH == nil {
		return a
	}
	el := *elapsedH
	a.ElapsedH = f64(el)
	mul := func(v *float64) *float64 {
		if v == nil {
			return nil
		}
		return f64(*v * el)
	}
	a.CPUResH, a.GPUResH, a.MemResH = mul(a.CPUs), mul(a.GPUs), mul(a.MemGiB)
	if j.CPU != nil && j.CPU.CoreSeconds != nil {
		a.CPUUsedH = f64(*j.CPU.CoreSeconds / 3600)
	}
	if j.GPU != nil && j.GPU.UtilizationAvg != nil && j.GPU.GPUSeconds != nil {
		a.GPUUsedH = f64(*j.GPU.UtilizationAvg * *j.GPU.GPUSeconds / 3600)
	} else if a.GPUs != nil && *a.GPUs == 0 {
		a.GPUUsedH = f64(0)
	}
	if j.Memory != nil && j.Memory.AvgBytes != nil {
		a.MemUsedH = f64(float64(*j.Memory.AvgBytes) / GiB * el)
	}
	return a
}

// FinalElapsedHours is a finished job's run in hours: its stored elapsed
// time, else end minus start; nil when it never started.
func FinalElapsedHours(j *Job) *float64 {
	if j.StartTime == nil {
		return nil
	}
	if j.ElapsedSeconds != nil {
		return f64(math.Max(*j.ElapsedSeconds/3600, 0))
	}
	if j.EndTime == nil {
		return nil
	}
	return f64(math.Max(j.EndTime.Sub(j.StartTime.Time).Hours(), 0))
}

// TotalsOf computes a finished job's Totals from its final document.
func TotalsOf(j *Job) *Totals {
	a := AmountsOf(j, FinalElapsedHours(j))
	t := &Totals{Version: TotalsVersion, ElapsedHours: a.ElapsedH, TimeLimitHours: a.LimitH,
		CoresReserved: a.CPUs, GPUsReserved: a.GPUs, MemoryGiBReserved: a.MemGiB,
		CoreHoursReserved: a.CPUResH, CoreHoursUsed: a.CPUUsedH,
		GPUHoursReserved: a.GPUResH, GPUHoursUsed: a.GPUUsedH,
		MemoryGiBHoursReserved: a.MemResH, MemoryGiBHoursUsed: a.MemUsedH}
	t.WalltimeHoursUnused = Unused(a.LimitH, a.ElapsedH)
	t.CoreHoursUnused = Unused(a.CPUResH, a.CPUUsedH)
	t.GPUHoursUnused = Unused(a.GPUResH, a.GPUUsedH)
	t.MemoryGiBHoursUnused = Unused(a.MemResH, a.MemUsedH)
	if el := a.ElapsedH; el != nil && *el > 0 {
		rate := func(h *float64) *float64 {
			if h == nil {
				return nil
			}
			return f64(*h / *el)
		}
		t.CoresUsed, t.GPUsUsed, t.MemoryGiBUsed = rate(a.CPUUsedH), rate(a.GPUUsedH), rate(a.MemUsedH)
	} else if el != nil {
		// A job that ran for no time used nothing of what it held.
		zeroIf := func(h *float64) *float64 {
			if h == nil {
				return nil
			}
			return f64(0)
		}
		t.CoresUsed, t.GPUsUsed, t.MemoryGiBUsed = zeroIf(a.CPUUsedH), zeroIf(a.GPUUsedH), zeroIf(a.MemUsedH)
	}
	if j.StartTime != nil {
		sh := j.StartTime.Sub(TotalsEpoch).Hours()
		w := func(v *float64) *float64 {
			if v == nil {
				return nil
			}
			return f64(*v * sh)
		}
		t.StartWeighted = &StartWeighted{CoresReserved: w(t.CoresReserved), CoresUsed: w(t.CoresUsed),
			GPUsReserved: w(t.GPUsReserved), GPUsUsed: w(t.GPUsUsed),
			MemoryGiBReserved: w(t.MemoryGiBReserved), MemoryGiBUsed: w(t.MemoryGiBUsed)}
	}
	for _, m := range []struct {
		name string
		v    *float64
	}{{FigElapsed, a.ElapsedH}, {FigTimeLimit, a.LimitH}, {FigCoreReserved, a.CPUResH}, {FigCoreUsed, a.CPUUsedH},
		{FigGPUReserved, a.GPUResH}, {FigGPUUsed, a.GPUUsedH}, {FigMemoryReserved, a.MemResH}, {FigMemoryUsed, a.MemUsedH}} {
		if m.v == nil {
			t.Missing = append(t.Missing, m.name)
		}
	}
	t.MissingSet = strings.Join(t.Missing, ",")
	return t
}

// Unused is reserved minus used, at least 0 (a job that used more than
// it reserved wasted nothing); nil when either is unknown.
func Unused(reserved, used *float64) *float64 {
	if reserved == nil || used == nil {
		return nil
	}
	return f64(math.Max(*reserved-*used, 0))
}

func f64(v float64) *float64 { return &v }
