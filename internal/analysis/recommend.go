package analysis

import (
	"fmt"
	"math"
	"strconv"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/textfmt"
)

// maxBytes bounds sizes computed in floating point before they become
// int64 (1 EiB, far above any node, far below int64's limit).
const maxBytes = float64(1 << 60)

// niceMiB rounds a size in MiB up to the next value of the form 2^k or
// 1.5 × 2^k MiB (…, 256M, 384M, 512M, 768M, 1G, 1.5G, 2G, 3G, 4G, 6G, …).
func niceMiB(v float64) int64 {
	if !(v > 1) {
		return 1
	}
	for p := int64(1); p <= 1<<52; p *= 2 {
		if float64(p) >= v {
			return p
		}
		if p >= 2 && float64(p+p/2) >= v {
			return p + p/2
		}
	}
	return int64(math.Ceil(v))
}

// memNeed is the right-sized memory per node: the peak per node × the
// headroom, rounded up to a nice size, at least the floor, whether or not
// it is below the request. It also returns the per-node request it would
// replace and the per-node peak it is computed from.
func (f *facts) memNeed() (rec, from int64, peak float64, ok bool) {
	if !f.hasMemEff {
		return 0, 0, 0, false
	}
	peak, req := f.memPeak, f.memReq
	if !f.memPerNode() {
		peak, req = peak/float64(f.nodes), req/float64(f.nodes)
	}
	if v, ok := okI(f.job.Requested.MemoryPerNodeBytes); ok && v > 0 {
		req = float64(v)
	}
	c := f.cfg.Recommend
	want := peak * c.MemoryHeadroom
	if !(want < maxBytes) || !(req < maxBytes) {
		return 0, 0, 0, false
	}
	recMiB := max(niceMiB(want/mib), int64(math.Ceil(c.MinMemoryGiB*1024)))
	return recMiB << 20, int64(req), peak, true
}

// memRec is memNeed where it is below the request.
func (f *facts) memRec() (rec, from int64, ok bool) {
	rec, from, _, ok = f.memNeed()
	return rec, from, ok && rec < from
}

// timeNeed is the right-sized time limit: elapsed × the headroom, rounded
// up to the time step, at least the floor.
func (f *facts) timeNeed() (int64, bool) {
	if !f.hasElapsed {
		return 0, false
	}
	c := f.cfg.Recommend
	step := c.TimeStep.Seconds()
	if !(step > 0) {
		step = 60
	}
	want := f.elapsed * c.TimeHeadroom
	recF := max(math.Ceil(want/step-1e-9)*step, c.MinTime.Seconds())
	if !(recF < maxBytes) {
		return 0, false
	}
	return int64(recF), true
}

// timeRec is timeNeed where it is below the job's limit.
func (f *facts) timeRec() (int64, bool) {
	limit, ok := okI(f.job.TimeLimitSeconds)
	if !ok || limit <= 0 {
		return 0, false
	}
	rec, ok := f.timeNeed()
	return rec, ok && rec < limit
}

// cpuNeed is the right-sized CPU count (total over the job): the 95th
// percentile of sampled cores (else the peak, else the average) × the
// headroom, less the slack, rounded up, at least 1; and the cores used it
// is computed from.
func (f *facts) cpuNeed() (rec int64, used float64, ok bool) {
	if f.job.CPU == nil {
		return 0, 0, false
	}
	c := f.job.CPU
	var base float64
	if v, ok := okF(c.P95Cores); ok {
		base = v
	} else if v, ok := okF(c.PeakCores); ok {
		base = v
	} else if v, ok := okF(c.AvgCores); ok {
		base = v
	} else {
		return 0, 0, false
	}
	want := math.Ceil(base*f.cfg.Recommend.CPUHeadroom - f.cfg.Recommend.CPUSlack)
	if !(want < maxBytes) {
		return 0, 0, false
	}
	return max(1, int64(want)), base, true
}

