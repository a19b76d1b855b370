package jobmodel

import (
	"math"
	"sort"
	"strings"

	"github.com/jobsight/jobsight/internal/intconv"
)

// Assemble fills job's usage, sampling and missing metrics from its node
// documents. The job's metadata, request, state and times must already be
// set. Nodes listed in job.Nodes that have no document are named in
// MissingMetrics as "node:<name>"; a metric absent on some node is named
// and summed over the nodes that have it (a partial result, not a zero).
//
// Sums over nodes are exact for totals (core-seconds, bytes moved) and
// averages. Peaks and p95s are the sums of the per-node values: an upper
// bound, since nodes need not peak at the same moment. Per-node values stay
// in the node documents.
func Assemble(job *Job, nodes []Node) {
	missing := map[string]bool{}
	for _, m := range job.MissingMetrics {
		missing[m] = true
	}
	have := map[string]bool{}
	for _, n := range nodes {
		have[n.Node] = true
		for _, m := range n.MissingMetrics {
			missing[m] = true
		}
		if n.AgentState == AgentLost {
			missing["samples_after_agent_loss:"+n.Node] = true
		}
		if n.Sampling.Gaps > 0 {
			missing["samples_during_agent_restart:"+n.Node] = true
		}
	}
	for _, name := range job.Nodes {
		if !have[name] {
			missing["node:"+name] = true
		}
	}

	elapsed := job.ElapsedSeconds
	if elapsed == nil && job.StartTime != nil && job.EndTime != nil {
		elapsed = Ptr(job.EndTime.Sub(job.StartTime.Time).Seconds())
		job.ElapsedSeconds = elapsed
	}

	var u Usage
	cpu := CPUUsage{
		CoreSeconds:   sumF(nodes, func(n *Node) *float64 { return cpuField(n, func(c *CPUUsage) *float64 { return c.CoreSeconds }) }),
		P95Cores:      sumF(nodes, func(n *Node) *float64 { return cpuField(n, func(c *CPUUsage) *float64 { return c.P95Cores }) }),
		PeakCores:     sumF(nodes, func(n *Node) *float64 { return cpuField(n, func(c *CPUUsage) *float64 { return c.PeakCores }) }),
		ActiveSeconds: maxF(nodes, func(n *Node) *float64 { return cpuField(n, func(c *CPUUsage) *float64 { return c.ActiveSeconds }) }),
	}
	if cpu.CoreSeconds != nil && elapsed != nil && *elapsed > 0 {
		cpu.AvgCores = Ptr(*cpu.CoreSeconds / *elapsed)
		cpus := job.Requested.CPUs
		if cpus == nil {
			cpus = sumI(nodes, func(n *Node) *int64 { return n.Allocated.CPUs })
		}
		if cpus != nil && *cpus > 0 {
			cpu.Efficiency = Ptr(Clamp01(*cpu.CoreSeconds / (float64(*cpus) * *elapsed)))
		}
	} else {
		cpu.AvgCores = sumF(nodes, func(n *Node) *float64 { return cpuField(n, func(c *CPUUsage) *float64 { return c.AvgCores }) })
	}
	if cpu != (CPUUsage{}) {
		u.CPU = &cpu
	}

	// Memory: sums over nodes, except the per-node maxima and the
	// efficiency of the fullest node.
	memSum := func(get func(*MemoryUsage) *int64) *int64 {
		return sumI(nodes, func(n *Node) *int64 { return memField(n, get) })
	}
	memMax := func(get func(*MemoryUsage) *int64) *int64 {
		return maxI(nodes, func(n *Node) *int64 { return memField(n, get) })
	}
	memMaxF := func(get func(*MemoryUsage) *float64) *float64 {
		return maxF(nodes, func(n *Node) *float64 { return memField(n, get) })
	}
	mem := MemoryUsage{
		AvgBytes:                   memSum(func(m *MemoryUsage) *int64 { return m.AvgBytes }),
		P95Bytes:                   memSum(func(m *MemoryUsage) *int64 { return m.P95Bytes }),
		PeakBytes:                  memSum(func(m *MemoryUsage) *int64 { return m.PeakBytes }),
		RSSAvgBytes:                memSum(func(m *MemoryUsage) *int64 { return m.RSSAvgBytes }),
		RSSPeakBytes:               memSum(func(m *MemoryUsage) *int64 { return m.RSSPeakBytes }),
		ShmemAvgBytes:              memSum(func(m *MemoryUsage) *int64 { return m.ShmemAvgBytes }),
		ShmemPeakBytes:             memSum(func(m *MemoryUsage) *int64 { return m.ShmemPeakBytes }),
		MappedFileAvgBytes:         memSum(func(m *MemoryUsage) *int64 { return m.MappedFileAvgBytes }),
		MappedFilePeakBytes:        memSum(func(m *MemoryUsage) *int64 { return m.MappedFilePeakBytes }),
		WorkingSetAvgBytes:         memSum(func(m *MemoryUsage) *int64 { return m.WorkingSetAvgBytes }),
		WorkingSetP95Bytes:         memSum(func(m *MemoryUsage) *int64 { return m.WorkingSetP95Bytes }),
		WorkingSetPeakBytes:        memSum(func(m *MemoryUsage) *int64 { return m.WorkingSetPeakBytes }),
		LimitBytes:                 memSum(func(m *MemoryUsage) *int64 { return m.LimitBytes }),
		OOMKills:                   memSum(func(m *MemoryUsage) *int64 { return m.OOMKills }),
		MaxNodePeakBytes:           memMax(func(m *MemoryUsage) *int64 { return m.PeakBytes }),
		MaxNodeWorkingSetPeakBytes: memMax(func(m *MemoryUsage) *int64 { return m.WorkingSetPeakBytes }),
		Efficiency:                 memMaxF(func(m *MemoryUsage) *float64 { return m.Efficiency }),
	}
	if mem != (MemoryUsage{}) {
		u.Memory = &mem
	}

	io := IOUsage{
		ReadBytes:    sumI(nodes, func(n *Node) *int64 { return ioField(n, func(i *IOUsage) *int64 { return i.ReadBytes }) }),
		WrittenBytes: sumI(nodes, func(n *Node) *int64 { return ioField(n, func(i *IOUsage) *int64 { return i.WrittenBytes }) }),
	}
	if io != (IOUsage{}) {
		u.IO = &io
	}
	u.Processes = sumCounts(nodes, func(n *Node) *CountUsage { return n.Processes })
	u.Threads = sumCounts(nodes, func(n *Node) *CountUsage { return n.Threads })
	u.GPU, u.GPUs = assembleGPUs(nodes)
	u.Energy, u.Emissions = assembleEnergy(nodes)
	u.Pressure = assemblePressure(nodes)
	job.Usage = u

	job.Sampling = Sampling{}
	for i := range nodes {
		s := nodes[i].Sampling
		job.Sampling.Count += s.Count
		if s.Gaps > 0 {
			job.Sampling.Gaps += s.Gaps
			mine := 0.0
			if job.Sampling.GapSeconds != nil {
				mine = *job.Sampling.GapSeconds
			}
			if s.GapSeconds != nil {
				mine = max(mine, *s.GapSeconds)
			}
			job.Sampling.GapSeconds = Ptr(mine)
		}
		if s.IntervalSeconds > job.Sampling.IntervalSeconds {
			job.Sampling.IntervalSeconds = s.IntervalSeconds
		}
		if s.First != nil && (job.Sampling.First == nil || s.First.Before(job.Sampling.First.Time)) {
			job.Sampling.First = s.First
		}
		if s.Last != nil && (job.Sampling.Last == nil || s.Last.After(job.Sampling.Last.Time)) {
			job.Sampling.Last = s.Last
		}
	}

	job.MissingMetrics = job.MissingMetrics[:0]
	for m := range missing {
		job.MissingMetrics = append(job.MissingMetrics, m)
	}
	sort.Strings(job.MissingMetrics)
	if len(job.MissingMetrics) == 0 {
		job.MissingMetrics = nil
	}
}

