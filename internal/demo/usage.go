package demo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// Shares of finished jobs that lack a figure, as real agents sometimes
// do: the field is absent and named in missing_metrics.
const (
	missingMemoryShare = 0.03  // no memory reading
	missingCPUShare    = 0.01  // no CPU reading
	missingGPUShare    = 0.025 // GPU utilisation unreadable (of GPU jobs)
)

// activeThreshold is the utilisation above which a GPU counts as active
// (the agent's gpu.active_threshold default).
const activeThreshold = 0.05

// Shape is a job's usage over its run, as a fraction of its mean level at
// a point 0–1 of the run: a short ramp-up at the start and, for a job
// whose GPU use drops, a fall to almost nothing after 55 % of the run.
// The documents' averages and timeline and the series follow it.
func Shape(frac float64, drops bool) float64 {
	v := 1.0
	if frac < 0.03 {
		v = 0.35 + 0.65*frac/0.03
	}
	if drops && frac > 0.55 {
		v = 0.03
	}
	return v
}

// meanShape is Shape's mean over a run.
func meanShape(drops bool) float64 {
	const n = 200
	var s float64
	for i := range n {
		s += Shape((float64(i)+0.5)/n, drops)
	}
	return s / n
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

// fillUsage writes a finished job's usage summaries, as an agent sums
// them at job end.
func fillUsage(r *rand.Rand, j *jobmodel.Job, skill float64) {
	sec := *j.ElapsedSeconds
	cpus := float64(*j.Requested.CPUs)
	nodes := float64(j.NodeCount)
	gpus := *j.Requested.GPUs
	var missing []string

	// CPU.
	var cpuEff float64
	switch x := r.Float64(); {
	case gpus > 0:
		cpuEff = clamp(0.06+0.4*r.Float64()+0.2*skill, 0.01, 0.95)
	case x < 0.05: // stuck, waiting, or sleeping
		cpuEff = 0.002 + 0.04*r.Float64()
	case x < 0.17 && cpus >= 4: // a serial program on many cores
		cpuEff = (1 + 0.3*r.Float64()) / cpus
	default:
		cpuEff = clamp(0.5+0.48*math.Sqrt(r.Float64())+skill, 0.03, 0.995)
	}
	if r.Float64() < missingCPUShare {
		missing = append(missing, "cpu")
	} else {
		coreS := cpuEff * cpus * sec
		j.CPU = &jobmodel.CPUUsage{
			CoreSeconds: jobmodel.Ptr(round3(coreS)), AvgCores: jobmodel.Ptr(round3(cpuEff * cpus)),
			P95Cores:      jobmodel.Ptr(round3(math.Min(cpus, 1.15*cpuEff*cpus))),
			PeakCores:     jobmodel.Ptr(round3(math.Min(cpus, 1.4*cpuEff*cpus+0.2))),
			ActiveSeconds: jobmodel.Ptr(math.Round(sec * clamp(cpuEff*3, 0.05, 1))),
			Efficiency:    jobmodel.Ptr(round3(cpuEff)),
		}
	}

	// Memory: the fullest node's peak working set as a share of its
	// request, log-uniform from 4 % to 90 % (most jobs ask too much).
	reqNode := float64(*j.Requested.MemoryPerNodeBytes)
	frac := clamp(0.04*math.Exp(r.Float64()*math.Log(0.9/0.04))*math.Exp(skill), 0.01, 0.95)
	oom := j.State == jobmodel.StateOutOfMemory
	if oom {
		frac = 1
	}
	if r.Float64() < missingMemoryShare && !oom {
		missing = append(missing, "memory")
	} else {
		peakNode := int64(frac * reqNode)
		peak := int64(float64(peakNode) * nodes * (0.85 + 0.15*r.Float64()))
		peak = max(peak, peakNode)
		avg := peak * 9 / 10
		j.Memory = &jobmodel.MemoryUsage{
			AvgBytes: jobmodel.Ptr(avg), P95Bytes: jobmodel.Ptr(peak * 97 / 100), PeakBytes: jobmodel.Ptr(peak),
			RSSAvgBytes: jobmodel.Ptr(avg * 8 / 10), RSSPeakBytes: jobmodel.Ptr(peak * 85 / 100),
			WorkingSetAvgBytes: jobmodel.Ptr(avg * 95 / 100), WorkingSetP95Bytes: jobmodel.Ptr(peak * 96 / 100),
			WorkingSetPeakBytes: jobmodel.Ptr(peak * 97 / 100),
			LimitBytes:          jobmodel.Ptr(int64(reqNode * nodes)),
			MaxNodePeakBytes:    jobmodel.Ptr(peakNode), MaxNodeWorkingSetPeakBytes: jobmodel.Ptr(peakNode * 97 / 100),
			Efficiency:    jobmodel.Ptr(round3(float64(peakNode*97/100) / reqNode)),
			PeakFromLimit: oom,
		}
		if oom {
			j.Memory.MaxNodeWorkingSetPeakBytes = jobmodel.Ptr(peakNode)
			j.Memory.Efficiency = jobmodel.Ptr(1.0)
		}
	}

	ioScale := 2e6 * cpuEff * cpus
	j.IO = &jobmodel.IOUsage{ReadBytes: jobmodel.Ptr(int64(ioScale * sec * r.Float64())), WrittenBytes: jobmodel.Ptr(int64(ioScale * sec * 0.2 * r.Float64()))}
	procs := math.Ceil(cpus/nodes) + 1
	j.Processes = &jobmodel.CountUsage{Avg: jobmodel.Ptr(procs * nodes * 0.9), Peak: jobmodel.Ptr(int64(procs * nodes))}
	j.Threads = &jobmodel.CountUsage{Avg: jobmodel.Ptr(procs * nodes * 2.5), Peak: jobmodel.Ptr(int64(procs*nodes*3) + 4)}

	if gpus > 0 {
		missing = append(missing, fillGPUs(r, j, skill, sec)...)
	}
	j.MissingMetrics = fillPressure(j, cpuEff, frac, missing)
}

// noPressureShare is the share of generated jobs that ran where pressure
// stalls and OOM kills cannot be read (the demo site's nodes run cgroup
// v2; a few run a kernel without PSI): their figures are absent and named
// missing.
const noPressureShare = 0.02

// fillPressure writes the pressure stall figures and OOM kills of a job
// that ran on a cgroup v2 node, as the agents assemble them (stall and
// watched seconds summed over nodes, the ratio their quotient), and
// returns missing with the names of what the others lack. Most jobs stall
// little; some wait on storage, some stall at their memory limit, a few
// run more threads than CPUs, and a job killed for memory or near its
// limit may have lost a process. The figures come from the job's id, not
// the generator's random source, so every other figure stays as it was.
func fillPressure(j *jobmodel.Job, cpuEff, memFrac float64, missing []string) []string {
	if unit(j.DocID+"psi") < noPressureShare {
		return append(missing, "cpu_pressure", "io_pressure", "memory_pressure", "oom_kills")
	}
	u := func(k string) float64 { return unit(j.DocID + k) }
	oom := j.State == jobmodel.StateOutOfMemory
	cpuSome := 0.002 + 0.03*u("cpu")
	if u("oversub") < 0.05 && cpuEff > 0.6 { // a threaded library on all the node's cores
		cpuSome = 0.3 + 0.5*u("cpu2")
	}
	ioSome := 0.005 + 0.08*u("io")
	if u("iobound") < 0.08 { // waiting on the shared file system
		ioSome = 0.25 + 0.45*u("io2")
	}
	memSome := 0.002 * u("mem")
	switch {
	case oom:
		memSome = 0.3 + 0.4*u("mem2")
	case memFrac > 0.85:
		memSome = 0.05 + 0.25*u("mem2")
	}
	nodes := float64(max(j.NodeCount, 1))
	watched := math.Round(*j.ElapsedSeconds * nodes * 0.995)
	p := &jobmodel.PressureUsage{WatchedSeconds: jobmodel.Ptr(watched)}
	ratios := [len(jobmodel.PressureFamilies)]float64{cpuSome, memSome, memSome * 0.3, ioSome, ioSome * 0.25}
	for i, f := range p.Families() {
		secs := math.Round(ratios[i] * watched)
		*f.Seconds, *f.Ratio = jobmodel.Ptr(secs), jobmodel.Ptr(round3(secs/watched))
		*f.PeakRatio = jobmodel.Ptr(round3(math.Min(1, ratios[i]*(1.3+u("peak"))+0.02)))
		if nodes > 1 {
			*f.MaxNodeRatio = jobmodel.Ptr(round3(math.Min(1, ratios[i]*(1+0.3*u("node")))))
		}
	}
	j.Pressure = p
	if j.Memory == nil {
		return append(missing, "oom_kills")
	}
	kills := int64(0)
	switch {
	case oom:
		kills = 1
	case memFrac > 0.8 && u("child") < 0.15: // a worker killed, the job went on
		kills = 1 + int64(2*u("kills"))
	}
	j.Memory.OOMKills = jobmodel.Ptr(kills)
	return missing
}

// fillGPUs writes the GPU summary and the per-GPU entries; it returns the
// document-level missing metrics.
func fillGPUs(r *rand.Rand, j *jobmodel.Job, skill, sec float64) []string {
	gpus := *j.Requested.GPUs
	perNode := (gpus + int64(j.NodeCount) - 1) / int64(j.NodeCount)
	h100 := j.Partition == "gpu-h100"
	model, idleW, busyW := "NVIDIA A100-SXM4-80GB", 60.0, 340.0
	if h100 {
		model, idleW, busyW = "NVIDIA H100 80GB HBM3", 80.0, 580.0
	}
	const memTotal = int64(80) << 30
	// The job's level: efficient, acceptable, inefficient or wasted
	// training, shifted by the user's skill.
	var base float64
	switch x := r.Float64(); {
	case x < 0.42:
		base = 0.75 + 0.22*r.Float64()
	case x < 0.70:
		base = 0.45 + 0.3*r.Float64()
	case x < 0.90:
		base = 0.12 + 0.33*r.Float64()
	default:
		base = 0.005 + 0.1*r.Float64()
	}
	base = clamp(base+0.3*skill, 0.002, 0.98)
	onlyFirst := gpus > 1 && r.Float64() < 0.12 // holds several GPUs, uses one
	drops := r.Float64() < 0.06
	unreadable := r.Float64() < missingGPUShare
	ms := meanShape(drops)
	// What the kernels do (H100: GPM), from the job's id.
	work := gpuWorkOf(j.DocID, base)
	var acts []*jobmodel.GPUActivity

	var sumU, activeS, energy float64
	var effective, heldIdle, memPeak int64
	for g := int64(0); g < gpus; g++ {
		b := clamp(base+0.05*r.NormFloat64(), 0.001, 1)
		idle := onlyFirst && g > 0
		if idle {
			b = 0
		}
		u := b * ms
		power := idleW + busyW*u
		d := jobmodel.GPUDevice{
			Node: j.Nodes[g/perNode], Index: g % perNode, Model: model, Vendor: "nvidia",
			UUID:     fmt.Sprintf("GPU-%08x-%04x-%04x", j.SlurmJobID&0xffffffff, g, (j.SlurmJobID>>32)&0xffff),
			PCIBusID: fmt.Sprintf("00000000:%02X:00.0", 0x07+8*(g%perNode)),
			Held:     true, HeldIdle: idle,
			MemoryTotalBytes: jobmodel.Ptr(memTotal),
			PowerAvgWatts:    jobmodel.Ptr(round3(power)), PowerPeakWatts: jobmodel.Ptr(round3(math.Min(idleW+busyW, power*1.3))),
			EnergyJoules:           jobmodel.Ptr(math.Round(power * sec)),
			TemperaturePeakCelsius: jobmodel.Ptr(math.Round(35 + 45*b)),
		}
		if !idle {
			d.ProcessSeconds = jobmodel.Ptr(sec)
			mem := int64(float64(memTotal) * clamp(0.1+0.8*b+0.05*r.NormFloat64(), 0.02, 0.98))
			d.MemoryAvgBytes, d.MemoryPeakBytes, d.JobMemoryPeakBytes = jobmodel.Ptr(mem*9/10), jobmodel.Ptr(mem), jobmodel.Ptr(mem)
			memPeak = max(memPeak, mem)
		} else {
			d.MemoryAvgBytes, d.MemoryPeakBytes = jobmodel.Ptr(int64(0)), jobmodel.Ptr(int64(0))
			heldIdle++
		}
		switch {
		case unreadable:
			d.MissingMetrics = append([]string{"gpu_utilization"}, activityMissing...)
		case !h100:
			d.MissingMetrics = slices.Clone(activityMissing)
		case idle:
			d.Activity = gpuActivity(actLevels{}, ms)
		default:
			d.Activity = gpuActivity(activityLevels(j.DocID, work, b, gpus > 1), ms)
		}
		acts = append(acts, d.Activity)
		if !unreadable {
			act := sec * clamp(u*1.15, 0, 1)
			if b > 0.3 {
				act = sec * math.Min(1, 0.97*ms)
			}
			d.UtilizationAvg = jobmodel.Ptr(round3(u))
			d.UtilizationP95 = jobmodel.Ptr(round3(math.Min(1, b*1.1+0.02)))
			d.UtilizationPeak = jobmodel.Ptr(round3(math.Min(1, b*1.3+0.05)))
			d.ActiveSeconds, d.IdleSeconds = jobmodel.Ptr(math.Round(act)), jobmodel.Ptr(math.Round(sec-act))
			sumU += u
			activeS += act
			if u > activeThreshold {
				effective++
			}
		}
		energy += power * sec
		j.GPUs = append(j.GPUs, d)
	}
	s := &jobmodel.GPUUsage{
		Count: gpus, Held: jobmodel.Ptr(gpus), Source: jobmodel.GPUSourceNVML, Attribution: "slurm",
		HeldIdle: jobmodel.Ptr(heldIdle), GPUSeconds: jobmodel.Ptr(math.Round(float64(gpus) * sec)),
		MemoryPeakBytes: jobmodel.Ptr(memPeak), EnergyJoules: jobmodel.Ptr(math.Round(energy)),
	}
	var missing []string
	if unreadable {
		missing = append(missing, "gpu_utilization")
	}
	if unreadable || !h100 {
		missing = append(missing, activityMissing...)
	}
	if !unreadable {
		mean := sumU / float64(gpus)
		s.UtilizationAvg = jobmodel.Ptr(round3(mean))
		s.EffectiveGPUs = jobmodel.Ptr(effective)
		s.EffectiveRatio = jobmodel.Ptr(round3(float64(effective) / float64(gpus)))
		s.ActiveSeconds = jobmodel.Ptr(math.Round(activeS))
		// The timeline: the GPUs' mean utilisation in at most 64 steps.
		steps := min(64, max(1, int(sec/60)))
		step := sec / float64(steps)
		s.TimelineStepSeconds = jobmodel.Ptr(round3(step))
		s.TimelineStart = j.StartTime
		for k := range steps {
			v := round3(mean / ms * Shape((float64(k)+0.5)/float64(steps), drops))
			s.UtilizationTimeline = append(s.UtilizationTimeline, &v)
		}
		// The GPUs' activity, and their mean SM activity on the same
		// steps (H100).
		s.Activity = jobmodel.SummarizeActivity(acts)
		if s.Activity != nil {
			sm := *s.Activity.SM.Avg
			for k := range steps {
				v := round3(sm / ms * Shape((float64(k)+0.5)/float64(steps), drops))
				s.SMActivityTimeline = append(s.SMActivityTimeline, &v)
			}
		}
	}
	j.GPU = s
	return missing
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
