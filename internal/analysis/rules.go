package analysis

import (
	"fmt"
	"math"
	"path"
	"strings"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/textfmt"
)

// evaluator is one rule: it returns a cause (ID, Confidence and Evidence
// set) when it fires. fired holds the rules that fired before it, for the
// rules that defer to a more specific one.
type evaluator func(f *facts, fired map[string]bool) *jobmodel.Cause

// evaluators are the rules by cause id; runRules calls them in CauseIDs
// order, so a rule may look at the rules before it.
var evaluators = map[string]evaluator{
	CauseGPUsHeldIdle:            ruleGPUsHeldIdle,
	CauseGPUUnused:               ruleGPUUnused,
	CauseParallelismMismatch:     ruleParallelismMismatch,
	CauseCPUBottleneck:           ruleCPUBottleneck,
	CauseUtilizationDrop:         ruleUtilizationDrop,
	CauseGPUInputPipelineBound:   ruleGPUInputPipelineBound,
	CauseSmallJobLargeGPU:        ruleSmallJobLargeGPU,
	CauseMemoryResidentLowUtil:   ruleMemoryResidentLowUtil,
	CauseOverScaled:              ruleOverScaled,
	CauseGPULaunchBound:          ruleGPULaunchBound,
	CauseGPUMemoryBandwidthBound: ruleGPUMemoryBandwidthBound,
	CauseGPUTensorUnused:         ruleGPUTensorUnused,
	CauseTooManyCoresPerGPU:      ruleTooManyCoresPerGPU,
	CauseTooMuchMemoryPerGPU:     ruleTooMuchMemoryPerGPU,
	CauseCPUJobOnGPUPartition:    ruleCPUJobOnGPUPartition,
	CauseSerialJobManyCores:      ruleSerialJobManyCores,
	CauseCPUOverrequest:          ruleCPUOverrequest,
	CauseIOStall:                 ruleIOStall,
	CauseMemoryStall:             ruleMemoryStall,
	CauseCPUStall:                ruleCPUStall,
	CauseOOMKilledChild:          ruleOOMKilledChild,
	CauseMemoryOverrequest:       ruleMemoryOverrequest,
	CauseWalltimeOverrequest:     ruleWalltimeOverrequest,
}

// runRules evaluates every enabled rule in order.
func runRules(f *facts) []jobmodel.Cause {
	fired := map[string]bool{}
	var out []jobmodel.Cause
	for _, rt := range f.cfg.ruleTexts() {
		if !rt.t.Enabled {
			continue
		}
		if c := evaluators[rt.id](f, fired); c != nil {
			c.ID = rt.id
			fired[rt.id] = true
			out = append(out, *c)
		}
	}
	return out
}

func cause(conf float64, format string, args ...any) *jobmodel.Cause {
	return &jobmodel.Cause{Confidence: conf, Evidence: fmt.Sprintf(format, args...)}
}

// memoryRepresentative: the job ran to its end (or its limit), so its
// memory peak is what it needs. A job that failed, was cancelled or
// stopped early may not have reached its peak.
func memoryRepresentative(state string) bool {
	return state == jobmodel.StateCompleted || state == jobmodel.StateTimeout
}

func ruleGPUsHeldIdle(f *facts, _ map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.GPUsHeldIdle
	if f.kind != jobmodel.KindGPU {
		return nil
	}
	total := f.gpus
	if len(f.devs) == 0 {
		if !f.hasSummaryIdle || f.summaryIdle < r.MinGPUs {
			return nil
		}
		return cause(0.8, "%d of %s held by the job never had a process of the job on them during its %s run",
			f.summaryIdle, textfmt.Plural(max(total, f.summaryIdle), "GPU"), duration(f.elapsed))
	}
	idle := f.idle()
	if int64(len(idle)) < r.MinGPUs {
		return nil
	}
	conf := 0.95
	for _, d := range idle {
		if !d.hasUtil {
			conf = 0.8
		}
	}
	return cause(conf, "%d of %s held by the job never had a process of the job on them during its %s run (%s)",
		len(idle), textfmt.Plural(max(total, int64(len(f.devs))), "GPU"), duration(f.elapsed), gpuLabels(idle, 16))
}

