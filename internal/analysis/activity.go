package analysis

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/textfmt"
)

// What the GPUs did beyond utilisation (gpus[].activity, gpu.activity):
// SM activity, tensor and pipe use, memory bandwidth and traffic. A figure
// the device could not give is absent from the document (and named in its
// missing_metrics); here it stays unknown, and a rule that needs it does
// not judge that GPU. Absent is never taken as zero.

// actFig is one activity figure: its average (what the rules judge) and,
// where known, its 95th percentile.
type actFig struct {
	avg, p95   float64
	ok, hasP95 bool
}

// actFacts are a GPU's validated activity figures; ratios are clamped to
// 0–1, rates are bytes per second.
type actFacts struct {
	sm, occ, tensor, tensorFP64, tensorFP16, tensorINT8 actFig
	fp64, fp32, fp16, dram                              actFig
	pcieRx, pcieTx, linkRx, linkTx                      actFig
}

// readActivity validates a document's activity figures: an average that is
// absent, negative or not finite leaves the figure unknown.
func readActivity(a *jobmodel.GPUActivity) actFacts {
	var out actFacts
	if a == nil {
		return out
	}
	read := func(s *jobmodel.Stat, isRatio bool) actFig {
		if s == nil {
			return actFig{}
		}
		var f actFig
		f.avg, f.ok = okF(s.Avg)
		f.p95, f.hasP95 = okF(s.P95)
		if isRatio {
			f.avg, f.p95 = jobmodel.Clamp01(f.avg), jobmodel.Clamp01(f.p95)
		}
		return f
	}
	out.sm, out.occ = read(a.SM, true), read(a.SMOccupancy, true)
	out.tensor = read(a.Tensor, true)
	out.tensorFP64, out.tensorFP16, out.tensorINT8 = read(a.TensorFP64, true), read(a.TensorFP16, true), read(a.TensorINT8, true)
	out.fp64, out.fp32, out.fp16 = read(a.FP64, true), read(a.FP32, true), read(a.FP16, true)
	out.dram = read(a.DRAM, true)
	out.pcieRx, out.pcieTx = read(a.PCIeRxBytesPerSecond, false), read(a.PCIeTxBytesPerSecond, false)
	out.linkRx, out.linkTx = read(a.LinkRxBytesPerSecond, false), read(a.LinkTxBytesPerSecond, false)
	return out
}

// actGPU is one GPU the activity rules judge: a GPU in use (not held
// idle), or, for a document without per-GPU entries, the job's GPUs as
// the summary gives them.
type actGPU struct {
	label   string
	util    float64
	hasUtil bool
	a       actFacts
	summary bool
}

// activityFacts collects the GPUs in use with their activity figures, and
// the job's mean SM activity (Figures.GPUSMActivity, the class score's
// second figure) where every GPU in use measured it.
func (f *facts) activityFacts() {
	g := f.job.GPU
	if len(f.devs) > 0 {
		var sum float64
		all, any := true, false
		for i := range f.devs {
			d := &f.devs[i]
			if !d.idle {
				f.actGPUs = append(f.actGPUs, actGPU{label: gpuLabels([]*gpuDev{d}, 1), util: d.util, hasUtil: d.hasUtil, a: d.act})
			}
			switch {
			case d.act.sm.ok:
				sum += d.act.sm.avg
				any = any || !d.idle
			case d.idle && d.hasUtil:
				// A held-idle GPU without the figure: its utilisation (at
				// most the effective threshold) bounds its SM activity.
				sum += d.util
			default:
				all = false
			}
		}
		if all && any {
			f.gpuSM, f.hasGPUSM = jobmodel.Clamp01(sum/float64(len(f.devs))), true
		}
	} else if g != nil && g.Activity != nil {
		// The summary's figures are means over the GPUs that have them:
		// used only when no GPU was held idle (activeUtil says so), as a
		// held-idle GPU's figures would dilute them.
		if u, _, ok := f.activeUtil(); ok {
			a := readActivity(g.Activity)
			f.actGPUs = append(f.actGPUs, actGPU{label: "the job's GPUs (summary)", util: u, hasUtil: true, a: a, summary: true})
			if a.sm.ok {
				f.gpuSM, f.hasGPUSM = a.sm.avg, true
			}
		}
	}
	if f.hasGPUSM {
		f.fig.GPUSMActivity = ptr(f.gpuSM)
	}
}

