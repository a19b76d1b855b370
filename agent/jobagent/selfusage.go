package jobagent

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// SelfUsage is what the agent process itself has used so far: the figure
// behind "the agent costs under 0.05 % of a core".
type SelfUsage struct {
	CPU         time.Duration // user + system CPU time of the agent
	ChildCPU    time.Duration // of the processes it ran and waited for (scontrol)
	MaxRSSBytes int64         // the agent's peak resident set size (0 when unknown)
}

// ReadSelfUsage asks the kernel for the agent's own usage.
func ReadSelfUsage() SelfUsage {
	var self, children syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		return SelfUsage{}
	}
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return SelfUsage{
		CPU:         time.Duration(self.Utime.Nano() + self.Stime.Nano()),
		ChildCPU:    time.Duration(children.Utime.Nano() + children.Stime.Nano()),
		MaxRSSBytes: peakRSS(),
	}
}

// peakRSS is VmHWM from /proc/self/status: the peak of this process's own
// address space. getrusage's ru_maxrss is not used: Linux carries it across
// exec, so it would report the RSS of whatever started the agent (slurmd's
// child, or the go tool under go run).
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	_, rest, ok := bytes.Cut(b, []byte("\nVmHWM:"))
	if !ok {
		return 0
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(line), []byte("kB")))), 10, 64)
	if err != nil {
		return 0
	}
	return kb * 1024
}

// CorePercent is the agent's CPU as a percentage of one core over wall.
func (u SelfUsage) CorePercent(wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return 100 * u.CPU.Seconds() / wall.Seconds()
}
