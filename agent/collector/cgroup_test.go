package collector

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func checkSample(t *testing.T, s Sample, want Sample) {
	t.Helper()
	if s.Missing != want.Missing {
		t.Errorf("missing = %q, want %q", s.Missing, want.Missing)
	}
	want.Time = s.Time
	want.Energy = s.Energy // the node's energy is not the cgroup collectors'
	if !reflect.DeepEqual(s, want) {
		t.Errorf("sample =\n %+v\nwant\n %+v", s, want)
	}
}

func TestCgroupV1Fixture(t *testing.T) {
	for _, v := range []Version{VersionV1, VersionHybrid} {
		t.Run(v.String(), func(t *testing.T) {
			t.Parallel()
			set, e := newFixtureSet(t, fixtureV1, v)
			for pass := 0; pass < 3; pass++ { // re-reads give the same values
				s, err := collect(t, set)
				if err != nil {
					t.Fatalf("pass %d: %v", pass, err)
				}
				checkSample(t, s, Sample{
					CPUUsageNanos: e.CPUUsageNanos, MemoryUsedBytes: e.MemoryUsed, MemoryRSSBytes: e.MemoryRSS,
					MemoryShmemBytes: e.MemoryShmem, MemoryMappedFileBytes: e.MemoryMapped, MemoryWorkingSetBytes: e.MemoryWorkSet,
					MemoryPeakBytes: e.MemoryPeak, MemoryLimitBytes: e.MemoryLimit, CPUsAllocated: e.CPUs,
					Processes: e.Processes, Threads: e.Threads, IOReadBytes: e.ProcReadBytes, IOWriteBytes: e.ProcWriteBytes,
					Missing: v1Lacks,
				})
			}
		})
	}
}

func TestCgroupV2Fixture(t *testing.T) {
	t.Parallel()
	set, e := newFixtureSet(t, fixtureV2, VersionV2)
	s, err := collect(t, set)
	if err != nil {
		t.Fatal(err)
	}
	// Processes and threads exclude slurmstepd in step_*/slurm; I/O comes
	// from io.stat; the pressure totals are the files' microseconds in
	// nanoseconds, the threads' peak the largest step_*/user/pids.peak.
	checkSample(t, s, fullV2Sample(e))
	if e.CPUStallSome == 0 || e.IOStallFull == 0 || e.OOMKills == 0 || e.ThreadsPeak <= e.Threads {
		t.Errorf("fixture lacks pressure, OOM kills or a threads peak above the threads now: %+v", e)
	}
	got := map[int32]bool{}
	for _, p := range set[0].(PIDSource).PIDs() {
		got[p] = true
	}
	if len(got) != len(e.PIDs) {
		t.Errorf("pids: got %d, want %d", len(got), len(e.PIDs))
	}
	for _, p := range e.PIDs {
		if !got[int32(p)] {
			t.Errorf("pid %d not listed", p)
		}
	}
}

// Without the io and pids controllers, and on kernels without memory.peak,
// I/O and threads come from /proc and the peaks are missing, not zero.
func TestCgroupV2WithoutIOAndPids(t *testing.T) {
	t.Parallel()
	dir := copyTree(t, fixtureV2)
	job := filepath.Join(dir, "cgroup/system.slice/slurmstepd.scope/job_4242")
	removeV2IOAndPids(t, dir)
	if err := os.Remove(filepath.Join(job, "memory.peak")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(job, "memory.max"), "max\n")
	set, e := newFixtureSet(t, dir, VersionV2)
	s, err := collect(t, set)
	if err != nil {
		t.Fatal(err)
	}
	want := e.v2Extras(Sample{
		CPUUsageNanos: e.CPUUsageNanos, MemoryUsedBytes: e.MemoryUsed, MemoryRSSBytes: e.MemoryRSS,
		MemoryShmemBytes: e.MemoryShmem, MemoryMappedFileBytes: e.MemoryMapped, MemoryWorkingSetBytes: e.MemoryWorkSet,
		CPUsAllocated: e.CPUs, Processes: e.Processes, Threads: e.Threads,
		IOReadBytes: e.ProcReadBytes, IOWriteBytes: e.ProcWriteBytes,
		Missing: MetricMemoryPeak | MetricMemoryLimit | MetricThreadsPeak,
	})
	want.ThreadsPeak = 0
	checkSample(t, s, want)
}

