package analysis

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// Version is the analysis rules' version (jobmodel.Analysis.Version). It
// changes when a class or cause would be computed differently. 2: memory
// efficiency rests on the working set where the document has one. 3: the
// pressure stall and OOM-kill causes (io_stall, memory_stall, cpu_stall,
// oom_killed_child). 4: the GPU activity causes (gpu_launch_bound,
// gpu_input_pipeline_bound, gpu_memory_bandwidth_bound, gpu_tensor_unused),
// parallelism_mismatch judged on SM activity where measured, and the GPU
// score lowered to the mean SM activity where the GPUs measured it.
const Version = 4

// Memory bases (jobmodel.AnalysisFigures.MemoryBasis): which document
// fields memory efficiency was computed from.
//
// The working set (memory charged less the inactive file cache: what the
// kernel holds against the limit once it has reclaimed what it reclaims
// first, shared memory included) is preferred; documents without one
// (older agents, standalone mode) fall back to the charged peak, then RSS.
const (
	// MemoryBasisPerNodeWorkingSet: memory.max_node_working_set_peak_bytes
	// over requested.memory_per_node_bytes.
	MemoryBasisPerNodeWorkingSet = "per_node_working_set"
	// MemoryBasisTotalWorkingSet: memory.working_set_peak_bytes over the
	// total request (as for MemoryBasisTotal).
	MemoryBasisTotalWorkingSet = "total_working_set"
	// MemoryBasisPerNode: memory.max_node_peak_bytes over
	// requested.memory_per_node_bytes.
	MemoryBasisPerNode = "per_node"
	// MemoryBasisTotal: memory.peak_bytes over requested.memory_bytes
	// (else memory.limit_bytes, else the per-node request × nodes).
	MemoryBasisTotal = "total"
	// MemoryBasisTotalRSS: memory.rss_peak_bytes over the same total
	// request, when the charged peak is missing (a lower bound of use).
	MemoryBasisTotalRSS = "total_rss"
)

const gib = float64(1 << 30)
const mib = float64(1 << 20)

// Input is what Analyze reads.
type Input struct {
	// Job is the job's final document.
	Job jobmodel.Job
	// At is when the analysis runs (Analysis.AnalyzedAt); the zero time
	// leaves AnalyzedAt absent.
	At time.Time
	// GPUTimeline is the job-wide mean GPU utilisation, 0–1, at evenly
	// spaced times over the job's run, oldest first; nil when unknown
	// (the utilization_drop rule then does not fire). Values that are not
	// finite are ignored; others are clamped to 0–1.
	GPUTimeline []float64
}

// AnalyzeJob analyses a final job document as stored: its GPU timeline
// (gpu.utilization_timeline) is the one the utilization_drop rule reads.
func AnalyzeJob(job jobmodel.Job, at time.Time, cfg Config) jobmodel.Analysis {
	var timeline []float64
	if job.GPU != nil {
		// Gaps (nulls) are left out: the rule compares the start of the
		// run with its end, and a gap has no value to compare.
		for _, v := range job.GPU.UtilizationTimeline {
			if v != nil {
				timeline = append(timeline, *v)
			}
		}
	}
	return Analyze(Input{Job: job, At: at, GPUTimeline: timeline}, cfg)
}