// working is the number of the job's GPUs that did the work and its share
// of the GPU entries: by SM activity (above the parallelism_mismatch
// rule's min_sm_activity) where every GPU in use measured it and at least
// one reached it, else by utilisation (effective GPUs). bySM says which.
func (f *facts) working() (n int64, ratio float64, bySM, ok bool) {
	if f.hasSMWork {
		return f.smWork, jobmodel.Clamp01(float64(f.smWork) / float64(len(f.devs))), true, true
	}
	return f.effective, f.effRatio, false, f.hasEff
}

// smWorkFacts counts the GPUs whose SM activity averaged above the
// threshold, when every GPU in use has the figure and the entries cover
// every GPU held; held-idle GPUs did no work. The threshold is
// min_sm_activity, or half the busiest GPU's SM activity when that is
// lower: GPUs that all did little, alike (a launch-bound data-parallel
// job, rank 0 a little busier), all did the work.
func (f *facts) smWorkFacts() {
	if len(f.devs) == 0 || !f.hasGPUs || int64(len(f.devs)) < f.gpus {
		return
	}
	busiest := 0.0
	for _, d := range f.devs {
		if d.idle {
			continue
		}
		if !d.act.sm.ok {
			return
		}
		busiest = max(busiest, d.act.sm.avg)
	}
	thr := min(f.cfg.Rules.ParallelismMismatch.MinSMActivity, busiest/2)
	var n int64
	any := false
	for _, d := range f.devs {
		if d.idle {
			continue
		}
		any = true
		if d.act.sm.avg > thr {
			n++
		}
	}
	if any && n >= 1 {
		f.smWork, f.hasSMWork, f.smWorkThr = n, true, thr
	}
}

// actMatch runs a rule's test over the GPUs in use: need says whether a
// GPU has the figures the rule needs, match whether it shows the pattern.
// It returns the matching GPUs and the number of GPUs in use that could
// not be judged for want of figures.
func (f *facts) actMatch(need, match func(*actGPU) bool) (ms []*actGPU, unjudged int) {
	for i := range f.actGPUs {
		x := &f.actGPUs[i]
		switch {
		case !need(x):
			unjudged++
		case match(x):
			ms = append(ms, x)
		}
	}
	return ms, unjudged
}

// plural says whether the matching GPUs are spoken of as several.
func plural(ms []*actGPU) bool { return len(ms) > 1 || ms[0].summary }

// actWho names the matching GPUs: "The GPU in use (gpu001 GPU 0)", "Of the
// 4 GPUs in use, gpu001 GPU 2", "3 of the 4 GPUs in use", "Both GPUs in
// use", "All 8 GPUs in use", "The job's GPUs (summary figures)".
func (f *facts) actWho(ms []*actGPU) string {
	switch {
	case ms[0].summary:
		return "The job's GPUs (summary figures)"
	case len(ms) == 1 && len(f.actGPUs) == 1:
		return "The GPU in use (" + ms[0].label + ")"
	case len(ms) == 1:
		return fmt.Sprintf("Of the %d GPUs in use, %s", len(f.actGPUs), ms[0].label)
	case len(ms) == len(f.actGPUs) && len(ms) == 2:
		return "Both GPUs in use"
	case len(ms) == len(f.actGPUs):
		return fmt.Sprintf("All %d GPUs in use", len(ms))
	}
	return fmt.Sprintf("%d of the %d GPUs in use", len(ms), len(f.actGPUs))
}

// its chooses "its" or "their" for the matching GPUs.
func its(ms []*actGPU) string {
	if plural(ms) {
		return "their"
	}
	return "its"
}