// cpuRec is cpuNeed where it is below the job's CPUs.
func (f *facts) cpuRec() (rec int64, used float64, ok bool) {
	if !f.hasCPUs {
		return 0, 0, false
	}
	rec, used, ok = f.cpuNeed()
	return rec, used, ok && rec < f.cpus
}

// recommend turns the causes into a right-sized request, its #SBATCH
// changes and what it would have freed. A resource is changed only when a
// cause about it fired, and only downwards.
func recommend(f *facts, causes []jobmodel.Cause) (jobmodel.Recommendation, jobmodel.Savings) {
	fired := map[string]bool{}
	for _, c := range causes {
		fired[c.ID] = true
	}
	var r jobmodel.Recommendation
	var s jobmodel.Savings
	hours := f.elapsed / 3600

	// GPUs: the GPUs that did work.
	if f.kind == jobmodel.KindGPU && f.hasGPUs {
		freed := int64(0)
		if fired[CauseGPUsHeldIdle] || fired[CauseParallelismMismatch] {
			target := int64(0)
			n, _, bySM, ok := f.working()
			if ok {
				target = n
			} else if n := int64(len(f.idle())); len(f.devs) > 0 {
				target = f.gpus - n
			} else if f.hasSummaryIdle {
				target = f.gpus - f.summaryIdle
			}
			from := f.gpus
			if v, ok := okI(f.job.Requested.GPUs); ok && v > 0 {
				from = v
			}
			if target >= 1 && target < from {
				r.GPUs = ptr(target)
				freed = from - target
				reason := fmt.Sprintf("%d of %s did work (over %s average utilisation)",
					target, textfmt.Plural(from, "GPU"), pct(f.cfg.EffectiveGPUThreshold))
				if bySM {
					reason = fmt.Sprintf("%d of %s did work (over %s average SM activity)",
						target, textfmt.Plural(from, "GPU"), pct(f.smWorkThr))
				}
				if !ok {
					reason = fmt.Sprintf("%d of %s had a process of the job", target, textfmt.Plural(from, "GPU"))
				}
				idle := int64(len(f.idle()))
				if len(f.devs) == 0 && f.hasSummaryIdle {
					idle = f.summaryIdle
				}
				if idle > 0 {
					reason += fmt.Sprintf("; %s never had a process of the job", textfmt.Plural(idle, "GPU"))
				}
				r.Changes = append(r.Changes, change("--gpus", strconv.FormatInt(from, 10), strconv.FormatInt(target, 10), reason))
			}
		}
		s.GPUHours = finite(float64(freed) * hours)
	}

	// CPUs: what the job used, with headroom.
	if f.hasCPUs {
		freed := int64(0)
		if fired[CauseSerialJobManyCores] || fired[CauseCPUOverrequest] || fired[CauseTooManyCoresPerGPU] {
			if rec, used, ok := f.cpuRec(); ok {
				if ch, total, ok := f.cpuChange(rec, used); ok {
					r.CPUs = ptr(total)
					freed = f.cpus - total
					r.Changes = append(r.Changes, ch)
				}
			}
		}
		s.CoreHours = finite(float64(freed) * hours)
	}

	// Memory: the peak per node, with headroom.
	if f.hasMemReqTotal {
		freed := 0.0
		if fired[CauseMemoryOverrequest] || fired[CauseTooMuchMemoryPerGPU] {
			if rec, from, ok := f.memRec(); ok && float64(rec)*float64(f.nodes) < maxBytes {
				r.MemoryPerNodeBytes = ptr(rec)
				r.MemoryBytes = ptr(rec * f.nodes)
				freed = max(0, f.memReqTotal-float64(rec)*float64(f.nodes))
				peakPerNode, where := f.memPeak, "the fullest node peaked at"
				if !f.memPerNode() {
					peakPerNode /= float64(f.nodes)
					where = "the job peaked at"
					if f.nodes > 1 {
						where = "the job peaked at (total shared evenly over its nodes)"
					}
				}
				reason := fmt.Sprintf("%s %s of the %s requested per node; %s is that peak plus %s headroom, rounded up (and at least %s)",
					where, size(peakPerNode), slurmMem(from), slurmMem(rec),
					pct(f.cfg.Recommend.MemoryHeadroom-1), slurmMem(int64(f.cfg.Recommend.MinMemoryGiB*gib)))
				r.Changes = append(r.Changes, change("--mem", slurmMem(from), slurmMem(rec), reason))
			}
		}
		s.MemoryGiBHours = finite(freed / gib * hours)
	}

	// Time limit: elapsed with headroom. It frees nothing once the job
	// has ended, so it has no savings; it helps scheduling.
	if fired[CauseWalltimeOverrequest] {
		if rec, ok := f.timeRec(); ok {
			limit := *f.job.TimeLimitSeconds
			r.TimeLimitSeconds = ptr(rec)
			reason := fmt.Sprintf("the job ran %s of its %s limit; %s is %s× the run time rounded up to %s (at least %s)",
				duration(f.elapsed), duration(float64(limit)), slurmTime(rec), num(f.cfg.Recommend.TimeHeadroom),
				duration(f.cfg.Recommend.TimeStep.Seconds()), duration(f.cfg.Recommend.MinTime.Seconds()))
			r.Changes = append(r.Changes, change("--time", slurmTime(limit), slurmTime(rec), reason))
		}
	}
	return r, s
}

