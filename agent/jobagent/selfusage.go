package jobagent

import (
	"syscall"
	"time"
)

// SelfUsage is what the agent process itself has used so far: the figure
// behind "the agent costs under 0.05 % of a core".
type SelfUsage struct {
	CPU         time.Duration // user + system CPU time
	MaxRSSBytes int64         // peak resident set size
}

// ReadSelfUsage asks the kernel for the agent's own usage.
func ReadSelfUsage() SelfUsage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return SelfUsage{}
	}
	return SelfUsage{CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), MaxRSSBytes: ru.Maxrss * 1024}
}

// CorePercent is the agent's CPU as a percentage of one core over wall.
func (u SelfUsage) CorePercent(wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return 100 * u.CPU.Seconds() / wall.Seconds()
}
