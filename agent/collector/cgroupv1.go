package collector

import (
	"fmt"
	"path/filepath"

	"github.com/jobsight/jobsight/internal/intconv"
)

// v1Unlimited is the smallest memory.limit_in_bytes treated as "no
// limit": the kernel reports an unset limit as PAGE_COUNTER_MAX pages
// (9223372036854771712 with 4 KiB pages), never a real size.
const v1Unlimited = 1 << 62

// CgroupV1 reads a job's cgroup v1 hierarchies (also on hybrid hosts):
//
//	cpuacct.usage                CPUUsageNanos
//	memory.usage_in_bytes        MemoryUsedBytes
//	memory.stat total_rss        MemoryRSSBytes (includes transparent huge pages)
//	memory.stat total_shmem      MemoryShmemBytes
//	memory.stat total_mapped_file MemoryMappedFileBytes
//	memory.usage_in_bytes − memory.stat total_inactive_file
//	                             MemoryWorkingSetBytes
//	memory.max_usage_in_bytes    MemoryPeakBytes
//	memory.limit_in_bytes        MemoryLimitBytes (missing when unlimited)
//	cpuset.cpus                  CPUsAllocated
//	step/task cgroup.procs       Processes (and the pids for the proc collector)
//	step/task tasks              Threads
//
// Slurm creates no blkio hierarchy for jobs, so I/O comes from the proc
// collector.
type CgroupV1 struct {
	dirs JobDirs
	cgroupJob

	usage, memUsage, memStat, memMax, memLimit, cpus kernFile

	buf []byte
}

// NewCgroupV1 opens the cgroup v1 files of a Slurm job found with
// FindJobDirs. rescanEvery is how often (in passes) the step and task
// cgroups are listed again even when nothing seems to have changed (0:
// only on change).
func NewCgroupV1(dirs JobDirs, rescanEvery int) (*CgroupV1, error) {
	return newCgroupV1(dirs, layoutSlurmV1, rescanEvery)
}

func newCgroupV1(dirs JobDirs, l layout, rescanEvery int) (*CgroupV1, error) {
	procsDir := dirs.procsDir()
	if procsDir == "" {
		return nil, fmt.Errorf("cgroup v1 collector: no memory, cpuacct or cpuset directory given")
	}
	ls, err := newLeafSet(procsDir, l, true, rescanEvery)
	if err != nil {
		return nil, fmt.Errorf("cgroup v1 collector: %w", err)
	}
	c := &CgroupV1{dirs: dirs, cgroupJob: cgroupJob{leaves: ls}, buf: newBuf()}
	open := func(dir, name string) kernFile {
		if dir == "" {
			return kernFile{path: name, fd: -1}
		}
		return openKernFile(filepath.Join(dir, name))
	}
	c.usage = open(dirs.CPUAcct, "cpuacct.usage")
	c.memUsage = open(dirs.Memory, "memory.usage_in_bytes")
	c.memStat = open(dirs.Memory, "memory.stat")
	c.memMax = open(dirs.Memory, "memory.max_usage_in_bytes")
	c.memLimit = open(dirs.Memory, "memory.limit_in_bytes")
	c.cpus = open(dirs.CPUSet, "cpuset.cpus")
	return c, nil
}

// Name implements Collector.
func (c *CgroupV1) Name() string { return "cgroupv1" }

// Collect implements Collector.
func (c *CgroupV1) Collect(s *Sample) error {
	var errs errList
	if err := c.refreshLeaves(c.Name(), &errs); err != nil {
		return err
	}
	if v, ok := readUint(&c.usage, &c.buf, &errs); ok {
		s.CPUUsageNanos = v
		s.Missing &^= MetricCPU
	}
	if v, ok := readUint(&c.memUsage, &c.buf, &errs); ok {
		s.MemoryUsedBytes = v
		s.Missing &^= MetricMemory
	}
	readMemStat(&c.memStat, &memStatV1, s, &c.buf, &errs)
	if v, ok := readUint(&c.memMax, &c.buf, &errs); ok {
		s.MemoryPeakBytes = v
		s.Missing &^= MetricMemoryPeak
	}
	if v, ok := readUint(&c.memLimit, &c.buf, &errs); ok && v < v1Unlimited {
		s.MemoryLimitBytes = v
		s.Missing &^= MetricMemoryLimit
	}
	if v, ok := readCPUs(&c.cpus, &c.buf, &errs); ok {
		s.CPUsAllocated = v
		s.Missing &^= MetricCPUsAllocated
	}
	c.pids = c.pids[:0]
	{
		pids, threads, threadsOK, err := c.leaves.readPIDs(c.pids, &c.buf)
		c.pids = pids
		if err != nil {
			errs.add(err)
		} else {
			s.Processes = intconv.Uint32(len(pids))
			s.Missing &^= MetricProcesses
		}
		if threadsOK {
			s.Threads = threads
			s.Missing &^= MetricThreads
		}
	}
	return errs.err(c.Name())
}

// Close implements Collector.
func (c *CgroupV1) Close() error {
	for _, f := range []*kernFile{&c.usage, &c.memUsage, &c.memStat, &c.memMax, &c.memLimit, &c.cpus} {
		f.close()
	}
	c.leaves.close()
	return nil
}
