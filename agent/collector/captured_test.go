package collector

import (
	"testing"
	"time"
)

// The tree captured from a real Slurm 22.05 job (testdata/
// cgroupv1-slurm-captured/README.md): 64 job processes in step_batch/
// task_0, and the step's slurmstepd in step_batch itself, which is not a
// job process.
func TestCapturedSlurmV1JobCountsOnlyTheJobsProcesses(t *testing.T) {
	t.Parallel()
	const dir = "testdata/cgroupv1-slurm-captured"
	set, err := New(Config{CgroupRoot: dir + "/sys/fs/cgroup", ProcRoot: dir + "/proc", Version: VersionV1},
		Target{JobID: 4258, UID: 0, Host: "vm"})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	var s Sample
	s.Reset(time.Now())
	_ = set.Collect(&s) // the captured processes' files may lack fields a live kernel has
	if !s.Has(MetricProcesses) || s.Processes != 64 {
		t.Errorf("processes = %d (missing %v), want the job's 64 (slurmstepd not counted)", s.Processes, s.Missing)
	}
	if !s.Has(MetricMemory) || s.MemoryUsedBytes == 0 || !s.Has(MetricCPUsAllocated) || s.CPUsAllocated != 2 {
		t.Errorf("memory %d cpus %d missing %v", s.MemoryUsedBytes, s.CPUsAllocated, s.Missing)
	}
	// memory.stat of the capture: total_rss 21544960, total_shmem 0,
	// total_mapped_file 0, total_inactive_file 21065728 (the dd's 20 MiB).
	if !s.Has(memStatMetrics) || s.MemoryRSSBytes != 21544960 || s.MemoryShmemBytes != 0 || s.MemoryMappedFileBytes != 0 ||
		s.MemoryWorkingSetBytes != s.MemoryUsedBytes-21065728 {
		t.Errorf("rss %d shmem %d mapped %d working set %d (usage %d), missing %v",
			s.MemoryRSSBytes, s.MemoryShmemBytes, s.MemoryMappedFileBytes, s.MemoryWorkingSetBytes, s.MemoryUsedBytes, s.Missing)
	}
}

// BenchmarkCollectCaptured is one sampling pass over the tree captured from
// a real Slurm job (64 processes, files opened once and re-read).
func BenchmarkCollectCaptured(b *testing.B) {
	const dir = "testdata/cgroupv1-slurm-captured"
	set, err := New(Config{CgroupRoot: dir + "/sys/fs/cgroup", ProcRoot: dir + "/proc", Version: VersionV1},
		Target{JobID: 4258, UID: 0, Host: "vm"})
	if err != nil {
		b.Fatal(err)
	}
	defer set.Close()
	var s Sample
	b.ReportAllocs()
	for b.Loop() {
		s.Reset(s.Time)
		_ = set.Collect(&s)
	}
	if s.Processes != 64 {
		b.Fatalf("processes %d", s.Processes)
	}
}