// cpuChange renders a CPU recommendation (total rec) as an option change:
// --cpus-per-task when the job's CPUs divide evenly over its tasks and
// there is more than one per task, else --ntasks for one-CPU tasks. A job
// with no task count is taken as one task when it ran on one node; on
// several nodes the change is not rendered.
func (f *facts) cpuChange(rec int64, used float64) (jobmodel.SbatchChange, int64, bool) {
	tasks, ok := okI(f.job.Requested.Tasks)
	if !ok || tasks < 1 {
		if f.nodes > 1 {
			return jobmodel.SbatchChange{}, 0, false
		}
		tasks = 1
	}
	if f.cpus%tasks != 0 {
		return jobmodel.SbatchChange{}, 0, false
	}
	usedText := fmt.Sprintf("the job used %s (95th percentile of samples) of %s", cores(used), textfmt.Plural(f.cpus, "CPU"))
	if f.job.CPU.P95Cores == nil {
		usedText = fmt.Sprintf("the job used %s of %s", cores(used), textfmt.Plural(f.cpus, "CPU"))
	}
	perTask := f.cpus / tasks
	if perTask > 1 {
		recPer := max(1, (rec-1)/tasks+1)
		if recPer >= perTask {
			return jobmodel.SbatchChange{}, 0, false
		}
		reason := fmt.Sprintf("%s; %s per task covers that, with %s headroom", usedText, textfmt.Plural(recPer, "CPU"), pct(f.cfg.Recommend.CPUHeadroom-1))
		return change("--cpus-per-task", strconv.FormatInt(perTask, 10), strconv.FormatInt(recPer, 10), reason), recPer * tasks, true
	}
	if rec >= tasks {
		return jobmodel.SbatchChange{}, 0, false
	}
	reason := fmt.Sprintf("%s, one per task; %s cover that, with %s headroom", usedText, textfmt.Plural(rec, "task"), pct(f.cfg.Recommend.CPUHeadroom-1))
	return change("--ntasks", strconv.FormatInt(tasks, 10), strconv.FormatInt(rec, 10), reason), rec, true
}

// change makes an #SBATCH change: option "--mem", values "8G" and "1G".
func change(option, from, to, reason string) jobmodel.SbatchChange {
	return jobmodel.SbatchChange{Option: option, From: option + "=" + from, To: option + "=" + to, Reason: reason}
}