func TestCgroupV1UnlimitedMemory(t *testing.T) {
	t.Parallel()
	dir := copyTree(t, fixtureV1)
	writeFile(t, filepath.Join(dir, "cgroup/memory/slurm_node01/uid_1000/job_4242/memory.limit_in_bytes"), "9223372036854771712\n")
	set, _ := newFixtureSet(t, dir, VersionV1)
	s, err := collect(t, set)
	if err != nil {
		t.Fatal(err)
	}
	if s.Missing != MetricMemoryLimit|v1Lacks || s.MemoryLimitBytes != 0 {
		t.Errorf("unlimited: missing %q, limit %d; want only memory_limit missing", s.Missing, s.MemoryLimitBytes)
	}
}

func TestVanishingJob(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fixture string
		v       Version
		jobDirs []string
		job     string
	}{
		{fixtureV1, VersionV1, []string{"memory", "cpuacct", "cpuset", "freezer"}, "job_4242"},
		{fixtureV2, VersionV2, []string{"system.slice/slurmstepd.scope"}, "job_4242"},
		{fixtureV2SLUID, VersionV2, []string{"system.slice/slurmstepd.scope"}, fixtureSLUID},
	} {
		t.Run(tc.v.String()+"/"+tc.job, func(t *testing.T) {
			dir := copyTree(t, tc.fixture)
			set, _ := newFixtureSet(t, dir, tc.v)
			if _, err := collect(t, set); err != nil {
				t.Fatal(err)
			}
			for _, d := range tc.jobDirs {
				matches, _ := filepath.Glob(filepath.Join(dir, "cgroup", d, "*"+tc.job))
				matches2, _ := filepath.Glob(filepath.Join(dir, "cgroup", d, "*/*/"+tc.job))
				for _, m := range append(matches, matches2...) {
					if err := os.RemoveAll(m); err != nil {
						t.Fatal(err)
					}
				}
			}
			for pass := 0; pass < 2; pass++ {
				s, err := collect(t, set)
				if !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("pass %d after removal: err = %v, want os.ErrNotExist", pass, err)
				}
				if s.Has(MetricCPU) || s.Has(MetricProcesses) {
					t.Errorf("vanished job reported values: %+v", s)
				}
			}
			if _, err := New(fixtureConfig(dir, tc.v), loadExpected(t, dir).target()); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("New on a vanished job: err = %v, want os.ErrNotExist", err)
			}
		})
	}
}

// removeLine rewrites a file without the line equal to pid's.
func removeLine(t *testing.T, path, line string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l != line {
			keep = append(keep, l)
		}
	}
	writeFile(t, path, strings.Join(keep, "\n")+"\n")
}

// With a cap on the processes whose files stay open (8 of 64; none at
// all) the totals are the same: processes beyond it are read by path.
func TestVanishingAndNewPID(t *testing.T) {
	for _, maxOpen := range []int{0, 8, -1} {
		t.Run(fmt.Sprint("max_open=", maxOpen), func(t *testing.T) {
			t.Parallel()
			testVanishingAndNewPID(t, maxOpen)
		})
	}
}

