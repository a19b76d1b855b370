package energy

import (
	"bytes"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// userHZ is the unit of /proc/stat's CPU times: the kernel always reports
// them in USER_HZ, which is 100 on Linux whatever the kernel's HZ.
const userHZ = 100

// NodeCPU reads the node's busy CPU time (all CPUs) from the first line of
// /proc/stat: user + nice + system + irq + softirq. Idle and iowait are not
// busy; steal is time the hypervisor gave to others; guest and guest_nice
// are already inside user and nice. It reads only that line, with pread
// into a reused buffer: prometheus/procfs parses the whole file (every CPU
// and interrupt line, 87 µs and 85 allocations per read on a 2-CPU VM,
// more on a large node); its parse is the reference in the tests.
type NodeCPU struct {
	path string
	fd   int
	buf  []byte
}

// NewNodeCPU opens procRoot/stat.
func NewNodeCPU(procRoot string) (*NodeCPU, error) {
	p := filepath.Join(procRoot, "stat")
	fd, err := openReadOnly(p)
	if err != nil {
		return nil, fmt.Errorf("node cpu: opening %s: %w", p, err)
	}
	return &NodeCPU{path: p, fd: fd, buf: make([]byte, 512)}, nil
}

// Read returns the node's busy CPU seconds since boot.
func (n *NodeCPU) Read() (float64, error) {
	b, err := preadAll(n.fd, n.buf)
	if err != nil {
		return 0, fmt.Errorf("node cpu: reading %s: %w", n.path, err)
	}
	ticks, err := parseStatCPU(b)
	if err != nil {
		return 0, fmt.Errorf("node cpu: %s: %w", n.path, err)
	}
	return float64(ticks) / userHZ, nil
}

// Close releases the file.
func (n *NodeCPU) Close() error {
	if n.fd < 0 {
		return nil
	}
	err := unix.Close(n.fd)
	n.fd = -1
	return err
}

// parseStatCPU parses the aggregate "cpu " line at the start of /proc/stat
// and returns user+nice+system+irq+softirq in USER_HZ ticks.
func parseStatCPU(b []byte) (uint64, error) {
	if !bytes.HasPrefix(b, []byte("cpu ")) {
		return 0, fmt.Errorf("first line is not the aggregate cpu line: %.40q", b)
	}
	line := b[4:]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	} else if len(b) == 512 {
		return 0, fmt.Errorf("cpu line longer than the read buffer")
	}
	// Fields: user nice system idle iowait irq softirq steal guest guest_nice.
	var busy uint64
	field := 0
	for len(line) > 0 && field < 7 {
		for len(line) > 0 && line[0] == ' ' {
			line = line[1:]
		}
		end := bytes.IndexByte(line, ' ')
		if end < 0 {
			end = len(line)
		}
		if end == 0 {
			break
		}
		v, err := parseUint(line[:end])
		if err != nil {
			return 0, fmt.Errorf("cpu line field %d: %w", field+1, err)
		}
		switch field {
		case 0, 1, 2, 5, 6: // user nice system irq softirq
			busy += v
		}
		field++
		line = line[end:]
	}
	if field < 7 {
		return 0, fmt.Errorf("cpu line has %d fields, want at least 7 (user .. softirq)", field)
	}
	return busy, nil
}
