package analysis

import "github.com/jobsight/jobsight/internal/jobmodel"

// Need is the request that would have served one finished job, by the
// recommendation's own rules (headroom, rounding, floors), whether or not
// the job asked for more; and what each figure is computed from. A field
// is nil where the job's document cannot tell. `jobsight advise` takes the
// largest need over a user's comparable jobs.
type Need struct {
	// MemoryPerNodeBytes is the peak per node with headroom, rounded up;
	// MemoryPeakPerNodeBytes that peak; MemoryRequestedPerNodeBytes the
	// request per node.
	MemoryPerNodeBytes          *int64
	MemoryPeakPerNodeBytes      *float64
	MemoryRequestedPerNodeBytes *int64
	// CPUs is the CPUs used (95th percentile of sampled cores) with
	// headroom, rounded up, at least 1; CPUsUsed those cores; CPUsRequested
	// the job's CPUs.
	CPUs          *int64
	CPUsUsed      *float64
	CPUsRequested *int64
	// GPUs is the GPUs that did work, nil when none did (or it is not
	// known); GPUsRequested the job's GPUs (nil for a job without GPUs).
	GPUs          *int64
	GPUsRequested *int64
	// TimeLimitSeconds is the run time with headroom, rounded up to the
	// time step; ElapsedSeconds the run time; TimeLimitRequestedSeconds
	// the job's limit.
	TimeLimitSeconds          *int64
	ElapsedSeconds            *float64
	TimeLimitRequestedSeconds *int64
}

// Needs is what job needed (see Need). cfg should be valid.
func Needs(job jobmodel.Job, cfg Config) Need {
	f := newFacts(&job, &cfg, nil)
	var n Need
	if rec, from, peak, ok := f.memNeed(); ok {
		n.MemoryPerNodeBytes, n.MemoryPeakPerNodeBytes, n.MemoryRequestedPerNodeBytes = ptr(rec), ptr(peak), ptr(from)
	}
	if rec, used, ok := f.cpuNeed(); ok {
		n.CPUs, n.CPUsUsed = ptr(rec), ptr(used)
	}
	if f.hasCPUs {
		n.CPUsRequested = ptr(f.cpus)
	}
	if f.kind == jobmodel.KindGPU && f.hasGPUs {
		n.GPUsRequested = ptr(f.gpus)
		if w, _, _, ok := f.working(); ok && w >= 1 {
			n.GPUs = ptr(w)
		}
	}
	if rec, ok := f.timeNeed(); ok {
		n.TimeLimitSeconds, n.ElapsedSeconds = ptr(rec), ptr(f.elapsed)
	}
	if v, ok := okI(job.TimeLimitSeconds); ok && v > 0 {
		n.TimeLimitRequestedSeconds = ptr(v)
	}
	return n
}

// The report's formats, for other packages that word figures the same
// way (`jobsight advise`).

// SlurmMem is a size as Slurm's --mem takes it ("8G", "1536M").
func SlurmMem(b int64) string { return slurmMem(b) }

// SlurmTime is a time limit as Slurm's --time takes it.
func SlurmTime(sec int64) string { return slurmTime(sec) }

// Size is a size for people ("5.6 GiB", "512 MiB").
func Size(b float64) string { return size(b) }

// Percent is a 0–1 share for people ("9.0%", "42%").
func Percent(v float64) string { return pct(v) }

// Cores is a number of cores for people ("1 core", "3.1 cores").
func Cores(v float64) string { return cores(v) }

// Duration is a length of time for people ("45s", "1h05m").
func Duration(sec float64) string { return duration(sec) }
