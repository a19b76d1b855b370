package energy

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/jobsight/jobsight/agent/rawio"
)

// openFunc opens a file read-only and returns its descriptor; tests inject
// one that fails as a non-root user's open of a root-only energy_uj does.
type openFunc func(path string) (int, error)

func openReadOnly(path string) (int, error) {
	return unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

// preadAll re-reads a small kernel file at offset 0 into buf (sysfs and
// procfs regenerate it on every read at offset 0) and returns the bytes.
// The read is a raw system call (agent/rawio): /proc/stat and powercap's
// energy counters are the kernel's own figures (a RAPL counter read is one
// MSR read, on another CPU at worst).
func preadAll(fd int, buf []byte) ([]byte, error) {
	n, err := rawio.Pread(fd, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// parseUint parses a decimal number with surrounding blanks, allocating
// nothing on success.
func parseUint(b []byte) (uint64, error) {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	if len(b) == 0 || len(b) > 20 {
		return 0, fmt.Errorf("not a number: %q", b)
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("not a number: %q", b)
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, fmt.Errorf("number overflows 64 bits: %q", b)
		}
		v = v*10 + d
	}
	return v, nil
}
