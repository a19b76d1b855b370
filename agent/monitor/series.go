package monitor

import (
	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/internal/store/promremote"
	"math"
)

// JobMetric is one Prometheus series the agent writes for a job, labelled
// {cluster, job_id, node} only (DESIGN.md: user, account and partition live
// in Elasticsearch).
type JobMetric struct {
	Name string
	Type string // counter or gauge
	Help string
	need collector.Metric
	get  func(*collector.Sample) float64
}

// JobMetrics are the job series, in base units. docs/metrics.md documents
// them and a test runs promtool over their exposition.
var JobMetrics = []JobMetric{
	{"jobsight_job_cpu_usage_seconds_total", "counter", "CPU time used by the job's processes on this node.",
		collector.MetricCPU, func(s *collector.Sample) float64 { return float64(s.CPUUsageNanos) / 1e9 }},
	{"jobsight_job_memory_used_bytes", "gauge", "Memory charged to the job's cgroup on this node, page cache included.",
		collector.MetricMemory, func(s *collector.Sample) float64 { return float64(s.MemoryUsedBytes) }},
	{"jobsight_job_memory_rss_bytes", "gauge", "Anonymous resident memory of the job on this node.",
		collector.MetricMemoryRSS, func(s *collector.Sample) float64 { return float64(s.MemoryRSSBytes) }},
	{"jobsight_job_memory_working_set_bytes", "gauge", "Memory charged to the job's cgroup on this node less its inactive file cache: what the job needs under its limit.",
		collector.MetricMemoryWorkingSet, func(s *collector.Sample) float64 { return float64(s.MemoryWorkingSetBytes) }},
	{"jobsight_job_memory_shmem_bytes", "gauge", "Shared memory (tmpfs, /dev/shm, SysV and POSIX shm) charged to the job's cgroup on this node.",
		collector.MetricMemoryShmem, func(s *collector.Sample) float64 { return float64(s.MemoryShmemBytes) }},
	{"jobsight_job_memory_limit_bytes", "gauge", "Memory limit of the job's cgroup on this node.",
		collector.MetricMemoryLimit, func(s *collector.Sample) float64 { return float64(s.MemoryLimitBytes) }},
	{"jobsight_job_allocated_cpus", "gauge", "CPUs in the job's cpuset on this node.",
		collector.MetricCPUsAllocated, func(s *collector.Sample) float64 { return float64(s.CPUsAllocated) }},
	{"jobsight_job_processes", "gauge", "Processes of the job on this node.",
		collector.MetricProcesses, func(s *collector.Sample) float64 { return float64(s.Processes) }},
	{"jobsight_job_threads", "gauge", "Threads of the job on this node.",
		collector.MetricThreads, func(s *collector.Sample) float64 { return float64(s.Threads) }},
	{"jobsight_job_io_read_bytes_total", "counter", "Bytes the job's processes read from storage on this node.",
		collector.MetricIO, func(s *collector.Sample) float64 { return float64(s.IOReadBytes) }},
	{"jobsight_job_io_written_bytes_total", "counter", "Bytes the job's processes wrote to storage on this node.",
		collector.MetricIO, func(s *collector.Sample) float64 { return float64(s.IOWriteBytes) }},
	{"jobsight_job_cpu_pressure_stalled_seconds_total", "counter", "Time at least one of the job's tasks on this node waited for a CPU (cgroup cpu.pressure some).",
		collector.MetricCPUPressure, func(s *collector.Sample) float64 { return float64(s.CPUStallSomeNanos) / 1e9 }},
	{"jobsight_job_memory_pressure_stalled_seconds_total", "counter", "Time at least one of the job's tasks on this node waited for memory: reclaim, refaults, swap-in (cgroup memory.pressure some).",
		collector.MetricMemoryPressure, func(s *collector.Sample) float64 { return float64(s.MemoryStallSomeNanos) / 1e9 }},
	{"jobsight_job_memory_pressure_full_stalled_seconds_total", "counter", "Time all of the job's non-idle tasks on this node waited for memory at once (cgroup memory.pressure full).",
		collector.MetricMemoryPressure, func(s *collector.Sample) float64 { return float64(s.MemoryStallFullNanos) / 1e9 }},
	{"jobsight_job_io_pressure_stalled_seconds_total", "counter", "Time at least one of the job's tasks on this node waited for I/O (cgroup io.pressure some).",
		collector.MetricIOPressure, func(s *collector.Sample) float64 { return float64(s.IOStallSomeNanos) / 1e9 }},
	{"jobsight_job_io_pressure_full_stalled_seconds_total", "counter", "Time all of the job's non-idle tasks on this node waited for I/O at once (cgroup io.pressure full).",
		collector.MetricIOPressure, func(s *collector.Sample) float64 { return float64(s.IOStallFullNanos) / 1e9 }},
}