func testVanishingAndNewPID(t *testing.T, maxOpen int) {
	dir := copyTree(t, fixtureV1)
	e := loadExpected(t, dir)
	cfg := fixtureConfig(dir, VersionV1)
	cfg.MaxOpenProcesses = maxOpen
	set, err := New(cfg, e.target())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	if _, err := collect(t, set); err != nil {
		t.Fatal(err)
	}
	task := filepath.Join(dir, "cgroup/memory/slurm_node01/uid_1000/job_4242/step_0/task_3")
	b, _ := os.ReadFile(filepath.Join(task, "cgroup.procs"))
	leader := strings.SplitN(string(b), "\n", 2)[0]
	// The task's leader (8 threads) exits: its I/O stays in the job total.
	removeLine(t, filepath.Join(task, "cgroup.procs"), leader)
	for i := 0; i < 8; i++ {
		removeLine(t, filepath.Join(task, "tasks"), fmt.Sprint(mustAtoi(t, leader)+i))
	}
	os.RemoveAll(filepath.Join(dir, "proc", leader))
	s, err := collect(t, set)
	if err != nil {
		t.Fatal(err)
	}
	if s.Processes != e.Processes-1 || s.Threads != e.Threads-8 {
		t.Errorf("after exit: processes %d threads %d, want %d and %d", s.Processes, s.Threads, e.Processes-1, e.Threads-8)
	}
	if s.IOReadBytes != e.ProcReadBytes || s.IOWriteBytes != e.ProcWriteBytes {
		t.Errorf("after exit: io %d/%d, want the exited process's bytes kept: %d/%d", s.IOReadBytes, s.IOWriteBytes, e.ProcReadBytes, e.ProcWriteBytes)
	}
	// A new process appears in the task.
	const newPID = 31000
	os.MkdirAll(filepath.Join(dir, "proc", fmt.Sprint(newPID)), 0o755)
	writeFile(t, filepath.Join(dir, "proc", fmt.Sprint(newPID), "stat"),
		fmt.Sprintf("%d (new one) R 1 1 1 0 -1 0 0 0 0 0 5 5 0 0 20 0 3 0 999999 1000 10 0\n", newPID))
	writeFile(t, filepath.Join(dir, "proc", fmt.Sprint(newPID), "io"),
		"rchar: 1\nwchar: 1\nsyscr: 1\nsyscw: 1\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n")
	f, _ := os.OpenFile(filepath.Join(task, "cgroup.procs"), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "%d\n", newPID)
	f.Close()
	s, err = collect(t, set)
	if err != nil {
		t.Fatal(err)
	}
	if s.Processes != e.Processes || s.IOReadBytes != e.ProcReadBytes+4096 || s.IOWriteBytes != e.ProcWriteBytes+8192 {
		t.Errorf("after new pid: processes %d io %d/%d, want %d and %d/%d", s.Processes, s.IOReadBytes, s.IOWriteBytes,
			e.Processes, e.ProcReadBytes+4096, e.ProcWriteBytes+8192)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	v, err := parseUint([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return int(v)
}

// A new step appears and an old one ends: the collector notices through the
// directories' link counts, without waiting for a periodic rescan.
func TestStepsComeAndGo(t *testing.T) {
	t.Parallel()
	dir := copyTree(t, fixtureV1)
	cfg := fixtureConfig(dir, VersionV1)
	cfg.RescanEvery = -1
	set, err := New(cfg, Target{JobID: 4242, UID: 1000, Host: "node01"})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	e := loadExpected(t, dir)
	if _, err := collect(t, set); err != nil {
		t.Fatal(err)
	}
	job := filepath.Join(dir, "cgroup/memory/slurm_node01/uid_1000/job_4242")
	if err := os.RemoveAll(filepath.Join(job, "step_extern")); err != nil {
		t.Fatal(err)
	}
	s, err := collect(t, set)
	if err != nil {
		t.Fatal(err)
	}
	if s.Processes != e.Processes-1 {
		t.Errorf("after step_extern ended: %d processes, want %d", s.Processes, e.Processes-1)
	}
	os.MkdirAll(filepath.Join(job, "step_1/task_0"), 0o755)
	writeFile(t, filepath.Join(job, "step_1/cgroup.procs"), "")
	writeFile(t, filepath.Join(job, "step_1/tasks"), "")
	writeFile(t, filepath.Join(job, "step_1/task_0/cgroup.procs"), "20100\n")
	writeFile(t, filepath.Join(job, "step_1/task_0/tasks"), "20100\n")
	s, err = collect(t, set)
	if err != nil {
		t.Fatal(err)
	}
	if s.Processes != e.Processes {
		t.Errorf("after step_1 started: %d processes, want %d", s.Processes, e.Processes)
	}
}

// memStatMetrics are the metrics read from memory.stat.
const memStatMetrics = MetricMemoryRSS | MetricMemoryShmem | MetricMemoryMappedFile | MetricMemoryWorkingSet

func TestHostileContents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file, content string
		lost          Metric
	}{
		{"memory/slurm_node01/uid_1000/job_4242/memory.usage_in_bytes", "", MetricMemory | MetricMemoryWorkingSet},
		{"memory/slurm_node01/uid_1000/job_4242/memory.usage_in_bytes", "12abc\n", MetricMemory | MetricMemoryWorkingSet},
		{"memory/slurm_node01/uid_1000/job_4242/memory.usage_in_bytes", "-1\n", MetricMemory | MetricMemoryWorkingSet},
		{"memory/slurm_node01/uid_1000/job_4242/memory.usage_in_bytes", "99999999999999999999999\n", MetricMemory | MetricMemoryWorkingSet},
		{"cpuacct/slurm_node01/uid_1000/job_4242/cpuacct.usage", "\x00\x01\x02", MetricCPU},
		{"memory/slurm_node01/uid_1000/job_4242/memory.stat", "total_rss lots\n", memStatMetrics},
		{"memory/slurm_node01/uid_1000/job_4242/memory.stat", "cache 1\n", memStatMetrics},
		{"cpuset/slurm_node01/uid_1000/job_4242/cpuset.cpus", "3-1\n", MetricCPUsAllocated},
		{"cpuset/slurm_node01/uid_1000/job_4242/cpuset.cpus", "0-4294967295\n", MetricCPUsAllocated},
		{"memory/slurm_node01/uid_1000/job_4242/step_0/task_0/cgroup.procs", "20500\nnotapid\n", MetricProcesses},
		{"memory/slurm_node01/uid_1000/job_4242/step_0/task_0/cgroup.procs", "0\n", MetricProcesses},
	} {
		t.Run(strings.ReplaceAll(tc.file+"="+tc.content, "/", "_"), func(t *testing.T) {
			dir := copyTree(t, fixtureV1)
			path := filepath.Join(dir, "cgroup", tc.file)
			writeFile(t, path, tc.content)
			set, _ := newFixtureSet(t, dir, VersionV1)
			s, err := collect(t, set)
			if err == nil {
				t.Fatalf("no error for %q in %s", tc.content, tc.file)
			}
			if !strings.Contains(err.Error(), path) || !errors.Is(err, errSyntax) {
				t.Errorf("error %q does not name %s as having unexpected contents", err, path)
			}
			if s.Has(tc.lost) {
				t.Errorf("%s reported despite bad contents", tc.lost)
			}
			if !s.Has(AllMetrics &^ tc.lost &^ MetricThreads &^ MetricIO &^ v1Lacks) {
				t.Errorf("other metrics lost too: missing %q", s.Missing)
			}
		})
	}
}

func TestUnreadableFile(t *testing.T) {
	t.Parallel()
	dir := copyTree(t, fixtureV1)
	path := filepath.Join(dir, "cgroup/memory/slurm_node01/uid_1000/job_4242/memory.usage_in_bytes")
	// A directory where a file should be: opens, but every read fails.
	os.Remove(path)
	os.Mkdir(path, 0o755)
	set, _ := newFixtureSet(t, dir, VersionV1)
	s, err := collect(t, set)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want one naming %s", err, path)
	}
	if s.Has(MetricMemory) || !s.Has(MetricCPU) {
		t.Errorf("missing = %q, want memory only", s.Missing)
	}
}