// Analyze analyses one job. It never fails: what cannot be computed is
// left absent and named in MissingMetrics. cfg should be valid
// (Config.Validate); Analyze does not panic on an invalid one, but its
// result is then unspecified.
func Analyze(in Input, cfg Config) jobmodel.Analysis {
	f := newFacts(&in.Job, &cfg, in.GPUTimeline)
	a := jobmodel.Analysis{
		Version: Version,
		Kind:    f.kind,
		Vendor:  f.vendor,
		Figures: f.fig,
	}
	if !in.At.IsZero() {
		a.AnalyzedAt = jobmodel.At(in.At)
	}

	score, hasScore := f.score()
	if hasScore {
		a.Score = ptr(score)
	}
	switch {
	case !f.hasElapsed:
		a.Class = jobmodel.ClassUnknown
	case f.elapsed < cfg.ShortJob.Seconds():
		a.Class = jobmodel.ClassShort
	case !hasScore:
		a.Class = jobmodel.ClassUnknown
	default:
		a.Class = f.band(score)
	}

	// Rules run on every job whose length is known and not short; each
	// rule checks its own inputs, so an unknown class can still have
	// causes (held-idle GPUs need no utilisation figure).
	if f.hasElapsed && a.Class != jobmodel.ClassShort {
		causes := runRules(f)
		for i := range causes {
			c := &causes[i]
			c.Title = texts[c.ID].title
			c.Lesson, c.DocURL = lesson(&cfg, c.ID, f.vendor)
			c.Confidence = round2(jobmodel.Clamp01(c.Confidence))
		}
		causes = append(causes, runCustom(f)...)
		sort.SliceStable(causes, func(i, j int) bool {
			if causes[i].Confidence != causes[j].Confidence {
				return causes[i].Confidence > causes[j].Confidence
			}
			return causes[i].ID < causes[j].ID
		})
		if len(causes) > 0 {
			a.Causes = causes
		}
		a.Recommendation, a.Savings = recommend(f, causes)
	}

	for m := range f.missing {
		a.MissingMetrics = append(a.MissingMetrics, m)
	}
	sort.Strings(a.MissingMetrics)
	return a
}

// gpuDev is one of the job's GPUs with its validated figures.
type gpuDev struct {
	d       *jobmodel.GPUDevice
	util    float64
	hasUtil bool
	// memUsed is the job's own peak where known, else the device's peak.
	memUsed, memTotal, memFrac float64
	hasMem                     bool
	// idle: held, no process of the job seen, and not busy either.
	idle bool
	// slice: a MIG instance or an AMD compute partition.
	slice bool
	// act are its activity figures (SM, tensor, memory bandwidth, PCIe…),
	// each unknown where the device could not give it.
	act actFacts
}

// facts are the validated inputs and figures of one job.
type facts struct {
	cfg      *Config
	job      *jobmodel.Job
	kind     string
	vendor   string
	missing  map[string]bool
	fig      jobmodel.AnalysisFigures
	timeline []float64

	elapsed    float64
	hasElapsed bool
	cpus       int64
	hasCPUs    bool
	gpus       int64
	hasGPUs    bool
	nodes      int64
	devs       []gpuDev
	// summaryIdle is gpu.held_idle, used when there are no per-GPU entries.
	summaryIdle    int64
	hasSummaryIdle bool

	gpuUtil    float64
	hasGPUUtil bool
	effective  int64
	hasEff     bool
	effRatio   float64
	// gpuSM is the mean SM activity of the job's GPUs (Figures.GPUSMActivity);
	// smWork the GPUs that did the work by SM activity (see working).
	gpuSM     float64
	hasGPUSM  bool
	smWork    int64
	hasSMWork bool
	// smWorkThr is the SM activity above which a GPU did the work.
	smWorkThr float64
	// actGPUs are the GPUs in use as the activity rules judge them.
	actGPUs   []actGPU
	cpuEff    float64
	hasCPUEff bool
	memEff    float64
	hasMemEff bool
	// memPeak and memReq are on memBasis: per node, or totals.
	memPeak, memReq float64
	memBasis        string
	// memReqTotal is the whole job's memory request.
	memReqTotal    float64
	hasMemReqTotal bool

	// stalls are the job's pressure stall figures by family
	// (jobmodel.PressureFamilies order), over watched seconds (summed
	// over nodes); hasStall says which were measured.
	stalls   [len(jobmodel.PressureFamilies)]stallFact
	hasStall [len(jobmodel.PressureFamilies)]bool
	watched  float64
	// oomKills is memory.oom_kills, hasOOMKills whether it was measured.
	oomKills    int64
	hasOOMKills bool
}

// Pressure families by index (jobmodel.PressureFamilies).
const (
	stallCPUSome = iota
	stallMemorySome
	stallMemoryFull
	stallIOSome
	stallIOFull
)

// stallFact is one pressure family's validated figures: the share of the
// watched time the job's tasks stalled, whether the document has the stall
// seconds (the evidence then states the stalled time: the share of the
// watched time), and where known the worst sampling interval and node.
type stallFact struct {
	ratio                        float64
	peak, maxNode                float64
	hasSeconds, hasPeak, hasNode bool
}