// PeakAtLimitIfOOM makes the memory peak of a job killed for memory at least
// the limit of its fullest node: the job reached it, although a kill
// between two samples can leave every sampled value (and, once Slurm has
// removed the cgroup, the kernel's high-water mark) below it. The document
// says so (memory.peak_from_limit); a plainly too low peak is never kept.
func PeakAtLimitIfOOM(job *Job, nodes []Node) {
	if job.State != StateOutOfMemory {
		return
	}
	limit := maxI(nodes, func(n *Node) *int64 { return memField(n, func(m *MemoryUsage) *int64 { return m.LimitBytes }) })
	if limit == nil {
		// Killed before the agent read its cgroup: the request per node
		// is the limit Slurm set.
		limit = job.Requested.MemoryPerNodeBytes
	}
	if limit == nil {
		return
	}
	if job.Memory == nil {
		job.Memory = &MemoryUsage{}
	}
	m := job.Memory
	if m.MaxNodePeakBytes == nil || *m.MaxNodePeakBytes < *limit {
		m.MaxNodePeakBytes = Ptr(*limit)
		m.PeakFromLimit = true
		if m.PeakBytes == nil || *m.PeakBytes < *limit {
			m.PeakBytes = Ptr(*limit)
		}
	}
	// The kernel kills for memory only once it cannot reclaim cache, so
	// the working set too reached the limit. Where it was measured, its
	// peak is not left below it.
	if m.MaxNodeWorkingSetPeakBytes != nil && *m.MaxNodeWorkingSetPeakBytes < *limit {
		m.MaxNodeWorkingSetPeakBytes = Ptr(*limit)
		m.PeakFromLimit = true
		if m.WorkingSetPeakBytes == nil || *m.WorkingSetPeakBytes < *limit {
			m.WorkingSetPeakBytes = Ptr(*limit)
		}
	}
}