func TestPermissionDenied(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode")
	}
	dir := copyTree(t, fixtureV1)
	path := filepath.Join(dir, "cgroup/memory/slurm_node01/uid_1000/job_4242/memory.stat")
	os.Chmod(path, 0)
	set, _ := newFixtureSet(t, dir, VersionV1)
	s, err := collect(t, set)
	if !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want permission denied naming %s", err, path)
	}
	if s.Has(MetricMemoryRSS) {
		t.Error("memory_rss reported from an unreadable file")
	}
}

func TestNewCgroupDirTree(t *testing.T) {
	t.Parallel()
	dir := copyTree(t, fixtureV2)
	e := loadExpected(t, dir)
	job := filepath.Join(dir, "cgroup/system.slice/slurmstepd.scope/job_4242")
	cfg := fixtureConfig(dir, VersionV2)
	set, err := NewCgroupDir(cfg, JobDirs{Unified: job})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	s, err := collect(t, set)
	if err != nil {
		t.Fatal(err)
	}
	// A plain cgroup tree counts every process below it, slurmstepd too.
	if s.Processes != e.Processes+3 || s.CPUUsageNanos != e.CPUUsageNanos {
		t.Errorf("processes %d cpu %d, want %d and %d", s.Processes, s.CPUUsageNanos, e.Processes+3, e.CPUUsageNanos)
	}
}

// removeV2IOAndPids makes the v2 fixture look like a job without the io and
// pids controllers.
func removeV2IOAndPids(t testing.TB, dir string) {
	t.Helper()
	job := filepath.Join(dir, "cgroup/system.slice/slurmstepd.scope/job_4242")
	if err := os.Remove(filepath.Join(job, "io.stat")); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(job, "*pids.current"))
	more, _ := filepath.Glob(filepath.Join(job, "step_*/*/pids.current"))
	more2, _ := filepath.Glob(filepath.Join(job, "step_*/user/task_*/pids.current"))
	peaks, _ := filepath.Glob(filepath.Join(job, "step_*/user/pids.peak"))
	for _, m := range append(append(append(matches, more...), more2...), peaks...) {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
}