// Point is one sampled value of a job metric.
type Point = promremote.Sample

// Buffer holds the points sampled since the last push, one slice per job
// metric, reused between pushes so steady-state sampling does not allocate.
type Buffer struct {
	Points [][]Point // indexed like JobMetrics
	GPUs   []gpuBuffer
	// ever says which job metrics have had a point, for the staleness
	// markers at the job's end.
	ever []bool
	// Energy holds the energy points (indexed like EnergyMetrics; nil
	// until the first), energyEver which have had one.
	Energy     [][]Point
	energyEver []bool
}

// NewBuffer makes a buffer sized for n samples per push.
func NewBuffer(n int) *Buffer {
	b := &Buffer{Points: make([][]Point, len(JobMetrics)), ever: make([]bool, len(JobMetrics))}
	for i := range b.Points {
		b.Points[i] = make([]Point, 0, n)
	}
	return b
}

// Add appends the sample's values for every metric it carries.
func (b *Buffer) Add(s *collector.Sample) {
	ts := s.Time.UnixMilli()
	for i := range JobMetrics {
		m := &JobMetrics[i]
		if s.Has(m.need) {
			b.Points[i] = append(b.Points[i], Point{TimestampMs: ts, Value: m.get(s)})
			b.ever[i] = true
		}
	}
	b.addGPUs(s)
}

// Len is the number of points held.
func (b *Buffer) Len() int {
	n := 0
	for _, p := range b.Points {
		n += len(p)
	}
	for _, g := range b.GPUs {
		for _, p := range g.points {
			n += len(p)
		}
	}
	for _, p := range b.Energy {
		n += len(p)
	}
	return n
}

// Reset empties the buffer, keeping its capacity.
func (b *Buffer) Reset() {
	for i := range b.Points {
		b.Points[i] = b.Points[i][:0]
	}
	for _, g := range b.GPUs {
		for i := range g.points {
			g.points[i] = g.points[i][:0]
		}
	}
	for i := range b.Energy {
		b.Energy[i] = b.Energy[i][:0]
	}
}

// StaleNaN is Prometheus' staleness marker: a sample with this value ends
// a series at once, so instant queries (running jobs, hogging alerts) stop
// seeing a job when it ends instead of five minutes later.
var StaleNaN = math.Float64frombits(0x7ff0000000000002)

// staleSeries returns a staleness marker at tsMs for every job and GPU
// series that has had a point, with the job's labels.
func (b *Buffer) staleSeries(labels []Label, tsMs int64) []Series {
	var out []Series
	mark := []Point{{TimestampMs: tsMs, Value: StaleNaN}}
	for i, ever := range b.ever {
		if ever {
			out = append(out, Series{Name: JobMetrics[i].Name, Labels: labels, Samples: mark})
		}
	}
	for i, ever := range b.energyEver {
		if ever {
			out = append(out, Series{Name: EnergyMetrics[i].Name, Labels: labels, Samples: mark})
		}
	}
	for k := range b.GPUs {
		gb := &b.GPUs[k]
		ls := gb.labels(labels)
		for i, ever := range gb.ever {
			if ever {
				out = append(out, Series{Name: GPUMetrics[i].Name, Labels: ls, Samples: mark})
			}
		}
	}
	return out
}