func ruleGPUUnused(f *facts, _ map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.GPUUnused
	act := f.active()
	if f.kind != jobmodel.KindGPU || len(act) == 0 {
		return nil
	}
	hi := 0.0
	for _, d := range act {
		if !d.hasUtil || d.util > r.MaxGPUUtilization {
			return nil
		}
		hi = max(hi, d.util)
	}
	m, ok := f.activeMaxMem()
	if !ok || m.memFrac > r.MaxGPUMemory {
		return nil
	}
	which := "the GPU"
	if len(act) > 1 {
		which = fmt.Sprintf("each of the %d GPUs", len(act))
	}
	ev := fmt.Sprintf("%s the job's processes ran on averaged at most %s utilisation, with at most %s of GPU memory in use (%s of %s)",
		which, pct(hi), pct(m.memFrac), size(m.memUsed), size(m.memTotal))
	if f.hasCPUEff {
		ev += fmt.Sprintf("; the CPUs were %s busy", pct(f.cpuEff))
	}
	return cause(0.85, "%s", upperFirst(ev))
}

func ruleParallelismMismatch(f *facts, _ map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.ParallelismMismatch
	if f.kind != jobmodel.KindGPU || !f.hasGPUs || f.gpus < r.MinGPUs {
		return nil
	}
	n, ratio, bySM, ok := f.working()
	if !ok || n < 1 || ratio > r.MaxEffectiveRatio {
		return nil
	}
	conf := 0.7
	if n == 1 {
		conf = 0.9
	}
	total := textfmt.Plural(max(f.gpus, int64(len(f.devs))), "GPU")
	if !bySM {
		ev := fmt.Sprintf("%d of %s averaged more than %s utilisation", n, total, pct(f.cfg.EffectiveGPUThreshold))
		if len(f.devs) > 0 {
			var per []string
			for i := range f.devs {
				per = append(per, pct(f.devs[i].util))
			}
			ev += " (per GPU: " + labelList(per, 16) + ")"
		}
		return cause(conf, "%s", ev)
	}
	// SM activity says which GPUs computed: a GPU kept "busy" by a kernel
	// that waits (a collective, a polling loop) has high utilisation and
	// idle SMs. Utilisation agreeing makes it clearer still.
	agree := f.hasEff && f.effective <= n
	if agree {
		conf += 0.05
	} else {
		conf -= 0.05
	}
	ev := fmt.Sprintf("%d of %s averaged more than %s SM activity", n, total, pct(f.smWorkThr))
	var sm, util []string
	for i := range f.devs {
		d := &f.devs[i]
		switch {
		case d.act.sm.ok:
			sm = append(sm, pct(d.act.sm.avg))
		case d.idle:
			sm = append(sm, "idle")
		}
		if d.hasUtil {
			util = append(util, pct(d.util))
		} else {
			util = append(util, "not measured")
		}
	}
	ev += " (per GPU: SM activity " + labelList(sm, 16) + "; utilisation " + labelList(util, 16) + ")"
	if !agree && f.hasEff {
		ev += fmt.Sprintf("; by utilisation %d were above %s, but the kernels on the others kept few of their SMs busy", f.effective, pct(f.cfg.EffectiveGPUThreshold))
	}
	return cause(conf, "%s", ev)
}

func ruleCPUBottleneck(f *facts, _ map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.CPUBottleneck
	if f.kind != jobmodel.KindGPU || !f.hasCPUEff {
		return nil
	}
	u, n, ok := f.activeUtil()
	if !ok || u <= r.MinGPUUtilization || u >= r.MaxGPUUtilization || f.cpuEff < r.MinCPUEfficiency {
		return nil
	}
	conf := 0.9
	if r.MinCPUEfficiency < 1 {
		conf = 0.6 + 0.3*jobmodel.Clamp01((f.cpuEff-r.MinCPUEfficiency)/(1-r.MinCPUEfficiency))
	}
	ev := fmt.Sprintf("%s averaged %s utilisation while the job's CPUs were %s busy",
		gpusInUse(n), pct(u), pct(f.cpuEff))
	if f.hasCPUs {
		ev += fmt.Sprintf(" (%s CPUs", num(float64(f.cpus)))
		if f.job.CPU != nil {
			if avg, ok := okF(f.job.CPU.AvgCores); ok {
				ev += fmt.Sprintf(", %s busy on average", cores(avg))
			}
		}
		ev += ")"
	}
	return cause(conf, "%s", ev)
}

