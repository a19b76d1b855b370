// Package rawio makes the few system calls of the node agent's wake-up
// without telling the Go scheduler.
//
// Each ordinary system call of a Go program enters and leaves the
// scheduler (entersyscall, exitsyscall), and the first one after the
// program was idle wakes the runtime's monitor thread (sysmon), which
// then polls every 20 µs for as long as the program runs, to take the
// processor from a call that blocks. The agent wakes once an interval,
// reads a dozen small kernel files per job and sleeps again: measured on
// a busy node, the monitor's polling and the hand-offs it caused were
// about a fifth of the agent's CPU (twenty context switches a wake-up,
// most of them the monitor's nanosleep).
//
// The calls here are made with syscall.RawSyscall6: they are for reads
// the kernel answers from its own counters, which never wait on a device,
// the network or another process's progress (cgroupfs, /proc/<pid>/stat,
// /proc/stat, sysfs). Such a call holds the agent's one processor while it
// runs: microseconds as a rule, and at worst as long as a kernel lock
// another cgroup operation holds (kernfs' mutex on kernels before 5.15
// during a storm of cgroup creation, the statistics flush of a large
// memory cgroup, a CPU hot-plug for a RAPL counter): milliseconds, during
// which the agent's socket and sender wait too. A call that could block
// without bound must not come here (/proc/<pid>/io, which waits while its
// process is in an exec, does not).
package rawio

import (
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pread reads len(buf) bytes at offset 0 of fd (kernel files regenerate
// their contents on a read at offset 0), retrying on EINTR.
func Pread(fd int, buf []byte) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	for {
		n, _, errno := syscall.RawSyscall6(syscall.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(len(buf)), 0, 0, 0)
		switch errno {
		case 0:
			return int(n), nil
		case syscall.EINTR:
			continue
		}
		return 0, errno
	}
}

// ProcessCPU is the CPU time of the whole process, every thread (user and
// system), from CLOCK_PROCESS_CPUTIME_ID; 0 if the clock cannot be read.
func ProcessCPU() time.Duration {
	var ts syscall.Timespec
	const clockProcessCPUTimeID = 2
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockProcessCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}

// Fstat stats an open descriptor (the agent's kept-open cgroup
// directories, whose link count says whether a step came or went).
func Fstat(fd int, st *unix.Stat_t) error {
	if _, _, errno := syscall.RawSyscall(unix.SYS_FSTAT, uintptr(fd), uintptr(unsafe.Pointer(st)), 0); errno != 0 {
		return errno
	}
	return nil
}
