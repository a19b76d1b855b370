package cgroupv2

import "testing"

// The harness reads the kernel's figures with parsers of its own (not the
// agent's, which it checks): the files as the guest's 6.1 kernel wrote
// them for a job.
func TestFiguresReadKernelFiles(t *testing.T) {
	t.Parallel()
	f := Figures{Files: map[string]string{
		"cpu.stat":              "usage_usec 9061891\nuser_usec 8931000\nsystem_usec 130891\n",
		"memory.events":         "low 0\nhigh 0\nmax 37\noom 1\noom_kill 1\noom_group_kill 0\n",
		"memory.peak":           "318386176\n",
		"io.stat":               "254:0 rbytes=4096 wbytes=33558528 rios=1 wios=29 dbytes=0 dios=0\n254:16 rbytes=8192 wbytes=1 rios=2 wios=1 dbytes=0 dios=0\n",
		"io.pressure":           "some avg10=61.02 avg60=20.11 avg300=4.73 total=7431552\nfull avg10=60.90 avg60=20.07 avg300=4.72 total=7420011\n",
		"pids.peak":             "error: open /sys/fs/cgroup/x/pids.peak: no such file or directory\n",
		"time_ms":               "1795962928703\n",
		"cpuset.cpus.effective": "0-2,5\n",
	}}
	if at, ok := f.ReadAt(); !ok || at.UnixMilli() != 1795962928703 {
		t.Errorf("time_ms %v %v", at, ok)
	}
	if n := f.CPUs(); n != 4 {
		t.Errorf("cpuset 0-2,5: %d CPUs", n)
	}
	if n := (Figures{Files: map[string]string{"cpuset.cpus.effective": "1\n"}}).CPUs(); n != 1 {
		t.Errorf("cpuset 1: %d CPUs", n)
	}
	if n := (Figures{Files: map[string]string{"cpuset.cpus.effective": "error: no such file\n"}}).CPUs(); n != 0 {
		t.Errorf("an unreadable cpuset: %d CPUs", n)
	}
	if v, ok := f.Key("cpu.stat", "usage_usec"); !ok || v != 9061891 {
		t.Errorf("usage_usec %d %v", v, ok)
	}
	if v, ok := f.Key("memory.events", "oom_kill"); !ok || v != 1 {
		t.Errorf("oom_kill %d %v", v, ok)
	}
	if v, ok := f.Uint("memory.peak"); !ok || v != 318386176 {
		t.Errorf("memory.peak %d %v", v, ok)
	}
	if _, ok := f.Uint("pids.peak"); ok {
		t.Error("a file the job could not read gave a number")
	}
	if r, w, ok := f.IOBytes(); !ok || r != 12288 || w != 33558529 {
		t.Errorf("io.stat summed over devices: read %d written %d %v", r, w, ok)
	}
	if _, _, ok := (Figures{Files: map[string]string{"io.stat": ""}}).IOBytes(); ok {
		t.Error("an empty io.stat (a job without I/O) gave figures")
	}
	if v, ok := f.StallMicros("io.pressure", "some"); !ok || v != 7431552 {
		t.Errorf("io some total %d %v", v, ok)
	}
	if v, ok := f.StallMicros("io.pressure", "full"); !ok || v != 7420011 {
		t.Errorf("io full total %d %v", v, ok)
	}
}