func newFacts(job *jobmodel.Job, cfg *Config, timeline []float64) *facts {
	f := &facts{cfg: cfg, job: job, missing: map[string]bool{}, kind: jobmodel.KindCPU, nodes: 1}
	for _, v := range timeline {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			f.timeline = append(f.timeline, jobmodel.Clamp01(v))
		}
	}

	// Elapsed time.
	if v, ok := okF(job.ElapsedSeconds); ok {
		f.elapsed, f.hasElapsed = v, true
	} else if job.StartTime != nil && job.EndTime != nil && !job.EndTime.Before(job.StartTime.Time) {
		f.elapsed, f.hasElapsed = job.EndTime.Sub(job.StartTime.Time).Seconds(), true
	} else {
		f.missing["elapsed_seconds"] = true
	}
	if n, ok := okI(job.Requested.Nodes); ok && n > 0 {
		f.nodes = n
	} else if job.NodeCount > 0 {
		f.nodes = int64(job.NodeCount)
	} else if len(job.Nodes) > 0 {
		f.nodes = int64(len(job.Nodes))
	}
	if n, ok := okI(job.Requested.CPUs); ok && n > 0 {
		f.cpus, f.hasCPUs = n, true
	}

	f.gpuFacts()
	f.cpuFacts()
	f.memoryFacts()
	f.pressureFacts()

	if lim, ok := okI(job.TimeLimitSeconds); ok && lim > 0 && f.hasElapsed {
		f.fig.WalltimeEfficiency = ptr(jobmodel.Clamp01(f.elapsed / float64(lim)))
	}
	hours := f.elapsed / 3600
	if f.hasElapsed && f.hasGPUs {
		f.fig.GPUHours = finite(float64(f.gpus) * hours)
		if f.fig.GPUHours != nil && f.hasGPUUtil {
			f.fig.GPUHoursWasted = ptr(*f.fig.GPUHours * (1 - f.gpuUtil))
		}
	}
	if f.hasElapsed && f.hasCPUs {
		f.fig.CoreHours = finite(float64(f.cpus) * hours)
		if f.fig.CoreHours != nil && f.hasCPUEff {
			f.fig.CoreHoursWasted = ptr(*f.fig.CoreHours * (1 - f.cpuEff))
		}
	}
	return f
}

