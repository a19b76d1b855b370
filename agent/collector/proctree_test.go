package collector

import (
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestProcessTreeRealProcesses follows a real shell and its children.
func TestProcessTreeRealProcesses(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	// The shell starts two sleeps and burns a little CPU; the fifo tells the
	// test when the children exist.
	cmd := exec.Command("/bin/sh", "-c", `sleep 30 & sleep 30 & i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo ready; wait; exec sleep 30`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	tree, err := NewProcessTree("/proc", int32(cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	s, err := collect(t, tree)
	if err != nil {
		t.Fatal(err)
	}
	if s.Processes != 3 || s.Threads != 3 {
		t.Errorf("processes %d threads %d, want the shell and two sleeps", s.Processes, s.Threads)
	}
	if !s.Has(MetricCPU|MetricMemoryRSS|MetricIO|MetricCPUsAllocated) || s.MemoryRSSBytes == 0 || s.CPUUsageNanos == 0 {
		t.Errorf("sample %+v missing %q", s, s.Missing)
	}
	if s.Has(MetricMemory) || s.Has(MetricMemoryPeak) {
		t.Error("process tree claims cgroup-only metrics")
	}
	cpu := s.CPUUsageNanos

	// The children exit; the shell reaps them: the CPU total never drops.
	for _, p := range tree.PIDs() {
		if p != int32(cmd.Process.Pid) {
			if proc, err := os.FindProcess(int(p)); err == nil {
				proc.Kill()
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err = collect(t, tree)
		if err != nil {
			t.Fatal(err)
		}
		if s.Processes == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s.Processes != 1 || s.CPUUsageNanos < cpu {
		t.Errorf("after children exited: processes %d cpu %d (was %d)", s.Processes, s.CPUUsageNanos, cpu)
	}

	// The root exits too.
	cmd.Process.Kill()
	cmd.Wait()
	s, err = collect(t, tree)
	if !errors.Is(err, os.ErrNotExist) || s.Has(MetricProcesses) {
		t.Errorf("after root exited: err %v, missing %q", err, s.Missing)
	}
}

func TestProcessTreeMissingRoot(t *testing.T) {
	if _, err := NewProcessTree(t.TempDir(), 12345); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want os.ErrNotExist", err)
	}
}