func ruleUtilizationDrop(f *facts, _ map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.UtilizationDrop
	n := len(f.timeline)
	if f.kind != jobmodel.KindGPU || n < r.MinPoints || n < 2 {
		return nil
	}
	h := max(1, int(math.Ceil(float64(n)*r.HeadFraction)))
	t := max(1, int(math.Ceil(float64(n)*r.TailFraction)))
	if h+t > n {
		t = n - h
	}
	if t < 1 {
		return nil
	}
	head, tail := mean(f.timeline[:h]), mean(f.timeline[n-t:])
	if head < r.MinHeadUtilization || tail > r.MaxTailRatio*head {
		return nil
	}
	conf := 0.5 + 0.4*(1-tail/head)
	return cause(conf, "GPU utilisation averaged %s over the first %s of the run and %s over the last %s (%d timeline points)",
		pct(head), pct(float64(h)/float64(n)), pct(tail), pct(float64(t)/float64(n)), n)
}

func ruleSmallJobLargeGPU(f *facts, fired map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.SmallJobLargeGPU
	if f.kind != jobmodel.KindGPU || fired[CauseGPUUnused] || fired[CauseCPUBottleneck] || fired[CauseUtilizationDrop] || fired[CauseGPUInputPipelineBound] {
		return nil
	}
	act := f.active()
	if len(act) == 0 || int64(len(act)) > r.MaxGPUs {
		return nil
	}
	var sum, hiFrac, hiUsed float64
	var model string
	var total float64
	for _, d := range act {
		if d.slice || !d.hasMem || !d.hasUtil || d.memTotal < r.MinGPUMemoryGiB*gib || d.memFrac > r.MaxMemoryFraction {
			return nil
		}
		sum += d.util
		if d.memFrac >= hiFrac {
			hiFrac, hiUsed, total, model = d.memFrac, d.memUsed, d.memTotal, d.d.Model
		}
	}
	u := sum / float64(len(act))
	if u > r.MaxGPUUtilization {
		return nil
	}
	conf := 0.7
	if hiFrac <= r.MaxMemoryFraction/2 {
		conf = 0.8
	}
	on := "its GPU"
	if len(act) > 1 {
		on = "any of its GPUs"
	}
	if model != "" {
		on += " (" + model + ")"
	}
	return cause(conf, "The job used at most %s of the %s on %s (%s) and averaged %s utilisation",
		size(hiUsed), size(total), on, pct(hiFrac), pct(u))
}

func ruleMemoryResidentLowUtil(f *facts, fired map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.MemoryResidentLowUtil
	if f.kind != jobmodel.KindGPU || fired[CauseGPUUnused] || fired[CauseCPUBottleneck] || fired[CauseUtilizationDrop] || fired[CauseGPUInputPipelineBound] {
		return nil
	}
	u, n, ok := f.activeUtil()
	if !ok || u >= r.MaxGPUUtilization {
		return nil
	}
	m, ok := f.activeMaxMem()
	if !ok || m.memFrac < r.MinGPUMemory {
		return nil
	}
	return cause(0.6, "%s averaged %s utilisation while up to %s of a GPU's memory was in use (%s of %s)",
		gpusInUse(n), pct(u), pct(m.memFrac), size(m.memUsed), size(m.memTotal))
}

func ruleOverScaled(f *facts, fired map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.OverScaled
	if f.kind != jobmodel.KindGPU {
		return nil
	}
	for _, id := range []string{CauseGPUUnused, CauseParallelismMismatch, CauseCPUBottleneck, CauseUtilizationDrop, CauseGPUInputPipelineBound, CauseSmallJobLargeGPU} {
		if fired[id] {
			return nil
		}
	}
	u, n, ok := f.activeUtil()
	if !ok || u >= r.MaxGPUUtilization {
		return nil
	}
	m, ok := f.activeMaxMem()
	if !ok || m.memFrac > r.MaxGPUMemory {
		return nil
	}
	conf := 0.7
	if u < f.cfg.Classes.GPUInefficient {
		conf = 0.8
	}
	return cause(conf, "%s averaged %s utilisation and no GPU had more than %s of its memory in use (%s of %s)",
		gpusInUse(n), pct(u), pct(m.memFrac), size(m.memUsed), size(m.memTotal))
}

func ruleTooManyCoresPerGPU(f *facts, _ map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.TooManyCoresPerGPU
	if f.kind != jobmodel.KindGPU || !f.hasGPUs || !f.hasCPUs || !f.hasCPUEff {
		return nil
	}
	per := float64(f.cpus) / float64(f.gpus)
	if per <= r.MaxCoresPerGPU || f.cpuEff >= r.MaxCPUEfficiency {
		return nil
	}
	conf := 0.7
	if f.cpuEff < r.MaxCPUEfficiency/2 {
		conf = 0.8
	}
	return cause(conf, "The job held %s for %s (%s per GPU, above %s) and kept %s of them busy",
		textfmt.Plural(f.cpus, "CPU"), textfmt.Plural(f.gpus, "GPU"), num(per), num(r.MaxCoresPerGPU), pct(f.cpuEff))
}