// gpuFacts finds the job's kind, vendor and GPU figures.
func (f *facts) gpuFacts() {
	job, g := f.job, f.job.GPU
	reqGPUs, hasReq := okI(job.Requested.GPUs)
	if (hasReq && reqGPUs > 0) || len(job.GPUs) > 0 || (g != nil && (g.Count > 0 || (g.Held != nil && *g.Held > 0))) {
		f.kind = jobmodel.KindGPU
	}
	if f.kind != jobmodel.KindGPU {
		return
	}
	thr := f.cfg.EffectiveGPUThreshold
	vendors := map[string]int{}
	for i := range job.GPUs {
		d := &job.GPUs[i]
		gd := gpuDev{d: d}
		if v, ok := okF(d.UtilizationAvg); ok {
			gd.util, gd.hasUtil = jobmodel.Clamp01(v), true
		}
		used, hasUsed := okI(d.JobMemoryPeakBytes)
		if !hasUsed {
			used, hasUsed = okI(d.MemoryPeakBytes)
		}
		if total, ok := okI(d.MemoryTotalBytes); ok && total > 0 && hasUsed {
			gd.memUsed, gd.memTotal, gd.hasMem = float64(used), float64(total), true
			gd.memFrac = jobmodel.Clamp01(gd.memUsed / gd.memTotal)
		}
		gd.idle = d.HeldIdle && !(gd.hasUtil && gd.util > thr)
		p := strings.ToUpper(strings.TrimSpace(d.Partition))
		gd.slice = d.ParentIndex != nil || (p != "" && p != "SPX" && p != "GCD")
		gd.act = readActivity(d.Activity)
		if v := strings.ToLower(strings.TrimSpace(d.Vendor)); v != "" {
			vendors[v]++
		}
		f.devs = append(f.devs, gd)
	}
	switch {
	case vendors[VendorAMD] > vendors[VendorNVIDIA]:
		f.vendor = VendorAMD
	case vendors[VendorNVIDIA] > 0:
		f.vendor = VendorNVIDIA
	case g != nil && strings.Contains(g.Source, "amd"):
		f.vendor = VendorAMD
	case g != nil && strings.Contains(g.Source, jobmodel.GPUSourceNVML):
		f.vendor = VendorNVIDIA
	}

	// Number of GPUs: held (the allocation), else requested, else seen.
	switch {
	case g != nil && g.Held != nil && *g.Held > 0:
		f.gpus = *g.Held
	case hasReq && reqGPUs > 0:
		f.gpus = reqGPUs
	case len(f.devs) > 0:
		f.gpus = int64(len(f.devs))
	case g != nil && g.Count > 0:
		f.gpus = g.Count
	}
	f.hasGPUs = f.gpus > 0
	if f.hasGPUs {
		f.fig.GPUs = ptr(f.gpus)
	}
	if g != nil {
		if v, ok := okI(g.HeldIdle); ok {
			f.summaryIdle, f.hasSummaryIdle = v, true
		}
	}

	// Average utilisation: the summary, else the mean over the GPUs.
	allUtil := len(f.devs) > 0
	var sum float64
	for _, d := range f.devs {
		allUtil = allUtil && d.hasUtil
		sum += d.util
	}
	if g != nil {
		if v, ok := okF(g.UtilizationAvg); ok {
			f.gpuUtil, f.hasGPUUtil = jobmodel.Clamp01(v), true
		}
	}
	if !f.hasGPUUtil && allUtil {
		f.gpuUtil, f.hasGPUUtil = jobmodel.Clamp01(sum/float64(len(f.devs))), true
	}
	if f.hasGPUUtil {
		f.fig.GPUUtilization = ptr(f.gpuUtil)
	} else {
		f.missing["gpu.utilization_avg"] = true
	}

	// Effective GPUs, from the per-GPU averages.
	switch {
	case allUtil && f.hasGPUs && int64(len(f.devs)) >= f.gpus:
		for _, d := range f.devs {
			if d.util > thr {
				f.effective++
			}
		}
		f.effRatio, f.hasEff = jobmodel.Clamp01(float64(f.effective)/float64(len(f.devs))), true
	case len(f.devs) == 0 && g != nil && g.EffectiveGPUs != nil && *g.EffectiveGPUs >= 0 && f.hasGPUs:
		// No per-GPU entries: the agent's own count (its threshold).
		f.effective = min(*g.EffectiveGPUs, f.gpus)
		f.effRatio, f.hasEff = jobmodel.Clamp01(float64(f.effective)/float64(f.gpus)), true
	default:
		f.missing["gpus.utilization_avg"] = true
	}
	if f.hasEff {
		f.fig.EffectiveGPUs = ptr(f.effective)
		f.fig.EffectiveGPURatio = ptr(f.effRatio)
	}
	f.smWorkFacts()
	f.activityFacts()
	for _, d := range f.active() {
		if !d.hasMem {
			if d.d.MemoryTotalBytes == nil {
				f.missing["gpus.memory_total_bytes"] = true
			} else {
				f.missing["gpus.memory_peak_bytes"] = true
			}
		}
	}
}

// cpuFacts computes CPU efficiency: core-seconds over (CPUs × elapsed),
// else the document's own cpu.efficiency.
func (f *facts) cpuFacts() {
	job := f.job
	var cs float64
	hasCS := false
	if job.CPU != nil {
		cs, hasCS = okF(job.CPU.CoreSeconds)
	}
	if hasCS && f.hasCPUs && f.hasElapsed && f.elapsed > 0 {
		if v := cs / (float64(f.cpus) * f.elapsed); !math.IsNaN(v) {
			f.cpuEff, f.hasCPUEff = jobmodel.Clamp01(v), true
		}
	}
	if !f.hasCPUEff && job.CPU != nil {
		if v, ok := okF(job.CPU.Efficiency); ok {
			f.cpuEff, f.hasCPUEff = jobmodel.Clamp01(v), true
		}
	}
	if f.hasCPUEff {
		f.fig.CPUEfficiency = ptr(f.cpuEff)
	}
	if !hasCS {
		f.missing["cpu.core_seconds"] = true
	}
	if !f.hasCPUs {
		f.missing["requested.cpus"] = true
	}
}