// actDetail adds the figures behind the evidence: for one GPU (or the
// summary) the extra figures alone ("; …"), for several up to four GPUs
// with their figures ("; gpu001 GPU 0: …; gpu001 GPU 1: …; and 4 more").
func actDetail(ms []*actGPU, extra, figures func(*actGPU) string) string {
	const show = 4
	if len(ms) == 1 {
		if e := extra(ms[0]); e != "" {
			return "; " + e
		}
		return ""
	}
	var parts []string
	for i, m := range ms {
		if i == show {
			parts = append(parts, fmt.Sprintf("and %d more", len(ms)-show))
			break
		}
		parts = append(parts, m.label+": "+figures(m))
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// unjudgedNote says how many GPUs in use lacked the figures: "; SM
// activity not measured on 2 other GPUs in use".
func unjudgedNote(n int, what string) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("; %s not measured on %s in use", what, textfmt.Plural(int64(n), "other GPU"))
}

// rangeOf writes the range of a figure over the matching GPUs with format
// ("12%", "10–14%", "6.2–7.9 GB/s").
func rangeOf(ms []*actGPU, get func(*actGPU) float64, format func(float64) string, unit string) string {
	lo, hi := get(ms[0]), get(ms[0])
	for _, m := range ms[1:] {
		lo, hi = min(lo, get(m)), max(hi, get(m))
	}
	if format(lo) == format(hi) {
		return format(lo)
	}
	return strings.TrimSuffix(format(lo), unit) + "–" + format(hi)
}

func pctRange(ms []*actGPU, get func(*actGPU) float64) string { return rangeOf(ms, get, pct, "%") }

// meanOf is the mean of a figure over the matching GPUs.
func meanOf(ms []*actGPU, get func(*actGPU) float64) float64 {
	var s float64
	for _, m := range ms {
		s += get(m)
	}
	return s / float64(len(ms))
}

// gbps writes a rate in GB/s (10^9 bytes per second): "6.2 GB/s".
func gbps(bytesPerSecond float64) string {
	return strconv.FormatFloat(bytesPerSecond/1e9, 'f', 1, 64) + " GB/s"
}

// p95Of writes a figure's 95th percentile where known: "95th percentile
// of SM activity 18%".
func p95Of(what string, x actFig, format func(float64) string) string {
	if !x.hasP95 {
		return ""
	}
	return "95th percentile of " + what + " " + format(x.p95)
}

// joinNonEmpty joins the non-empty parts with ", ".
func joinNonEmpty(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ", ")
}

func ruleGPULaunchBound(f *facts, fired map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.GPULaunchBound
	if f.kind != jobmodel.KindGPU || fired[CauseGPUUnused] {
		return nil
	}
	ms, unjudged := f.actMatch(
		func(x *actGPU) bool { return x.hasUtil && x.a.sm.ok },
		func(x *actGPU) bool {
			return x.util >= r.MinGPUUtilization-classEpsilon && x.a.sm.avg <= r.MaxSMActivity+classEpsilon
		})
	if len(ms) == 0 {
		return nil
	}
	sm := func(x *actGPU) float64 { return x.a.sm.avg }
	conf := 0.6 + 0.3*jobmodel.Clamp01(1-meanOf(ms, sm)/r.MaxSMActivity)
	ev := fmt.Sprintf("%s averaged %s utilisation but %s SM activity: a kernel ran most of the time, yet the kernels kept few of the SMs busy",
		f.actWho(ms), pctRange(ms, func(x *actGPU) float64 { return x.util }), pctRange(ms, sm))
	occ := func(x *actGPU) string {
		if x.a.occ.ok {
			return "SM occupancy " + pct(x.a.occ.avg)
		}
		return ""
	}
	ev += actDetail(ms,
		func(x *actGPU) string { return joinNonEmpty(p95Of("SM activity", x.a.sm, pct), occ(x)) },
		func(x *actGPU) string {
			return joinNonEmpty("utilisation "+pct(x.util), "SM activity "+pct(x.a.sm.avg), occ(x))
		})
	return cause(conf, "%s%s", ev, unjudgedNote(unjudged, "utilisation or SM activity"))
}