// heldFiles counts the /proc descriptors a proc collector keeps open.
func heldFiles(c *ProcCollector) int {
	n := 0
	for _, e := range c.table.entries {
		if e.stat.ok() {
			n++
		}
		if e.io.ok() {
			n++
		}
	}
	return n
}

// A job cannot make the agent hold more than MaxOpenProcesses processes'
// files open: of the fixture's 64 processes 8 keep theirs, the other 56
// are read by opening and closing them, every total is the same as
// without a cap, and the collector says how many it reads so. When a held
// process exits, one of the others takes its place.
func TestProcFilesCapped(t *testing.T) {
	t.Parallel()
	dir := copyTree(t, fixtureV1)
	e := loadExpected(t, dir)
	cfg := fixtureConfig(dir, VersionV1)
	cfg.MaxOpenProcesses = 8
	set, err := New(cfg, e.target())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	proc := set[1].(*ProcCollector)
	want := Sample{
		CPUUsageNanos: e.CPUUsageNanos, MemoryUsedBytes: e.MemoryUsed, MemoryRSSBytes: e.MemoryRSS,
		MemoryShmemBytes: e.MemoryShmem, MemoryMappedFileBytes: e.MemoryMapped, MemoryWorkingSetBytes: e.MemoryWorkSet,
		MemoryPeakBytes: e.MemoryPeak, MemoryLimitBytes: e.MemoryLimit, CPUsAllocated: e.CPUs,
		Processes: e.Processes, Threads: e.Threads, IOReadBytes: e.ProcReadBytes, IOWriteBytes: e.ProcWriteBytes,
		Missing: v1Lacks,
	}
	for pass := 0; pass < 3; pass++ {
		s, err := collect(t, set)
		if err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		checkSample(t, s, want)
		if n := heldFiles(proc); n != 16 {
			t.Errorf("pass %d: %d /proc files held open, want 16 (8 processes)", pass, n)
		}
		if unheld, capped := proc.FileCap(); unheld != int(e.Processes)-8 || capped != uint64(e.Processes)-8 {
			t.Errorf("pass %d: FileCap %d, %d; want %d processes read without kept-open files", pass, unheld, capped, e.Processes-8)
		}
	}
	// A held process exits: another takes its slot; nothing is counted
	// as capped twice.
	var gone int32
	for pid, pe := range proc.table.entries {
		if pe.held && pe.threads == 1 {
			gone = pid
			break
		}
	}
	task := ""
	filepath.WalkDir(filepath.Join(dir, "cgroup/memory"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "cgroup.procs" {
			if b, _ := os.ReadFile(p); strings.Contains("\n"+string(b), fmt.Sprintf("\n%d\n", gone)) {
				task = filepath.Dir(p)
			}
		}
		return nil
	})
	if gone == 0 || task == "" {
		t.Fatalf("no held single-threaded process found in the fixture (pid %d, task %q)", gone, task)
	}
	removeLine(t, filepath.Join(task, "cgroup.procs"), fmt.Sprint(gone))
	removeLine(t, filepath.Join(task, "tasks"), fmt.Sprint(gone))
	os.RemoveAll(filepath.Join(dir, "proc", fmt.Sprint(gone)))
	s, err := collect(t, set)
	if err != nil {
		t.Fatal(err)
	}
	if s.Processes != e.Processes-1 || s.Threads != e.Threads-1 || s.IOReadBytes != e.ProcReadBytes || s.IOWriteBytes != e.ProcWriteBytes {
		t.Errorf("after a held process exited: processes %d threads %d io %d/%d, want %d, %d, %d/%d (its I/O kept)",
			s.Processes, s.Threads, s.IOReadBytes, s.IOWriteBytes, e.Processes-1, e.Threads-1, e.ProcReadBytes, e.ProcWriteBytes)
	}
	if n := heldFiles(proc); n != 16 {
		t.Errorf("%d /proc files held after an exit, want 16: a process read by path takes the free slot", n)
	}
	if unheld, capped := proc.FileCap(); unheld != int(e.Processes)-9 || capped != uint64(e.Processes)-8 {
		t.Errorf("after an exit: FileCap %d, %d; want %d now, %d ever", unheld, capped, e.Processes-9, e.Processes-8)
	}
}