// memoryFacts computes memory efficiency: the working-set peak on the
// fullest node over the per-node request where both are known, else the
// total working-set peak over the total request; for documents without a
// working set, the same with the charged peak, else the total RSS peak.
func (f *facts) memoryFacts() {
	job, m := f.job, f.job.Memory
	req := job.Requested
	perNodeReq, hasPerNodeReq := okI(req.MemoryPerNodeBytes)
	hasPerNodeReq = hasPerNodeReq && perNodeReq > 0
	if v, ok := okI(req.MemoryBytes); ok && v > 0 {
		f.memReqTotal, f.hasMemReqTotal = float64(v), true
	} else if m != nil && m.LimitBytes != nil && *m.LimitBytes > 0 {
		f.memReqTotal, f.hasMemReqTotal = float64(*m.LimitBytes), true
	} else if hasPerNodeReq {
		f.memReqTotal, f.hasMemReqTotal = float64(perNodeReq)*float64(f.nodes), true
	}

	var peak int64
	hasPeak := false
	if m != nil {
		if v, ok := okI(m.MaxNodeWorkingSetPeakBytes); ok && hasPerNodeReq {
			f.memPeak, f.memReq, f.memBasis = float64(v), float64(perNodeReq), MemoryBasisPerNodeWorkingSet
		} else if v, ok := okI(m.WorkingSetPeakBytes); ok {
			peak, hasPeak, f.memBasis = v, true, MemoryBasisTotalWorkingSet
		} else if v, ok := okI(m.MaxNodePeakBytes); ok && hasPerNodeReq {
			f.memPeak, f.memReq, f.memBasis = float64(v), float64(perNodeReq), MemoryBasisPerNode
		} else if v, ok := okI(m.PeakBytes); ok {
			peak, hasPeak, f.memBasis = v, true, MemoryBasisTotal
		} else if v, ok := okI(m.RSSPeakBytes); ok {
			peak, hasPeak, f.memBasis = v, true, MemoryBasisTotalRSS
		}
	}
	if !f.memPerNode() {
		if hasPeak && f.hasMemReqTotal {
			f.memPeak, f.memReq = float64(peak), f.memReqTotal
		} else {
			f.memBasis = ""
			if !hasPeak {
				f.missing["memory.peak_bytes"] = true
			}
			if !f.hasMemReqTotal {
				f.missing["requested.memory_bytes"] = true
			}
			return
		}
	}
	f.memEff, f.hasMemEff = jobmodel.Clamp01(f.memPeak/f.memReq), true
	f.fig.MemoryEfficiency = ptr(f.memEff)
	f.fig.MemoryBasis = f.memBasis
}

// pressureFacts reads the pressure stall figures and the OOM kills. A
// family without a measured ratio (cgroup v1, no PSI, an older agent)
// stays unknown, never zero, and its rule does not fire.
func (f *facts) pressureFacts() {
	if m := f.job.Memory; m != nil {
		f.oomKills, f.hasOOMKills = okI(m.OOMKills)
	}
	p := f.job.Pressure
	if p == nil {
		return
	}
	w, ok := okF(p.WatchedSeconds)
	if !ok || w <= 0 {
		return
	}
	f.watched = w
	for k, fl := range p.Families() {
		r, ok := okF(*fl.Ratio)
		if !ok {
			continue
		}
		s := stallFact{ratio: jobmodel.Clamp01(r)}
		_, s.hasSeconds = okF(*fl.Seconds)
		if v, ok := okF(*fl.PeakRatio); ok {
			s.peak, s.hasPeak = jobmodel.Clamp01(v), true
		}
		if v, ok := okF(*fl.MaxNodeRatio); ok {
			s.maxNode, s.hasNode = jobmodel.Clamp01(v), true
		}
		f.stalls[k], f.hasStall[k] = s, true
	}
}

// chargedShare is the job's charged memory peak (page cache included: what
// the kernel holds against the limit) over its request, on the same basis
// as memEff: the fullest node over the per-node request, else the total.
func (f *facts) chargedShare() (float64, bool) {
	m, req := f.job.Memory, f.job.Requested
	if m == nil {
		return 0, false
	}
	if v, ok := okI(m.MaxNodePeakBytes); ok {
		if r, ok := okI(req.MemoryPerNodeBytes); ok && r > 0 {
			return jobmodel.Clamp01(float64(v) / float64(r)), true
		}
	}
	if v, ok := okI(m.PeakBytes); ok && f.hasMemReqTotal && f.memReqTotal > 0 {
		return jobmodel.Clamp01(float64(v) / f.memReqTotal), true
	}
	return 0, false
}