// pcieRxThreshold is the gpu_input_pipeline_bound rule's bound in bytes per
// second: the absolute one, or the configured share of the link where
// that is lower.
func (r GPUInputPipelineBoundRule) pcieRxThreshold() float64 {
	thr := r.MinPCIeRxGBPerSecond * 1e9
	if r.PCIeLinkGBPerSecond > 0 {
		thr = min(thr, r.MinPCIeLinkShare*r.PCIeLinkGBPerSecond*1e9)
	}
	return thr
}

func ruleGPUInputPipelineBound(f *facts, fired map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.GPUInputPipelineBound
	// With the CPUs saturated the host side, not the copies, set the pace
	// (cpu_bottleneck says so).
	if f.kind != jobmodel.KindGPU || fired[CauseGPUUnused] || fired[CauseCPUBottleneck] {
		return nil
	}
	thr := r.pcieRxThreshold()
	ms, unjudged := f.actMatch(
		func(x *actGPU) bool { return x.hasUtil && x.a.pcieRx.ok },
		func(x *actGPU) bool {
			return x.a.pcieRx.avg >= thr && x.util < r.MaxGPUUtilization &&
				(!x.a.sm.ok || x.a.sm.avg <= r.MaxSMActivity+classEpsilon)
		})
	if len(ms) == 0 {
		return nil
	}
	rx := func(x *actGPU) float64 { return x.a.pcieRx.avg }
	mean := meanOf(ms, rx)
	conf := 0.6 + 0.15*jobmodel.Clamp01((mean/thr-1)/2)
	withSM := true
	for _, m := range ms {
		withSM = withSM && m.a.sm.ok
	}
	if withSM {
		conf += 0.1
	}
	bound := "the rule's bound: " + gbps(thr)
	if r.PCIeLinkGBPerSecond > 0 {
		bound += fmt.Sprintf("; %s of the configured %s link", pct(mean/(r.PCIeLinkGBPerSecond*1e9)), gbps(r.PCIeLinkGBPerSecond*1e9))
	}
	ev := fmt.Sprintf("%s received %s from the host over PCIe on average (%s) while averaging %s utilisation",
		f.actWho(ms), rangeOf(ms, rx, gbps, " GB/s"), bound, pctRange(ms, func(x *actGPU) float64 { return x.util }))
	if withSM {
		ev += fmt.Sprintf(" and %s SM activity", pctRange(ms, func(x *actGPU) float64 { return x.a.sm.avg }))
	}
	ev += actDetail(ms,
		func(x *actGPU) string {
			return joinNonEmpty(p95Of("PCIe receive", x.a.pcieRx, gbps), ifOK(x.a.pcieTx, "PCIe send ", gbps))
		},
		func(x *actGPU) string {
			return joinNonEmpty("PCIe in "+gbps(x.a.pcieRx.avg), "utilisation "+pct(x.util), ifOK(x.a.sm, "SM activity ", pct))
		})
	if f.hasCPUEff {
		ev += fmt.Sprintf("; the job's CPUs were %s busy", pct(f.cpuEff))
	}
	return cause(conf, "%s%s", ev, unjudgedNote(unjudged, "PCIe traffic"))
}

// ifOK writes a labelled figure's average where it is known.
func ifOK(x actFig, label string, format func(float64) string) string {
	if !x.ok {
		return ""
	}
	return label + format(x.avg)
}