func ruleTooMuchMemoryPerGPU(f *facts, _ map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.TooMuchMemoryPerGPU
	if f.kind != jobmodel.KindGPU || !f.hasGPUs || !f.hasMemReqTotal || !f.hasMemEff || !memoryRepresentative(f.job.State) {
		return nil
	}
	per := f.memReqTotal / float64(f.gpus)
	if per <= r.MaxMemoryPerGPUGiB*gib || f.memEff >= r.MaxMemoryEfficiency {
		return nil
	}
	if _, _, ok := f.memRec(); !ok {
		return nil
	}
	conf := 0.7
	if f.memEff < r.MaxMemoryEfficiency/2 {
		conf = 0.8
	}
	return cause(conf, "The job requested %s of host memory for %s (%s per GPU, above %s) and its peak was %s of the request",
		size(f.memReqTotal), textfmt.Plural(f.gpus, "GPU"), size(per), size(r.MaxMemoryPerGPUGiB*gib), pct(f.memEff))
}

func ruleCPUJobOnGPUPartition(f *facts, _ map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.CPUJobOnGPUPartition
	part := strings.TrimSpace(f.job.Partition)
	if f.kind != jobmodel.KindCPU || part == "" || len(r.Partitions) == 0 {
		return nil
	}
	// GPUs the agent could not read are not "no GPUs".
	for _, m := range f.job.MissingMetrics {
		if m == "gpu" {
			return nil
		}
	}
	if g, ok := okI(f.job.Requested.GPUs); ok && g > 0 {
		return nil
	}
	var matched string
	for _, p := range strings.Split(part, ",") {
		m := matchPartition(r.Partitions, strings.TrimSpace(p))
		if m == "" {
			return nil
		}
		matched = m
	}
	return cause(0.9, "The job held no GPU and ran in partition %q, configured as a GPU partition (%q)", part, matched)
}

// matchPartition returns the first pattern that matches the partition.
func matchPartition(patterns []string, part string) string {
	for _, p := range patterns {
		if ok, err := path.Match(p, part); err == nil && ok {
			return p
		}
	}
	return ""
}

func ruleSerialJobManyCores(f *facts, _ map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.SerialJobManyCores
	if f.kind != jobmodel.KindCPU || !f.hasCPUs || f.cpus < r.MinCPUs || f.job.CPU == nil {
		return nil
	}
	avg, hasAvg := okF(f.job.CPU.AvgCores)
	if !hasAvg && f.hasCPUEff {
		avg, hasAvg = f.cpuEff*float64(f.cpus), true
	}
	if !hasAvg || avg < r.MinAvgCores {
		return nil
	}
	threads := ""
	if f.job.Threads != nil && f.job.Threads.Peak != nil && *f.job.Threads.Peak >= 0 {
		threads = fmt.Sprintf("; at most %s ran at once", textfmt.Plural(*f.job.Threads.Peak, "thread"))
	}
	if peak, ok := okF(f.job.CPU.PeakCores); ok {
		if peak > r.MaxPeakCores {
			return nil
		}
		conf := 0.85
		if f.job.Threads != nil && f.job.Threads.Peak != nil && *f.job.Threads.Peak == 1 {
			conf = 0.95
		}
		return cause(conf, "The job held %s; its use peaked at %s and averaged %s%s",
			textfmt.Plural(f.cpus, "CPU"), cores(peak), cores(avg), threads)
	}
	// No sampled peak: the average alone, close to one core.
	if avg < 0.85 || avg > r.MaxPeakCores {
		return nil
	}
	return cause(0.65, "The job held %s and averaged %s (no sampled peak)%s", textfmt.Plural(f.cpus, "CPU"), cores(avg), threads)
}

func ruleCPUOverrequest(f *facts, fired map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.CPUOverrequest
	if f.kind != jobmodel.KindCPU || fired[CauseSerialJobManyCores] || !f.hasCPUs || f.cpus < r.MinCPUs || !f.hasCPUEff {
		return nil
	}
	if f.cpuEff >= r.MaxCPUEfficiency {
		return nil
	}
	conf := 0.6 + 0.3*(1-f.cpuEff/r.MaxCPUEfficiency)
	ev := fmt.Sprintf("The job kept %s of the CPU time of its %s busy", pct(f.cpuEff), textfmt.Plural(f.cpus, "CPU"))
	if f.job.CPU != nil {
		if p95, ok := okF(f.job.CPU.P95Cores); ok {
			ev += fmt.Sprintf(" (95th percentile of use: %s)", cores(p95))
		}
	}
	return cause(conf, "%s", ev)
}

