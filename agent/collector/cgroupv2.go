package collector

import (
	"fmt"
	"path/filepath"

	"github.com/jobsight/jobsight/internal/intconv"
)

// CgroupV2 reads a job's cgroup in the unified (v2) hierarchy:
//
//	cpu.stat usage_usec          CPUUsageNanos
//	memory.current               MemoryUsedBytes
//	memory.stat anon             MemoryRSSBytes
//	memory.stat shmem            MemoryShmemBytes
//	memory.stat file_mapped      MemoryMappedFileBytes
//	memory.current − memory.stat inactive_file
//	                             MemoryWorkingSetBytes
//	memory.peak                  MemoryPeakBytes (Linux >= 5.19; missing before)
//	memory.max                   MemoryLimitBytes (missing when "max")
//	cpuset.cpus.effective        CPUsAllocated
//	io.stat rbytes/wbytes        IOReadBytes/IOWriteBytes, summed over devices (when the io controller is on)
//	step_*/user/.../cgroup.procs Processes (and the pids for the proc collector)
//	step_*/user/pids.current     Threads (when the pids controller is on)
//	step_*/user/pids.peak        ThreadsPeak, the largest of the steps' (Linux >= 6.1)
//	cpu.pressure some total      CPUStallSomeNanos (Linux >= 4.20 with CONFIG_PSI)
//	memory.pressure some/full    MemoryStallSomeNanos/MemoryStallFullNanos
//	io.pressure some/full        IOStallSomeNanos/IOStallFullNanos
//	memory.events oom_kill       OOMKills (Linux >= 4.13; hierarchical from 5.2)
//
// Counters are read at job level, so they include steps that have ended
// (and slurmstepd's own small usage); processes and threads exclude
// slurmstepd (step_*/slurm). A pressure file that is absent (no
// CONFIG_PSI, psi=0 on Linux 6.1 and later, cgroup_disable=pressure) or
// answers EOPNOTSUPP (psi=0 before 6.1) leaves its metric missing without
// an error.
type CgroupV2 struct {
	dir string
	cgroupJob

	cpuStat, memCurrent, memStat, memPeak, memMax, cpus, ioStat kernFile
	cpuPressure, memPressure, ioPressure, memEvents             kernFile

	buf []byte
}

// NewCgroupV2 opens the files of a Slurm job's v2 cgroup dir (as found by
// FindJobDirs). rescanEvery is as for NewCgroupV1.
func NewCgroupV2(dir string, rescanEvery int) (*CgroupV2, error) {
	return newCgroupV2(dir, layoutSlurmV2, rescanEvery)
}

func newCgroupV2(dir string, l layout, rescanEvery int) (*CgroupV2, error) {
	ls, err := newLeafSet(dir, l, false, rescanEvery)
	if err != nil {
		return nil, fmt.Errorf("cgroup v2 collector: %w", err)
	}
	c := &CgroupV2{dir: dir, cgroupJob: cgroupJob{leaves: ls}, buf: newBuf()}
	open := func(name string) kernFile { return openKernFile(filepath.Join(dir, name)) }
	c.cpuStat = open("cpu.stat")
	c.memCurrent = open("memory.current")
	c.memStat = open("memory.stat")
	c.memPeak = open("memory.peak")
	c.memMax = open("memory.max")
	c.cpus = open("cpuset.cpus.effective")
	c.ioStat = open("io.stat")
	c.cpuPressure = open("cpu.pressure")
	c.memPressure = open("memory.pressure")
	c.ioPressure = open("io.pressure")
	c.memEvents = open("memory.events")
	return c, nil
}

// Name implements Collector.
func (c *CgroupV2) Name() string { return "cgroupv2" }

// Collect implements Collector.
func (c *CgroupV2) Collect(s *Sample) error {
	var errs errList
	if err := c.refreshLeaves(c.Name(), &errs); err != nil {
		return err
	}
	if v, ok := readKey(&c.cpuStat, "usage_usec", &c.buf, &errs); ok {
		s.CPUUsageNanos = v * 1000
		s.Missing &^= MetricCPU
	}
	if v, ok := readUint(&c.memCurrent, &c.buf, &errs); ok {
		s.MemoryUsedBytes = v
		s.Missing &^= MetricMemory
	}
	readMemStat(&c.memStat, &memStatV2, s, &c.buf, &errs)
	if v, ok := readUint(&c.memPeak, &c.buf, &errs); ok {
		s.MemoryPeakBytes = v
		s.Missing &^= MetricMemoryPeak
	}
	if b, ok := readFile(&c.memMax, &c.buf, &errs); ok {
		v, unlimited, err := parseUintOrMax(b)
		switch {
		case err != nil:
			errs.add(fmt.Errorf("%s: %w", c.memMax.path, err))
		case !unlimited:
			s.MemoryLimitBytes = v
			s.Missing &^= MetricMemoryLimit
		}
	}
	if v, ok := readCPUs(&c.cpus, &c.buf, &errs); ok {
		s.CPUsAllocated = v
		s.Missing &^= MetricCPUsAllocated
	}
	if b, ok := readFile(&c.ioStat, &c.buf, &errs); ok {
		r, w, err := parseIOStat(b)
		if err != nil {
			errs.add(fmt.Errorf("%s: %w", c.ioStat.path, err))
		} else {
			s.IOReadBytes, s.IOWriteBytes = r, w
			s.Missing &^= MetricIO
		}
	}
	if some, _, ok := readPressure(&c.cpuPressure, false, &c.buf, &errs); ok {
		s.CPUStallSomeNanos = some
		s.Missing &^= MetricCPUPressure
	}
	if some, full, ok := readPressure(&c.memPressure, true, &c.buf, &errs); ok {
		s.MemoryStallSomeNanos, s.MemoryStallFullNanos = some, full
		s.Missing &^= MetricMemoryPressure
	}
	if some, full, ok := readPressure(&c.ioPressure, true, &c.buf, &errs); ok {
		s.IOStallSomeNanos, s.IOStallFullNanos = some, full
		s.Missing &^= MetricIOPressure
	}
	// Before Linux 4.13 memory.events has no oom_kill line: missing.
	if v, ok := readKeyOf(&c.memEvents, "oom_kill", false, &c.buf, &errs); ok {
		s.OOMKills = v
		s.Missing &^= MetricOOMKills
	}
	c.pids = c.pids[:0]
	{
		pids, _, _, err := c.leaves.readPIDs(c.pids, &c.buf)
		c.pids = pids
		if err != nil {
			errs.add(err)
		} else {
			s.Processes = intconv.Uint32(len(pids))
			s.Missing &^= MetricProcesses
		}
		n, ok, err := c.leaves.userThreads(&c.buf)
		errs.add(err)
		if ok && n <= 1<<32-1 {
			s.Threads = uint32(n)
			s.Missing &^= MetricThreads
		}
		n, ok, err = c.leaves.userThreadsPeak(&c.buf)
		errs.add(err)
		if ok && n <= 1<<32-1 {
			s.ThreadsPeak = uint32(n)
			s.Missing &^= MetricThreadsPeak
		}
	}
	return errs.err(c.Name())
}

// Close implements Collector.
func (c *CgroupV2) Close() error {
	for _, f := range []*kernFile{&c.cpuStat, &c.memCurrent, &c.memStat, &c.memPeak, &c.memMax, &c.cpus, &c.ioStat,
		&c.cpuPressure, &c.memPressure, &c.ioPressure, &c.memEvents} {
		f.close()
	}
	c.leaves.close()
	return nil
}
