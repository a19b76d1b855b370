package main

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGUSR1 does not kill an agent process, and the commands it starts
// (`run`'s job command, squeue) get it with its default action, not
// ignored.
func TestSIGUSR1CaughtNotIgnored(t *testing.T) {
	catchProfileSignal()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // still alive
	out, err := exec.Command("sh", "-c", "grep '^SigIgn:' /proc/self/status").Output()
	if err != nil {
		t.Fatal(err)
	}
	mask, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(string(out), "SigIgn:")), 16, 64)
	if err != nil {
		t.Fatalf("SigIgn line %q: %v", out, err)
	}
	if mask&(1<<(uint(syscall.SIGUSR1)-1)) != 0 {
		t.Fatalf("a child of the agent starts with SIGUSR1 ignored (SigIgn %016x)", mask)
	}
}