// stalled returns a pressure family's figures when it was measured over
// at least minWatched and reached minRatio, with the confidence of a
// stall rule: 0.6 at the threshold, rising to 0.9 for a job stalled all
// the time.
func (f *facts) stalled(family int, minRatio float64, minWatched time.Duration) (stallFact, float64, bool) {
	s := f.stalls[family]
	if !f.hasStall[family] || f.watched < minWatched.Seconds() || s.ratio < minRatio-classEpsilon {
		return s, 0, false
	}
	conf := 0.9
	if minRatio < 1 {
		conf = 0.6 + 0.3*jobmodel.Clamp01((s.ratio-minRatio)/(1-minRatio))
	}
	return s, conf, true
}

// stallEvidence states a family's stall: its share of the watched time and
// the stalled time, the worst node's share on a job of several nodes, and
// the worst sampling interval. what is the stall in words ("waited for
// I/O").
func (f *facts) stallEvidence(s stallFact, what string) string {
	ev := fmt.Sprintf("The job's tasks %s during %s of the %s they were watched", what, pct(s.ratio), duration(f.watched))
	if f.nodes > 1 {
		ev += " (summed over its nodes)"
	}
	if s.hasSeconds {
		// Of the watched time: the ratio's (the document's seconds also
		// hold the stalls before the job's first sample).
		ev += fmt.Sprintf(": %s stalled", duration(s.ratio*f.watched))
	}
	if f.nodes > 1 && s.hasNode {
		ev += fmt.Sprintf("; %s on the worst node", pct(s.maxNode))
	}
	if s.hasPeak {
		ev += fmt.Sprintf("; %s in the worst sampling interval", pct(s.peak))
	}
	return ev
}

// fullStall adds the share of the time all of the job's tasks stalled at
// once, where it was measured and above zero.
func (f *facts) fullStall(ev string, family int) string {
	if s := f.stalls[family]; f.hasStall[family] && s.ratio > 0 {
		ev += fmt.Sprintf("; all of its tasks at once during %s", pct(s.ratio))
	}
	return ev
}

func ruleIOStall(f *facts, _ map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.IOStall
	s, conf, ok := f.stalled(stallIOSome, r.MinRatio, r.MinWatched)
	if !ok {
		return nil
	}
	ev := f.fullStall(f.stallEvidence(s, "waited for I/O"), stallIOFull)
	if io := f.job.IO; io != nil {
		rd, okR := okI(io.ReadBytes)
		wr, okW := okI(io.WrittenBytes)
		if okR && okW {
			ev += fmt.Sprintf("; it read %s and wrote %s", size(float64(rd)), size(float64(wr)))
		}
	}
	return cause(conf, "%s", ev)
}

func ruleMemoryStall(f *facts, _ map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.MemoryStall
	s, conf, ok := f.stalled(stallMemorySome, r.MinRatio, r.MinWatched)
	if !ok {
		return nil
	}
	// A job reading more file data than its limit holds keeps a small
	// working set while its page cache fills the limit and the kernel
	// reclaims it, again and again (refaults: the v2 test node's memstall
	// job, 18% stalled, working set well below its request): the charged
	// peak, page cache included, tells that the limit was reached.
	charged, hasCharged := f.chargedShare()
	atLeast := r.MinMemoryEfficiency - classEpsilon
	wsAtLimit := f.hasMemEff && f.memEff >= atLeast
	chargedAtLimit := hasCharged && charged >= atLeast
	if (f.hasMemEff || hasCharged) && !wsAtLimit && !chargedAtLimit {
		// Far below its request, the job's stalls come from the node
		// (other jobs, swap), not its limit: more memory would not help.
		return nil
	}
	ev := f.fullStall(f.stallEvidence(s, "waited for memory (reclaim, refaults, swap-in)"), stallMemoryFull)
	switch {
	case wsAtLimit:
		conf += 0.05
		ev += fmt.Sprintf("; its memory peak reached %s of its request", pct(f.memEff))
	case chargedAtLimit:
		conf += 0.05
		ev += fmt.Sprintf("; its memory, page cache included, reached %s of its request", pct(charged))
		if f.hasMemEff {
			ev += fmt.Sprintf(" (its working set %s)", pct(f.memEff))
		}
		ev += ": the kernel kept evicting file data it read again"
	}
	if f.job.State == jobmodel.StateOutOfMemory {
		ev += "; it was then killed for memory"
	}
	return cause(conf, "%s", ev)
}

