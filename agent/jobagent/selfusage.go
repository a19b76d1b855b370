package jobagent

import (
	"syscall"
	"time"
)

// SelfUsage is what the agent process itself has used so far: the figure
// behind "the agent costs under 0.05 % of a core".
type SelfUsage struct {
	CPU         time.Duration // user + system CPU time of the agent
	ChildCPU    time.Duration // of the processes it ran and waited for (scontrol)
	MaxRSSBytes int64         // the agent's peak resident set size
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
		MaxRSSBytes: self.Maxrss * 1024,
	}
}

// CorePercent is the agent's CPU as a percentage of one core over wall.
func (u SelfUsage) CorePercent(wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return 100 * u.CPU.Seconds() / wall.Seconds()
}