// assemblePressure joins the nodes' pressure stalls: watched and stall
// seconds are sums; a family's ratio is the nodes' ratios weighted by
// their watched time (each node's ratio counts only the stalls of its
// watched time, not those before a late first sample), its peak ratio and
// max_node ratio the largest of any node's. Nil when no node has pressure
// figures.
func assemblePressure(nodes []Node) *PressureUsage {
	var out PressureUsage
	found := false
	outF := out.Families()
	var watched, stalled [len(PressureFamilies)]float64
	for i := range nodes {
		p := nodes[i].Pressure
		if p == nil {
			continue
		}
		found = true
		out.WatchedSeconds = addPtr(out.WatchedSeconds, p.WatchedSeconds)
		for k, f := range p.Families() {
			o := outF[k]
			*o.PeakRatio = maxPtr(*o.PeakRatio, *f.PeakRatio)
			*o.MaxNodeRatio = maxPtr(*o.MaxNodeRatio, *f.Ratio)
			*o.Seconds = addPtr(*o.Seconds, *f.Seconds)
			if *f.Ratio == nil || p.WatchedSeconds == nil {
				continue
			}
			watched[k] += *p.WatchedSeconds
			stalled[k] += **f.Ratio * *p.WatchedSeconds
		}
	}
	if !found {
		return nil
	}
	for k, o := range outF {
		if watched[k] > 0 {
			*o.Ratio = Ptr(Clamp01(stalled[k] / watched[k]))
		}
	}
	return &out
}

// maxPtr is the larger of two optional values.
func maxPtr[T number](acc, v *T) *T { return foldPtr(acc, v, larger[T]) }