// memPerNode reports whether memPeak and memReq are per node (else totals
// over the job's nodes).
func (f *facts) memPerNode() bool {
	return f.memBasis == MemoryBasisPerNode || f.memBasis == MemoryBasisPerNodeWorkingSet
}

// score is the figure the class rests on: average GPU utilisation for GPU
// jobs, or the mean SM activity where the GPUs measured it and it is lower
// (Classes.GPUScoreSMActivity); for CPU jobs CPU efficiency, blended with
// memory efficiency.
func (f *facts) score() (float64, bool) {
	if f.kind == jobmodel.KindGPU {
		if f.cfg.Classes.GPUScoreSMActivity && f.hasGPUSM && (!f.hasGPUUtil || f.gpuSM < f.gpuUtil) {
			return f.gpuSM, true
		}
		return f.gpuUtil, f.hasGPUUtil
	}
	if !f.hasCPUEff {
		return 0, false
	}
	w := f.cfg.Classes.CPUMemoryWeight
	if !f.hasMemEff || !(w > 0) {
		return f.cpuEff, true
	}
	return jobmodel.Clamp01((1-w)*f.cpuEff + w*f.memEff), true
}

// classEpsilon absorbs floating-point noise at class boundaries, so that a
// utilisation stored as 0.7 is at the 70 % bound, not below it.
const classEpsilon = 1e-9

// band maps a score to a class: a score equal to a bound is in the higher
// class.
func (f *facts) band(score float64) string {
	c := f.cfg.Classes
	eff, acc, ineff := c.CPUEfficient, c.CPUAcceptable, c.CPUInefficient
	if f.kind == jobmodel.KindGPU {
		eff, acc, ineff = c.GPUEfficient, c.GPUAcceptable, c.GPUInefficient
	}
	switch {
	case score >= eff-classEpsilon:
		return jobmodel.ClassEfficient
	case score >= acc-classEpsilon:
		return jobmodel.ClassAcceptable
	case score >= ineff-classEpsilon:
		return jobmodel.ClassInefficient
	}
	return jobmodel.ClassWasted
}

// active returns the GPUs that are not held idle.
func (f *facts) active() []*gpuDev {
	var out []*gpuDev
	for i := range f.devs {
		if !f.devs[i].idle {
			out = append(out, &f.devs[i])
		}
	}
	return out
}

// idle returns the held-idle GPUs.
func (f *facts) idle() []*gpuDev {
	var out []*gpuDev
	for i := range f.devs {
		if f.devs[i].idle {
			out = append(out, &f.devs[i])
		}
	}
	return out
}

// activeUtil is the mean utilisation of the GPUs in use (held-idle ones
// left out). Without per-GPU entries it is the job-wide average, when no
// GPU was held idle.
func (f *facts) activeUtil() (float64, int, bool) {
	if len(f.devs) == 0 {
		if f.hasGPUUtil && (!f.hasSummaryIdle || f.summaryIdle == 0) && f.hasGPUs {
			return f.gpuUtil, int(f.gpus), true
		}
		return 0, 0, false
	}
	act := f.active()
	if len(act) == 0 {
		return 0, 0, false
	}
	var sum float64
	for _, d := range act {
		if !d.hasUtil {
			return 0, 0, false
		}
		sum += d.util
	}
	return sum / float64(len(act)), len(act), true
}

// activeMaxMem is the GPU in use with the largest share of its memory in
// use; false when any GPU in use lacks memory figures.
func (f *facts) activeMaxMem() (*gpuDev, bool) {
	act := f.active()
	if len(act) == 0 {
		return nil, false
	}
	var best *gpuDev
	for _, d := range act {
		if !d.hasMem {
			return nil, false
		}
		if best == nil || d.memFrac > best.memFrac {
			best = d
		}
	}
	return best, true
}

// okF returns a measured float: present, finite and not negative.
func okF(p *float64) (float64, bool) {
	if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) || *p < 0 {
		return 0, false
	}
	return *p, true
}

// okI returns a measured count or size: present and not negative.
func okI(p *int64) (int64, bool) {
	if p == nil || *p < 0 {
		return 0, false
	}
	return *p, true
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

func ptr[T any](v T) *T { return &v }

// finite returns a pointer to v, or nil when v is not finite.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
