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
	// AnonRSSBytes and FileRSSBytes split the current resident set: memory
	// of the agent's own (heap, stacks) and pages of files it maps (its
	// binary, libc), which the page cache shares with every other process
	// mapping them, and which depends on what the page cache holds.
	AnonRSSBytes int64
	FileRSSBytes int64
}

// ReadSelfUsage asks the kernel for the agent's own usage.
func ReadSelfUsage() SelfUsage {
	var self, children syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		return SelfUsage{}
	}
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	status, _ := os.ReadFile("/proc/self/status")
	return SelfUsage{
		CPU:          time.Duration(self.Utime.Nano() + self.Stime.Nano()),
		ChildCPU:     time.Duration(children.Utime.Nano() + children.Stime.Nano()),
		MaxRSSBytes:  statusKB(status, "VmHWM"),
		AnonRSSBytes: statusKB(status, "RssAnon"),
		FileRSSBytes: statusKB(status, "RssFile"),
	}
}

// statusKB reads a "<name>: <n> kB" line of /proc/self/status in bytes (0
// when absent). Peak RSS is VmHWM, not getrusage's ru_maxrss: Linux carries
// that across exec, so it would report the RSS of whatever started the
// agent (slurmd's child, or the go tool under go run).
func statusKB(status []byte, name string) int64 {
	_, rest, ok := bytes.Cut(status, []byte("\n"+name+":"))
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

// logUsage logs what this agent process used, for operators and for
// cmd/jobsight-bench, which adds up every agent process of a job. Where
// the process watched one job only (cpuAtWatch and cpuAtFinalize: its CPU
// time when it began to watch and to finalize), its CPU is split by phase.
func (a *Agent) logUsage(wall time.Duration, samples int64, cpuAtWatch, cpuAtFinalize time.Duration) {
	self := ReadSelfUsage()
	args := []any{"cpu_seconds", self.CPU.Seconds(), "child_cpu_seconds", self.ChildCPU.Seconds(),
		"wall_seconds", wall.Seconds(), "core_percent", self.CorePercent(wall), "max_rss_bytes", self.MaxRSSBytes,
		"anon_rss_bytes", self.AnonRSSBytes, "file_rss_bytes", self.FileRSSBytes, "samples", samples}
	if a.CPUAtMain > 0 && cpuAtWatch > 0 && cpuAtFinalize > 0 {
		args = append(args, "cpu_startup_seconds", a.CPUAtMain.Seconds(), "cpu_setup_seconds", (cpuAtWatch - a.CPUAtMain).Seconds(),
			"cpu_watch_seconds", (cpuAtFinalize - cpuAtWatch).Seconds(), "cpu_finalize_seconds", (self.CPU - cpuAtFinalize).Seconds())
	}
	a.Log.Info("agent resource use", args...)
}