// assembleGPUs joins the nodes' GPUs: every per-GPU entry, named by its
// node, and a summary whose counts and energy are sums and whose
// utilisation is the mean over all the job's GPUs.
func assembleGPUs(nodes []Node) (*GPUUsage, []GPUDevice) {
	var sum GPUUsage
	var devs []GPUDevice
	var sources, attributions []string
	var utilSum float64
	var nUtil int64
	var acts []*GPUActivity
	found := false
	for i := range nodes {
		n := &nodes[i]
		g := n.GPU
		if g == nil {
			continue
		}
		found = true
		for _, d := range n.GPUs {
			d.Node = n.Node
			devs = append(devs, d)
			acts = append(acts, d.Activity)
			if d.UtilizationAvg != nil {
				utilSum += *d.UtilizationAvg
				nUtil++
			}
		}
		sum.Count += g.Count
		sum.Simulated = sum.Simulated || g.Simulated
		sum.Held = addPtr(sum.Held, g.Held)
		sum.EffectiveGPUs = addPtr(sum.EffectiveGPUs, g.EffectiveGPUs)
		sum.HeldIdle = addPtr(sum.HeldIdle, g.HeldIdle)
		sum.GPUSeconds = addPtr(sum.GPUSeconds, g.GPUSeconds)
		sum.ActiveSeconds = addPtr(sum.ActiveSeconds, g.ActiveSeconds)
		sum.EnergyJoules = addPtr(sum.EnergyJoules, g.EnergyJoules)
		if g.MemoryPeakBytes != nil && (sum.MemoryPeakBytes == nil || *g.MemoryPeakBytes > *sum.MemoryPeakBytes) {
			sum.MemoryPeakBytes = Ptr(*g.MemoryPeakBytes)
		}
		sources = appendNew(sources, g.Source)
		attributions = appendNew(attributions, g.Attribution)
	}
	if !found {
		return nil, nil
	}
	sort.Strings(sources)
	sort.Strings(attributions)
	sum.Source = strings.Join(sources, "+")
	sum.Attribution = strings.Join(attributions, "+")
	if nUtil > 0 {
		sum.UtilizationAvg = Ptr(utilSum / float64(nUtil))
	}
	if sum.EffectiveGPUs != nil && sum.Count > 0 {
		sum.EffectiveRatio = Ptr(float64(*sum.EffectiveGPUs) / float64(sum.Count))
	}
	if step, start := timelineFrame(nodes); step > 0 {
		sum.UtilizationTimeline = joinTimelines(nodes, utilTimeline, step)
		sum.SMActivityTimeline = joinTimelines(nodes, smTimeline, step)
		sum.TimelineStepSeconds, sum.TimelineStart = Ptr(step), start
	}
	sum.Activity = SummarizeActivity(acts)
	return &sum, devs
}

func utilTimeline(g *GPUUsage) []*float64 { return g.UtilizationTimeline }
func smTimeline(g *GPUUsage) []*float64   { return g.SMActivityTimeline }

// hasTimeline says whether a node's GPU summary has a timeline (either).
func hasTimeline(g *GPUUsage) bool {
	return g != nil && (len(g.UtilizationTimeline) > 0 || len(g.SMActivityTimeline) > 0) &&
		g.TimelineStepSeconds != nil && *g.TimelineStepSeconds > 0
}

// timelineFrame is the joined timelines' step, the coarsest of the nodes'
// (steps are the sampling interval times a power of two, so merging whole
// buckets aligns them), and their start, the earliest; step 0 when no node
// has a timeline.
func timelineFrame(nodes []Node) (step float64, start *Time) {
	for i := range nodes {
		g := nodes[i].GPU
		if !hasTimeline(g) {
			continue
		}
		step = max(step, *g.TimelineStepSeconds)
		if g.TimelineStart != nil && (start == nil || g.TimelineStart.Before(start.Time)) {
			start = g.TimelineStart
		}
	}
	return step, start
}