func ruleGPUMemoryBandwidthBound(f *facts, fired map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.GPUMemoryBandwidthBound
	if f.kind != jobmodel.KindGPU || fired[CauseGPUUnused] {
		return nil
	}
	// FP64 and FP16 pipes are judged where measured; tensor and FP32
	// activity are needed.
	low := func(x actFig) bool { return !x.ok || x.avg <= r.MaxPipeActivity+classEpsilon }
	ms, unjudged := f.actMatch(
		func(x *actGPU) bool { return x.a.dram.ok && x.a.tensor.ok && x.a.fp32.ok },
		func(x *actGPU) bool {
			return x.a.dram.avg >= r.MinDRAMActivity-classEpsilon && low(x.a.tensor) && low(x.a.fp32) && low(x.a.fp64) && low(x.a.fp16)
		})
	if len(ms) == 0 {
		return nil
	}
	dram := func(x *actGPU) float64 { return x.a.dram.avg }
	conf := 0.6 + 0.3*jobmodel.Clamp01((meanOf(ms, dram)-r.MinDRAMActivity)/(1-r.MinDRAMActivity))
	ev := fmt.Sprintf("%s used %s of %s memory bandwidth on average while %s tensor cores averaged %s and %s FP32 pipes %s",
		f.actWho(ms), pctRange(ms, dram), its(ms), its(ms), pctRange(ms, func(x *actGPU) float64 { return x.a.tensor.avg }),
		its(ms), pctRange(ms, func(x *actGPU) float64 { return x.a.fp32.avg }))
	pipes := func(x *actGPU) string {
		return joinNonEmpty(ifOK(x.a.fp64, "FP64 pipes ", pct), ifOK(x.a.fp16, "FP16 pipes ", pct))
	}
	ev += actDetail(ms,
		func(x *actGPU) string { return joinNonEmpty(p95Of("memory bandwidth", x.a.dram, pct), pipes(x)) },
		func(x *actGPU) string {
			return joinNonEmpty("memory bandwidth "+pct(x.a.dram.avg), "tensor "+pct(x.a.tensor.avg), "FP32 "+pct(x.a.fp32.avg), pipes(x))
		})
	return cause(conf, "%s%s", ev, unjudgedNote(unjudged, "memory bandwidth, tensor or FP32 activity"))
}

func ruleGPUTensorUnused(f *facts, fired map[string]bool) *jobmodel.Cause {
	r := f.cfg.Rules.GPUTensorUnused
	// Memory-bound or launch-bound work is held back by something tensor
	// cores do not change.
	if f.kind != jobmodel.KindGPU || fired[CauseGPUUnused] || fired[CauseGPUMemoryBandwidthBound] || fired[CauseGPULaunchBound] {
		return nil
	}
	ms, unjudged := f.actMatch(
		func(x *actGPU) bool { return x.a.sm.ok && x.a.tensor.ok && x.a.fp32.ok },
		func(x *actGPU) bool {
			// A double-precision code (FP64 pipes at least as busy as
			// FP32) is not one that mixed precision suits.
			return x.a.sm.avg >= r.MinSMActivity-classEpsilon && x.a.fp32.avg >= r.MinFP32Activity-classEpsilon &&
				x.a.tensor.avg <= r.MaxTensorActivity+classEpsilon && (!x.a.fp64.ok || x.a.fp64.avg < x.a.fp32.avg)
		})
	if len(ms) == 0 {
		return nil
	}
	fp32 := func(x *actGPU) float64 { return x.a.fp32.avg }
	conf := 0.6 + 0.25*jobmodel.Clamp01((meanOf(ms, fp32)-r.MinFP32Activity)/(1-r.MinFP32Activity))
	ev := fmt.Sprintf("%s averaged %s SM activity with %s FP32 pipes %s busy, while %s tensor cores (measured) averaged %s",
		f.actWho(ms), pctRange(ms, func(x *actGPU) float64 { return x.a.sm.avg }), its(ms), pctRange(ms, fp32),
		its(ms), pctRange(ms, func(x *actGPU) float64 { return x.a.tensor.avg }))
	prec := func(x *actGPU) string {
		p := joinNonEmpty(ifOK(x.a.tensorFP16, "FP16/BF16/TF32 ", pct), ifOK(x.a.tensorFP64, "FP64 ", pct), ifOK(x.a.tensorINT8, "INT8 ", pct))
		if p != "" {
			p = "tensor by precision (" + p + ")"
		}
		return p
	}
	ev += actDetail(ms,
		func(x *actGPU) string {
			return joinNonEmpty(p95Of("tensor activity", x.a.tensor, pct), prec(x), ifOK(x.a.fp64, "FP64 pipes ", pct))
		},
		func(x *actGPU) string {
			return joinNonEmpty("SM activity "+pct(x.a.sm.avg), "FP32 "+pct(x.a.fp32.avg), "tensor "+pct(x.a.tensor.avg))
		})
	return cause(conf, "%s%s", ev, unjudgedNote(unjudged, "SM, tensor or FP32 activity"))
}
