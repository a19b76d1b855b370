package collector

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParsePressure(t *testing.T) {
	for _, tc := range []struct {
		in         string
		some, full uint64
		hasFull    bool
		bad        string // a part of the error, "" when it parses
	}{
		// As Linux 5.13 and later write every pressure file.
		{"some avg10=0.00 avg60=0.00 avg300=0.00 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7890\n", 123456000, 7890000, true, ""},
		// cpu.pressure before 5.13: no "full" line.
		{"some avg10=12.50 avg60=3.10 avg300=0.77 total=42\n", 42000, 0, false, ""},
		{"some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", 0, 0, true, ""},
		{"some total=5", 5000, 0, false, ""},
		{"some avg10=0.00  total=7\n\n", 7000, 0, false, ""},
		{"", 0, 0, false, `no "some" line`},
		{"\n", 0, 0, false, `no "some" line`},
		{"full avg10=0.00 avg60=0.00 avg300=0.00 total=1\n", 0, 0, false, `no "some" line`},
		{"some avg10=0.00 avg60=0.00 avg300=0.00\n", 0, 0, false, "without total="},
		{"some avg10=0.00 avg60=0.00 avg300=0.00 total=\n", 0, 0, false, "empty value"},
		{"some avg10=0.00 avg60=0.00 avg300=0.00 total=-1\n", 0, 0, false, "not an unsigned decimal"},
		{"some avg10=0.00 avg60=0.00 avg300=0.00 total=12x\n", 0, 0, false, "not an unsigned decimal"},
		{"some total=18446744073709551615\n", 0, 0, false, "out of range"},
		{"some total=18446744073709552\n", 0, 0, false, "out of range"},
		{"some total=1\nsome total=2\n", 0, 0, false, "repeated"},
		{"some total=1\nfull total=2\nfull total=3\n", 0, 0, false, "repeated"},
		{"some total=1\nirq total=2\n", 0, 0, false, `neither "some" nor "full"`},
		{"garbage\n", 0, 0, false, `neither "some" nor "full"`},
		{"\x00\x01\x02", 0, 0, false, `neither "some" nor "full"`},
	} {
		some, full, hasFull, err := parsePressure([]byte(tc.in))
		if tc.bad == "" {
			if err != nil || some != tc.some || full != tc.full || hasFull != tc.hasFull {
				t.Errorf("parsePressure(%q) = %d, %d, %v, %v; want %d, %d, %v", tc.in, some, full, hasFull, err, tc.some, tc.full, tc.hasFull)
			}
			continue
		}
		if err == nil || !errors.Is(err, errSyntax) || !strings.Contains(err.Error(), tc.bad) {
			t.Errorf("parsePressure(%q): error %v, want one about %q wrapping errSyntax", tc.in, err, tc.bad)
		}
	}
}

func FuzzParsePressure(f *testing.F) {
	f.Add([]byte("some avg10=0.00 avg60=0.00 avg300=0.00 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7890\n"))
	f.Add([]byte("some total=18446744073709551\n"))
	f.Add([]byte("some total=\nfull"))
	f.Fuzz(func(t *testing.T, b []byte) {
		some, full, hasFull, err := parsePressure(b)
		if err != nil {
			if !errors.Is(err, errSyntax) {
				t.Errorf("%q: error %v does not wrap errSyntax", b, err)
			}
			return
		}
		if some%1000 != 0 || full%1000 != 0 || (!hasFull && full != 0) {
			t.Errorf("%q: some %d full %d (hasFull %v): not whole microseconds", b, some, full, hasFull)
		}
	})
}

// v2JobDir is the job's directory in a copy of the v2 fixture.
func v2JobDir(dir string) string {
	return filepath.Join(dir, "cgroup/system.slice/slurmstepd.scope/job_4242")
}