// joinTimelines averages the nodes' GPU timelines (utilisation, or SM
// activity: which picks) point by point on buckets of step seconds, each
// weighted by its node's GPU count; a gap on every node stays a gap. Nil
// when no node has that timeline.
func joinTimelines(nodes []Node, which func(*GPUUsage) []*float64, step float64) []*float64 {
	var sum, weight []float64
	for i := range nodes {
		g := nodes[i].GPU
		if !hasTimeline(g) || len(which(g)) == 0 {
			continue
		}
		tl := which(g)
		k := max(1, int(step / *g.TimelineStepSeconds + 0.5))
		w := float64(max(g.Count, 1))
		for j := 0; j*k < len(tl); j++ {
			var s float64
			n := 0
			for _, v := range tl[j*k : min(len(tl), (j+1)*k)] {
				if v != nil {
					s += *v
					n++
				}
			}
			for len(sum) <= j {
				sum, weight = append(sum, 0), append(weight, 0)
			}
			if n > 0 {
				sum[j] += w * s / float64(n)
				weight[j] += w
			}
		}
	}
	if len(sum) == 0 {
		return nil
	}
	out := make([]*float64, len(sum))
	for j := range sum {
		if weight[j] > 0 {
			out[j] = Ptr(sum[j] / weight[j])
		}
	}
	return out
}

func addPtr[T number](acc, v *T) *T { return foldPtr(acc, v, add[T]) }

// foldPtr combines an optional accumulator with an optional value by f:
// either alone when the other is absent, nil when both are.
func foldPtr[T number](acc, v *T, f func(a, b T) T) *T {
	if v == nil {
		return acc
	}
	if acc == nil {
		return Ptr(*v)
	}
	return Ptr(f(*acc, *v))
}

func appendNew(list []string, s string) []string {
	if s == "" {
		return list
	}
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// memField reads a memory field of a node, nil when the node has no memory
// summary.
func memField[T any](n *Node, get func(*MemoryUsage) *T) *T {
	if n.Memory == nil {
		return nil
	}
	return get(n.Memory)
}

func cpuField(n *Node, get func(*CPUUsage) *float64) *float64 {
	if n.CPU == nil {
		return nil
	}
	return get(n.CPU)
}

func ioField(n *Node, get func(*IOUsage) *int64) *int64 {
	if n.IO == nil {
		return nil
	}
	return get(n.IO)
}

type number interface{ ~int64 | ~float64 }

// fold combines the values present on the nodes with f; nil when no node
// has the value.
func fold[T number](nodes []Node, get func(*Node) *T, f func(a, b T) T) *T {
	var acc *T
	for i := range nodes {
		acc = foldPtr(acc, get(&nodes[i]), f)
	}
	return acc
}

func add[T number](a, b T) T { return a + b }

func larger[T number](a, b T) T { return max(a, b) }

func sumF(nodes []Node, get func(*Node) *float64) *float64 { return fold(nodes, get, add[float64]) }
func sumI(nodes []Node, get func(*Node) *int64) *int64     { return fold(nodes, get, intconv.AddInt64) }
func maxF(nodes []Node, get func(*Node) *float64) *float64 { return fold(nodes, get, larger[float64]) }
func maxI(nodes []Node, get func(*Node) *int64) *int64     { return fold(nodes, get, larger[int64]) }

func sumCounts(nodes []Node, get func(*Node) *CountUsage) *CountUsage {
	c := CountUsage{
		Avg: sumF(nodes, func(n *Node) *float64 {
			if u := get(n); u != nil {
				return u.Avg
			}
			return nil
		}),
		Peak: sumI(nodes, func(n *Node) *int64 {
			if u := get(n); u != nil {
				return u.Peak
			}
			return nil
		}),
	}
	if c == (CountUsage{}) {
		return nil
	}
	return &c
}

// Clamp01 limits a ratio to 0–1, NaN to 0: efficiencies and shares are
// stored so, analyses reason on them so, reports draw them so.
func Clamp01(v float64) float64 {
	switch {
	case math.IsNaN(v) || v < 0:
		return 0
	case v > 1:
		return 1
	}
	return v
}
