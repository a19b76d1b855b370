// Package collector reads what one Slurm job uses on this node: cgroup v1, v2
// and hybrid hierarchies, and /proc for the job's processes. One file per
// source; each collector fills in the fields of a Sample it is responsible for
// and marks the ones it could not read as missing, never as zero.
//
// Collectors are built once per job (opening what they can keep open) and then
// called once per sampling pass; Collect must not allocate in steady state.
package collector

import (
	"strings"
	"time"

	"github.com/jobsight/jobsight/agent/energy"
	"github.com/jobsight/jobsight/agent/gpu"
)

// Metric names one field of a Sample. A Sample's Missing set says which
// fields could not be read in that pass.
type Metric uint32

// The metrics a Sample can carry. Their String forms are the names used in
// documents' missing_metrics lists.
const (
	MetricCPU              Metric = 1 << iota // CPUUsageNanos
	MetricMemory                              // MemoryUsedBytes
	MetricMemoryRSS                           // MemoryRSSBytes
	MetricMemoryPeak                          // MemoryPeakBytes
	MetricMemoryLimit                         // MemoryLimitBytes
	MetricCPUsAllocated                       // CPUsAllocated
	MetricProcesses                           // Processes
	MetricThreads                             // Threads
	MetricIO                                  // IOReadBytes, IOWriteBytes
	MetricMemoryShmem                         // MemoryShmemBytes
	MetricMemoryMappedFile                    // MemoryMappedFileBytes
	MetricMemoryWorkingSet                    // MemoryWorkingSetBytes
	MetricCPUPressure                         // CPUStallSomeNanos
	MetricMemoryPressure                      // MemoryStallSomeNanos, MemoryStallFullNanos
	MetricIOPressure                          // IOStallSomeNanos, IOStallFullNanos
	MetricOOMKills                            // OOMKills
	MetricThreadsPeak                         // ThreadsPeak
	metricEnd
)

// AllMetrics is the set of every metric a Sample can carry.
const AllMetrics = metricEnd - 1

// MetricPressure is the three pressure stall (PSI) metrics.
const MetricPressure = MetricCPUPressure | MetricMemoryPressure | MetricIOPressure

var metricNames = [...]string{
	"cpu", "memory", "memory_rss", "memory_peak", "memory_limit",
	"cpus_allocated", "processes", "threads", "io",
	"memory_shmem", "memory_mapped_file", "memory_working_set",
	"cpu_pressure", "memory_pressure", "io_pressure", "oom_kills", "threads_peak",
}

// String returns the metric's name as used in missing_metrics, or a
// "+"-joined list for a set.
func (m Metric) String() string {
	var names []string
	for i, n := range metricNames {
		if m&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, "+")
}