// A kernel without CONFIG_PSI (or booted with psi=0, 6.1 on, or with
// cgroup_disable=pressure) has no pressure files; one before 4.13 has no
// oom_kill line in memory.events; one before 6.1 no pids.peak. Each leaves
// its metric missing, never zero, and is no error.
func TestCgroupV2KernelFeaturesAbsent(t *testing.T) {
	t.Parallel()
	dir := copyTree(t, fixtureV2)
	job := v2JobDir(dir)
	for _, f := range []string{"cpu.pressure", "memory.pressure", "io.pressure"} {
		if err := os.Remove(filepath.Join(job, f)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(job, "memory.events"), "low 0\nhigh 0\nmax 3\noom 1\n")
	peaks, _ := filepath.Glob(filepath.Join(job, "step_*/user/pids.peak"))
	if len(peaks) != 3 {
		t.Fatalf("fixture has %d pids.peak files, want 3", len(peaks))
	}
	for _, p := range peaks {
		os.Remove(p)
	}
	set, e := newFixtureSet(t, dir, VersionV2)
	s, err := collect(t, set)
	if err != nil {
		t.Fatalf("absent kernel features reported as an error: %v", err)
	}
	want := fullV2Sample(e)
	want.CPUStallSomeNanos, want.MemoryStallSomeNanos, want.MemoryStallFullNanos = 0, 0, 0
	want.IOStallSomeNanos, want.IOStallFullNanos, want.OOMKills, want.ThreadsPeak = 0, 0, 0, 0
	want.Missing = MetricPressure | MetricOOMKills | MetricThreadsPeak
	checkSample(t, s, want)
}

// A kernel booted with psi=0 before Linux 6.1 keeps the pressure files,
// and every read of one fails with EOPNOTSUPP: the stalls are missing, not
// zero, it is no error, and the file is not read again.
func TestCgroupV2PressureNotSupported(t *testing.T) {
	// Not parallel: it replaces rawPread, which parallel tests use.
	set, e := newFixtureSet(t, fixtureV2, VersionV2)
	cg := set[0].(*CgroupV2)
	off := map[int]bool{cg.cpuPressure.fd: true, cg.memPressure.fd: true, cg.ioPressure.fd: true}
	reads := 0
	saved := rawPread
	t.Cleanup(func() { rawPread = saved })
	rawPread = func(fd int, buf []byte) (int, error) {
		if off[fd] {
			reads++
			return 0, unix.EOPNOTSUPP
		}
		return unix.Pread(fd, buf, 0)
	}
	for pass := range 3 {
		s, err := collect(t, set)
		if err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		want := fullV2Sample(e)
		want.CPUStallSomeNanos, want.MemoryStallSomeNanos, want.MemoryStallFullNanos = 0, 0, 0
		want.IOStallSomeNanos, want.IOStallFullNanos = 0, 0
		want.Missing = MetricPressure
		checkSample(t, s, want)
	}
	if reads != 3 {
		t.Errorf("%d reads of the pressure files in 3 passes, want 3: a file that said EOPNOTSUPP is not read again", reads)
	}
}

// A pressure file, memory.events or pids.peak that does not parse loses
// its own metric, and the error names the file and what is wrong with it.
func TestCgroupV2HostilePressureEventsPeak(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file, content string
		lost          Metric
		problem       string
	}{
		{"cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00\n", MetricCPUPressure, "without total="},
		{"cpu.pressure", "", MetricCPUPressure, `no "some" line`},
		{"memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n", MetricMemoryPressure, `no "full" line`},
		{"io.pressure", "some total=1\nfull total=x\n", MetricIOPressure, "not an unsigned decimal"},
		{"io.pressure", "\x00\xff", MetricIOPressure, `neither "some" nor "full"`},
		{"memory.events", "oom 1\noom_kill many\n", MetricOOMKills, "key oom_kill"},
		{"step_0/user/pids.peak", "-3\n", MetricThreadsPeak, "not an unsigned decimal"},
	} {
		t.Run(strings.ReplaceAll(tc.file, "/", "_")+"="+tc.content, func(t *testing.T) {
			dir := copyTree(t, fixtureV2)
			path := filepath.Join(v2JobDir(dir), tc.file)
			writeFile(t, path, tc.content)
			set, _ := newFixtureSet(t, dir, VersionV2)
			s, err := collect(t, set)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.problem) || !errors.Is(err, errSyntax) {
				t.Fatalf("error %v, want one naming %s and %q", err, path, tc.problem)
			}
			if s.Has(tc.lost) {
				t.Errorf("%s reported from bad contents", tc.lost)
			}
			if s.Missing != tc.lost {
				t.Errorf("missing %q, want only %q", s.Missing, tc.lost)
			}
		})
	}
}

// The threads' kernel peak is each step's own pids.peak, counted like the
// threads (step_*/user, slurmstepd's step_*/slurm left out), and the
// largest of the steps there now: a floor of the job's peak, never the
// sum of peaks the steps need not have reached together.
func TestCgroupV2ThreadsPeakIsLargestStepPeak(t *testing.T) {
	t.Parallel()
	dir := copyTree(t, fixtureV2)
	job := v2JobDir(dir)
	writeFile(t, filepath.Join(job, "step_batch/user/pids.peak"), "150\n")
	writeFile(t, filepath.Join(job, "step_0/user/pids.peak"), "181\n")
	writeFile(t, filepath.Join(job, "step_extern/user/pids.peak"), "1\n")
	// The job-level file counts slurmstepd's threads too: never read.
	writeFile(t, filepath.Join(job, "pids.peak"), "999\n")
	writeFile(t, filepath.Join(job, "step_0/slurm/pids.peak"), "888\n")
	set, _ := newFixtureSet(t, dir, VersionV2)
	s, err := collect(t, set)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Has(MetricThreadsPeak) || s.ThreadsPeak != 181 {
		t.Errorf("threads peak %d (missing %q), want 181: step_0's", s.ThreadsPeak, s.Missing)
	}
	// Step 0 ends: its cgroup and its mark go; the batch step's remains.
	if err := os.RemoveAll(filepath.Join(job, "step_0")); err != nil {
		t.Fatal(err)
	}
	s, _ = collect(t, set)
	if !s.Has(MetricThreadsPeak) || s.ThreadsPeak != 150 {
		t.Errorf("after step 0 ended: threads peak %d (missing %q), want 150", s.ThreadsPeak, s.Missing)
	}
}