func ruleCPUStall(f *facts, _ map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.CPUStall
	s, conf, ok := f.stalled(stallCPUSome, r.MinRatio, r.MinWatched)
	if !ok {
		return nil
	}
	ev := f.stallEvidence(s, "waited for a CPU")
	if t := f.job.Threads; t != nil && f.hasCPUs {
		if peak, ok := okI(t.Peak); ok {
			ev += fmt.Sprintf("; up to %s ran on its %s", textfmt.Plural(peak, "thread"), textfmt.Plural(f.cpus, "CPU"))
			if peak > f.cpus {
				conf += 0.05
			}
		}
	}
	return cause(conf, "%s", ev)
}

func ruleOOMKilledChild(f *facts, _ map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.OOMKilledChild
	if !f.hasOOMKills || f.oomKills < r.MinKills || f.job.State == jobmodel.StateOutOfMemory {
		return nil
	}
	ev := fmt.Sprintf("The kernel killed %s of the job for lack of memory (memory.oom_kills) and the job ended %s",
		textfmt.Plural(f.oomKills, "process"), f.job.State)
	if f.hasMemEff {
		ev += fmt.Sprintf("; its memory peak reached %s of its request", pct(f.memEff))
	}
	return cause(0.9, "%s", ev)
}

func ruleMemoryOverrequest(f *facts, fired map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.MemoryOverrequest
	if fired[CauseTooMuchMemoryPerGPU] || fired[CauseMemoryStall] || fired[CauseOOMKilledChild] || !f.hasMemEff || !memoryRepresentative(f.job.State) {
		return nil
	}
	perNodeReq := f.memReq
	if !f.memPerNode() {
		perNodeReq = f.memReq / float64(f.nodes)
	}
	if perNodeReq < r.MinRequestGiB*gib || f.memEff >= r.MaxMemoryEfficiency {
		return nil
	}
	if _, _, ok := f.memRec(); !ok {
		return nil
	}
	conf := 0.7 + 0.2*(1-f.memEff/r.MaxMemoryEfficiency)
	var ev string
	switch f.memBasis {
	case MemoryBasisPerNodeWorkingSet:
		ev = fmt.Sprintf("Peak working set (memory the kernel could not reclaim: anonymous, shared and active cache) on the fullest node was %s of the %s requested per node (%s)", size(f.memPeak), size(f.memReq), pct(f.memEff))
	case MemoryBasisTotalWorkingSet:
		ev = fmt.Sprintf("Peak working set (memory the kernel could not reclaim: anonymous, shared and active cache) was %s of the %s requested (%s)", size(f.memPeak), size(f.memReq), pct(f.memEff))
	case MemoryBasisPerNode:
		ev = fmt.Sprintf("Peak memory on the fullest node was %s of the %s requested per node (%s)", size(f.memPeak), size(f.memReq), pct(f.memEff))
	case MemoryBasisTotalRSS:
		conf -= 0.1
		ev = fmt.Sprintf("Peak resident memory was %s of the %s requested (%s; the charged peak, with page cache, is unknown)", size(f.memPeak), size(f.memReq), pct(f.memEff))
	default:
		ev = fmt.Sprintf("Peak memory was %s of the %s requested (%s)", size(f.memPeak), size(f.memReq), pct(f.memEff))
	}
	return cause(conf, "%s", ev)
}

func ruleWalltimeOverrequest(f *facts, _ map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.WalltimeOverrequest
	if f.job.State != jobmodel.StateCompleted || f.fig.WalltimeEfficiency == nil {
		return nil
	}
	we := *f.fig.WalltimeEfficiency
	limit, _ := okI(f.job.TimeLimitSeconds)
	rec, ok := f.timeRec()
	if we >= r.MaxWalltimeEfficiency || !ok || float64(limit-rec) < r.MinUnused.Seconds() {
		return nil
	}
	conf := 0.7 + 0.2*(1-we/r.MaxWalltimeEfficiency)
	return cause(conf, "The job completed after %s of its %s time limit (%s)", duration(f.elapsed), duration(float64(limit)), pct(we))
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