// Names returns the names of the metrics in the set, in a fixed order.
func (m Metric) Names() []string {
	var names []string
	for i, n := range metricNames {
		if m&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return names
}

// Sample is one reading of a job's usage on this node. Cumulative counters
// (CPU, I/O) are totals since the job's cgroup was created; gauges are values
// at Time. A field whose bit is set in Missing was not read and must not be
// used (it is not a zero).
type Sample struct {
	Time time.Time

	CPUUsageNanos   uint64 // cumulative CPU time of all the job's processes on this node
	MemoryUsedBytes uint64 // memory charged to the job's cgroup now (includes page cache)
	MemoryRSSBytes  uint64 // anonymous (resident, non-cache) memory now
	// MemoryShmemBytes is shared memory charged to the cgroup now: tmpfs
	// and /dev/shm files, SysV and POSIX shared memory (page cache, not
	// RSS, but not reclaimable without swap).
	MemoryShmemBytes uint64
	// MemoryMappedFileBytes is file-backed memory (shared memory included)
	// mapped into the job's processes now.
	MemoryMappedFileBytes uint64
	// MemoryWorkingSetBytes is MemoryUsedBytes minus the inactive file
	// cache the kernel reclaims first: what the job needs under its limit.
	MemoryWorkingSetBytes uint64
	MemoryPeakBytes       uint64 // kernel-tracked high-water mark of MemoryUsedBytes
	MemoryLimitBytes      uint64 // the cgroup's memory limit (0 and missing when unlimited)
	CPUsAllocated         uint32 // CPUs in the job's cpuset on this node
	Processes             uint32 // processes in the job's cgroups now
	Threads               uint32 // threads of those processes now
	IOReadBytes           uint64 // cumulative bytes read from storage by the job's processes
	IOWriteBytes          uint64 // cumulative bytes written to storage by the job's processes

	// Pressure stall information (cgroup v2 cpu.pressure, memory.pressure,
	// io.pressure at job level: the "total=" of their "some" and "full"
	// lines, microseconds × 1000): cumulative time in which at least one
	// of the job's tasks (some), or all of its non-idle tasks at once
	// (full), waited for a CPU, for memory (reclaim, swap-in, thrashing)
	// or for I/O. Wall-clock time, not summed over tasks or CPUs.
	CPUStallSomeNanos    uint64
	MemoryStallSomeNanos uint64
	MemoryStallFullNanos uint64
	IOStallSomeNanos     uint64
	IOStallFullNanos     uint64
	// OOMKills is the cumulative number of the job's processes the kernel
	// killed for memory (cgroup v2 memory.events oom_kill at job level).
	OOMKills uint64
	// ThreadsPeak is the kernel's high-water mark of the job's threads
	// (tasks): the largest pids.peak of the step_*/user cgroups now there,
	// counted like Threads (slurmstepd excluded). Each step's mark is its
	// own, so this is a floor of the job's peak, never more than it.
	ThreadsPeak uint32

	// Missing is the set of metrics not read in this pass.
	Missing Metric

	// GPUs are the GPUs the job holds (or, when no allocation is known,
	// runs on) on this node, one entry per device read in this pass; nil
	// when no GPU collector runs. Its storage is reused between passes.
	GPUs []GPUSample

	// Energy is the node-wide energy reading of the pass (the energy
	// collector); all of it is missing when no energy collector runs.
	// It is not part of Missing: a node reading says nothing about
	// whether the job is still there.
	Energy energy.Reading
}

// GPUSample is one GPU's reading in a pass, with what the job does on it.
type GPUSample struct {
	Device gpu.Device
	// Held: the job's allocation names the device (false when the job was
	// attributed the device only because its processes run there).
	Held    bool
	Reading gpu.Reading
	// ProcessesKnown: the device's processes could be listed this pass;
	// when false, JobProcesses, JobMemory* and OtherProcesses are unknown
	// (not zero).
	ProcessesKnown bool
	// JobProcesses is the number of the job's processes on the device.
	JobProcesses uint32
	// JobMemoryBytes is the device memory those processes hold, valid when
	// JobMemoryKnown.
	JobMemoryBytes uint64
	JobMemoryKnown bool
	// OtherProcesses counts processes on the device that are not the job's.
	OtherProcesses uint32
}

// Reset clears a sample for reuse, marking everything missing until a
// collector fills it in.
func (s *Sample) Reset(t time.Time) {
	gpus := s.GPUs[:0]
	*s = Sample{Time: t, Missing: AllMetrics, GPUs: gpus, Energy: energy.Reading{Missing: energy.AllParts}}
}

// Has reports whether every metric in m was read.
func (s *Sample) Has(m Metric) bool { return s.Missing&m == 0 }

// Collector reads one source for one job.
type Collector interface {
	// Name identifies the collector in logs and in the
	// jobsight_agent_collector_errors_total{collector} metric.
	Name() string
	// Collect fills in the fields of s this collector provides and clears
	// their bits in s.Missing. A field it could not read stays missing; the
	// returned error says why (wrapping os.ErrNotExist when the job's cgroup
	// or process is gone).
	Collect(s *Sample) error
	// Close releases files kept open between passes.
	Close() error
}
