// Package monitor is the agent's per-job loop on one node: it samples the
// job through its collectors, keeps rolling aggregates (NodeState), pushes
// gauges to Prometheus, updates the node document, and checkpoints its
// state so that a successor can finalize the job if this agent dies.
package monitor

import (
	"math"
	"time"

	"github.com/jobsight/jobsight/agent/aggregate"
	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/energy"
	"github.com/jobsight/jobsight/internal/intconv"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// NodeState is everything the agent has learned about the job on this node.
// It is plain data so that it round-trips through the checkpoint file.
type NodeState struct {
	Started     time.Time `json:"started"`
	FirstSample time.Time `json:"first_sample"`
	LastSample  time.Time `json:"last_sample"`
	Count       int64     `json:"count"`
	IntervalSec float64   `json:"interval_seconds"`
	// Gaps and GapSeconds are the times no agent watched the job
	// between two samples (an agent restart resumed it).
	Gaps       int     `json:"gaps,omitempty"`
	GapSeconds float64 `json:"gap_seconds,omitempty"`

	// Seen is the set of metrics read at least once.
	Seen collector.Metric `json:"seen"`

	CPU     aggregate.Counter `json:"cpu_ns"`
	Cores   aggregate.Series  `json:"cores"`
	Used    aggregate.Series  `json:"memory_used"`
	RSS     aggregate.Series  `json:"memory_rss"`
	Shmem   aggregate.Series  `json:"memory_shmem"`
	Mapped  aggregate.Series  `json:"memory_mapped_file"`
	WorkSet aggregate.Series  `json:"memory_working_set"`
	Procs   aggregate.Series  `json:"processes"`
	Threads aggregate.Series  `json:"threads"`
	IORead  aggregate.Counter `json:"io_read"`
	IOWrite aggregate.Counter `json:"io_write"`

	KernelPeak uint64 `json:"kernel_peak_bytes"`
	// WorkSetKernelPeak is the working-set peak the kernel's high-water
	// mark shows between samples (see Add); PrevInactive the inactive
	// file cache at the last sample that read it (HavePrevInactive).
	WorkSetKernelPeak uint64 `json:"working_set_kernel_peak_bytes,omitempty"`
	PrevInactive      uint64 `json:"prev_inactive_file_bytes,omitempty"`
	HavePrevInactive  bool   `json:"have_prev_inactive_file,omitempty"`
	Limit             uint64 `json:"limit_bytes"`
	CPUs              uint32 `json:"cpus"`
	// ThreadsKernelPeak is the largest threads' kernel peak read (the
	// steps' pids.peak): a floor of the threads' peak.
	ThreadsKernelPeak uint32 `json:"threads_kernel_peak,omitempty"`
	// OOMKills follows the cgroup's count of OOM-killed processes.
	OOMKills aggregate.Counter `json:"oom_kills,omitzero"`
	// Pressure follows the pressure stall totals; nil until a sample read
	// every pressure file (and in checkpoints of agents before it).
	Pressure *PressureState `json:"pressure,omitempty"`

	// PrevCPUTime is when CPU was last read, for the cores rate.
	PrevCPUTime time.Time `json:"prev_cpu_time"`

	// GPU is the job's GPUs on this node; nil when no GPU collector runs
	// and the job holds no GPU.
	GPU *GPUState `json:"gpu,omitempty"`

	// Energy apportions the node's energy to the job; nil when the agent
	// reads no node energy (EnableEnergy).
	Energy *energy.Split `json:"energy,omitempty"`
}

// NewNodeState starts the state of a job watched from start.
func NewNodeState(start time.Time, interval time.Duration, activeThreshold float64) *NodeState {
	return &NodeState{
		Started:     start,
		IntervalSec: interval.Seconds(),
		Cores:       aggregate.NewSeries(activeThreshold),
		Used:        aggregate.NewSeries(0),
		RSS:         aggregate.NewSeries(0),
		Shmem:       aggregate.NewSeries(0),
		Mapped:      aggregate.NewSeries(0),
		WorkSet:     aggregate.NewSeries(0),
		Procs:       aggregate.NewSeries(0),
		Threads:     aggregate.NewSeries(0),
	}
}

// Add folds one sample into the state and returns the CPU cores used since
// the previous sample (ok false when there is no rate yet).
func (n *NodeState) Add(s *collector.Sample) (cores float64, ok bool) {
	read := collector.AllMetrics &^ s.Missing
	if read&collector.MetricPressure != collector.MetricPressure {
		// Pressure is used only where every file was read (PressureState).
		read &^= collector.MetricPressure
	}
	if read == 0 {
		return 0, false
	}
	n.Seen |= read
	if n.Count == 0 {
		n.FirstSample = s.Time
	}
	dt := n.IntervalSec
	if !n.LastSample.IsZero() {
		if d := s.Time.Sub(n.LastSample).Seconds(); d > 0 {
			dt = d
		}
	}
	n.Count++
	n.LastSample = s.Time

	if s.Has(collector.MetricCPU) {
		n.CPU.Observe(s.CPUUsageNanos)
		if delta, have := n.CPU.Delta(); have && !n.PrevCPUTime.IsZero() {
			if span := s.Time.Sub(n.PrevCPUTime).Seconds(); span > 0 {
				cores, ok = float64(delta)/1e9/span, true
				n.Cores.Add(cores, span)
			}
		}
		n.PrevCPUTime = s.Time
	}
	if s.Has(collector.MetricMemory) {
		n.Used.Add(float64(s.MemoryUsedBytes), dt)
	}
	if s.Has(collector.MetricMemoryRSS) {
		n.RSS.Add(float64(s.MemoryRSSBytes), dt)
	}
	if s.Has(collector.MetricMemoryShmem) {
		n.Shmem.Add(float64(s.MemoryShmemBytes), dt)
	}
	if s.Has(collector.MetricMemoryMappedFile) {
		n.Mapped.Add(float64(s.MemoryMappedFileBytes), dt)
	}
	if s.Has(collector.MetricMemoryWorkingSet) {
		n.WorkSet.Add(float64(s.MemoryWorkingSetBytes), dt)
	}
	n.addKernelPeak(s)
	if s.Has(collector.MetricMemoryLimit) {
		n.Limit = s.MemoryLimitBytes
	}
	if s.Has(collector.MetricCPUsAllocated) {
		n.CPUs = s.CPUsAllocated
	}
	if s.Has(collector.MetricProcesses) {
		n.Procs.Add(float64(s.Processes), dt)
	}
	if s.Has(collector.MetricThreads) {
		n.Threads.Add(float64(s.Threads), dt)
	}
	if s.Has(collector.MetricIO) {
		n.IORead.Observe(s.IOReadBytes)
		n.IOWrite.Observe(s.IOWriteBytes)
	}
	if s.Has(collector.MetricThreadsPeak) {
		n.ThreadsKernelPeak = max(n.ThreadsKernelPeak, s.ThreadsPeak)
	}
	if s.Has(collector.MetricOOMKills) {
		n.OOMKills.Observe(s.OOMKills)
	}
	if read&collector.MetricPressure != 0 {
		if n.Pressure == nil {
			n.Pressure = &PressureState{}
		}
		n.Pressure.add(s)
	}
	if n.GPU != nil {
		n.GPU.add(s.GPUs, s.Time, dt)
	}
	if n.Energy != nil {
		n.Energy.Add(s.Time, s.CPUUsageNanos, s.Has(collector.MetricCPU), &s.Energy)
	}
	return cores, ok
}

// peakSlack is how far the kernel's high-water mark may lie above the
// usage read just before it and still count as the usage at the sample:
// the two are read a few microseconds apart.
const peakSlack = 4 << 20

// addKernelPeak follows the kernel's high-water mark of the charge. The
// kernel keeps none of the working set, and a spike between two samples (a
// process that grows and exits within an interval) is missed by the sampled
// working set, though not by the high-water mark. So where the mark rose
// since the last sample, the working set at that peak was the mark less the
// inactive file cache then: at this sample's when the mark is this sample's
// usage; when the peak came between samples, the smaller of the cache at
// the two samples around it (a conservative choice: it overstates the peak
// by at most the cache's growth in one interval, never leaves it plainly
// too low).
func (n *NodeState) addKernelPeak(s *collector.Sample) {
	ws := s.Has(collector.MetricMemoryWorkingSet)
	var inactive uint64
	if ws {
		inactive = s.MemoryUsedBytes - s.MemoryWorkingSetBytes
	}
	if s.Has(collector.MetricMemoryPeak) && s.MemoryPeakBytes > n.KernelPeak {
		n.KernelPeak = s.MemoryPeakBytes
		if ws {
			cache := inactive
			if n.HavePrevInactive && s.MemoryPeakBytes > s.MemoryUsedBytes+peakSlack {
				cache = min(cache, n.PrevInactive)
			}
			n.WorkSetKernelPeak = max(n.WorkSetKernelPeak, s.MemoryPeakBytes-min(s.MemoryPeakBytes, cache))
		}
	}
	if ws {
		n.PrevInactive, n.HavePrevInactive = inactive, true
	}
}

// Fill writes the state's summary into a node document: usage, allocation,
// sampling and the metrics never read.
func (n *NodeState) Fill(doc *jobmodel.Node, end time.Time) {
	doc.StartTime = jobmodel.At(n.Started)
	doc.EndTime = jobmodel.At(end)
	doc.Sampling = jobmodel.Sampling{
		IntervalSeconds: n.IntervalSec,
		Count:           n.Count,
		First:           jobmodel.At(n.FirstSample),
		Last:            jobmodel.At(n.LastSample),
		Gaps:            n.Gaps,
	}
	if n.Gaps > 0 {
		doc.Sampling.GapSeconds = jobmodel.Ptr(n.GapSeconds)
	}
	doc.MissingMetrics = (collector.AllMetrics &^ n.Seen).Names()
	if n.Count == 0 {
		doc.MissingMetrics = collector.AllMetrics.Names()
	}

	var u jobmodel.Usage
	watched := n.LastSample.Sub(n.Started).Seconds()
	if total, ok := n.CPU.Total(); ok {
		c := &jobmodel.CPUUsage{CoreSeconds: jobmodel.Ptr(float64(total) / 1e9)}
		if avg, ok := n.Cores.Avg(); ok {
			c.AvgCores = jobmodel.Ptr(avg)
			c.P95Cores = opt(n.Cores.Quantile(0.95))
			c.PeakCores = opt(n.Cores.Max())
			c.ActiveSeconds = jobmodel.Ptr(n.Cores.ActiveSeconds())
		}
		if n.Seen&collector.MetricCPUsAllocated != 0 && n.CPUs > 0 && watched > 0 {
			c.Efficiency = jobmodel.Ptr(math.Min(1, *c.CoreSeconds/(float64(n.CPUs)*watched)))
		}
		u.CPU = c
	}
	m := jobmodel.MemoryUsage{
		AvgBytes:            optI(n.Used.Avg()),
		P95Bytes:            optI(n.Used.Quantile(0.95)),
		RSSAvgBytes:         optI(n.RSS.Avg()),
		RSSPeakBytes:        optI(n.RSS.Max()),
		ShmemAvgBytes:       optI(n.Shmem.Avg()),
		ShmemPeakBytes:      optI(n.Shmem.Max()),
		MappedFileAvgBytes:  optI(n.Mapped.Avg()),
		MappedFilePeakBytes: optI(n.Mapped.Max()),
		WorkingSetAvgBytes:  optI(n.WorkSet.Avg()),
		WorkingSetP95Bytes:  optI(n.WorkSet.Quantile(0.95)),
		WorkingSetPeakBytes: optI(n.WorkSet.Max()),
	}
	// The kernel's figures are uint64 and the document's int64: a value
	// past math.MaxInt64 (a cgroup file, a checkpoint file) is written as
	// math.MaxInt64, never wrapped to a negative number.
	if peak, ok := n.Used.Max(); ok || n.KernelPeak > 0 {
		m.PeakBytes = jobmodel.Ptr(max(intconv.FloatInt64(peak), intconv.Int64(n.KernelPeak)))
	}
	if kernelPeak := intconv.Int64(n.WorkSetKernelPeak); m.WorkingSetPeakBytes != nil && kernelPeak > *m.WorkingSetPeakBytes {
		m.WorkingSetPeakBytes = jobmodel.Ptr(kernelPeak)
	}
	if kills, ok := n.OOMKills.Total(); ok {
		// Counted from the cgroup's creation, across counter resets.
		m.OOMKills = jobmodel.Ptr(intconv.Int64(kills))
	}
	if n.Seen&collector.MetricMemoryLimit != 0 && n.Limit > 0 {
		m.LimitBytes = jobmodel.Ptr(intconv.Int64(n.Limit))
		doc.Allocated.MemoryBytes = m.LimitBytes
		// What the kernel holds against the limit, less the cache it
		// reclaims first; RSS (which misses shared memory) only where
		// the working set could not be read.
		basis := m.WorkingSetPeakBytes
		if basis == nil {
			basis = m.RSSPeakBytes
		}
		if basis != nil {
			m.Efficiency = jobmodel.Ptr(math.Min(1, float64(*basis)/float64(n.Limit)))
		}
	}
	if m != (jobmodel.MemoryUsage{}) {
		u.Memory = &m
	}
	if n.Seen&collector.MetricCPUsAllocated != 0 {
		doc.Allocated.CPUs = jobmodel.Ptr(int64(n.CPUs))
	}
	if r, ok := n.IORead.Total(); ok {
		w, _ := n.IOWrite.Total()
		// Counter totals saturate at math.MaxUint64 (aggregate.Counter).
		u.IO = &jobmodel.IOUsage{ReadBytes: jobmodel.Ptr(intconv.Int64(r)), WrittenBytes: jobmodel.Ptr(intconv.Int64(w))}
	}
	u.Processes = counts(&n.Procs)
	u.Threads = counts(&n.Threads)
	if u.Threads != nil && n.ThreadsKernelPeak > 0 && (u.Threads.Peak == nil || int64(n.ThreadsKernelPeak) > *u.Threads.Peak) {
		// The kernel's mark sees a peak between two samples.
		u.Threads.Peak = jobmodel.Ptr(int64(n.ThreadsKernelPeak))
	}
	if n.Pressure != nil {
		u.Pressure = n.Pressure.usage()
	}
	doc.Usage = u
	doc.Allocated.GPUs = nil
	doc.Energy, doc.Emissions = nil, nil
	if n.GPU != nil {
		n.GPU.fill(doc)
	}
	if n.Energy != nil {
		n.fillEnergy(doc)
	}
}

func counts(s *aggregate.Series) *jobmodel.CountUsage {
	avg, ok := s.Avg()
	if !ok {
		return nil
	}
	return &jobmodel.CountUsage{Avg: jobmodel.Ptr(avg), Peak: optI(s.Max())}
}

func opt(v float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	return &v
}

func optI(v float64, ok bool) *int64 {
	if !ok {
		return nil
	}
	return jobmodel.Ptr(intconv.FloatInt64(v))
}

// NoteGap records that no agent sampled the job from its last sample
// until now (the agent died and a new one resumes the job): the time is
// counted in GapSeconds and the next CPU rate spans the gap.
func (n *NodeState) NoteGap(now time.Time) {
	if n.LastSample.IsZero() || !now.After(n.LastSample) {
		return
	}
	n.Gaps++
	n.GapSeconds += now.Sub(n.LastSample).Seconds()
}
