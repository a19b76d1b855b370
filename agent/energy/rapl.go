package energy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// raplZone matches a RAPL zone or subzone directory of powercap:
// intel-rapl:<package>[:<subzone>]. AMD processors are exposed under the
// same name by the kernel's RAPL driver (Linux ≥ 5.8 for Zen). The
// intel-rapl-mmio zones repeat the package domain through another
// interface and are left out, so nothing is counted twice.
var raplZone = regexp.MustCompile(`^intel-rapl:[0-9]+(:[0-9]+)?$`)

// RAPL reads the CPU package and DRAM energy counters of a node's RAPL
// zones (powercap sysfs). Its files are opened once, in NewRAPL, and
// re-read with pread each pass. A RAPL is not safe for concurrent use.
type RAPL struct {
	dir         string
	zones       []raplCounter
	parts       Part
	unavailable []string
	buf         []byte
}

// raplCounter is one zone's energy_uj counter.
type raplCounter struct {
	name   string // directory name, e.g. intel-rapl:0:0
	domain string // the zone's name file: package-0, dram
	part   Part
	fd     int
	// max is max_energy_range_uj: the counter wraps to 0 after it (0:
	// unknown, and a decrease then counts from 0).
	max     uint64
	last    uint64
	started bool
	// totalUJ is the energy counted since the first read, in µJ.
	totalUJ uint64
}

// NewRAPL opens the RAPL zones under sysfsRoot (normally /sys). It never
// fails: a node without RAPL, or whose counters this process may not read
// (energy_uj is readable only by root since Linux 5.10), gives a RAPL whose
// Parts lack those domains, and Unavailable says why.
func NewRAPL(sysfsRoot string) *RAPL { return newRAPL(sysfsRoot, openReadOnly) }

func newRAPL(sysfsRoot string, open openFunc) *RAPL {
	r := &RAPL{dir: filepath.Join(sysfsRoot, "class", "powercap"), buf: make([]byte, 64)}
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			r.unavailable = append(r.unavailable, fmt.Sprintf("rapl: no powercap interface (%s does not exist)", r.dir))
		} else {
			r.unavailable = append(r.unavailable, fmt.Sprintf("rapl: listing %s: %v", r.dir, err))
		}
		return r
	}
	failed := Part(0)
	for _, e := range entries {
		if !raplZone.MatchString(e.Name()) {
			continue
		}
		zdir := filepath.Join(r.dir, e.Name())
		name, err := os.ReadFile(filepath.Join(zdir, "name"))
		if err != nil {
			r.unavailable = append(r.unavailable, fmt.Sprintf("rapl: %s: reading its name: %v", e.Name(), err))
			continue
		}
		domain := strings.TrimSpace(string(name))
		var part Part
		switch {
		case strings.HasPrefix(domain, "package-"):
			part = PartCPU
		case domain == "dram":
			part = PartDRAM
		default:
			continue // core and uncore lie inside the package; psys spans the platform
		}
		c := raplCounter{name: e.Name(), domain: domain, part: part, fd: -1}
		if b, err := os.ReadFile(filepath.Join(zdir, "max_energy_range_uj")); err == nil {
			c.max, _ = parseUint(b)
		}
		fd, err := open(filepath.Join(zdir, "energy_uj"))
		if err != nil {
			failed |= part
			why := err.Error()
			if errors.Is(err, unix.EACCES) || errors.Is(err, os.ErrPermission) {
				why = "permission denied: energy_uj is readable only by root (Linux ≥ 5.10); the agent must run as root to read it"
			}
			r.unavailable = append(r.unavailable, fmt.Sprintf("rapl: %s (%s): %s", e.Name(), domain, why))
			continue
		}
		c.fd = fd
		r.zones = append(r.zones, c)
		r.parts |= part
	}
	// A part is summed over every socket or not at all: one package
	// unreadable would make the sum an undercount that looks whole.
	r.parts &^= failed
	kept := r.zones[:0]
	for _, c := range r.zones {
		if failed&c.part != 0 {
			_ = unix.Close(c.fd)
			continue
		}
		kept = append(kept, c)
	}
	r.zones = kept
	slices.SortFunc(r.zones, func(a, b raplCounter) int { return strings.Compare(a.name, b.name) })
	if r.parts&PartCPU == 0 && failed&PartCPU == 0 {
		r.unavailable = append(r.unavailable, fmt.Sprintf("rapl: no package domain under %s", r.dir))
	}
	if r.parts&PartDRAM == 0 && failed&PartDRAM == 0 {
		r.unavailable = append(r.unavailable, fmt.Sprintf("rapl: no dram domain under %s (not every processor has one)", r.dir))
	}
	return r
}

// Parts is the set of parts (PartCPU, PartDRAM) this node's RAPL offers.
func (r *RAPL) Parts() Part { return r.parts }

// Unavailable says, one line per domain, why a RAPL domain is not read.
func (r *RAPL) Unavailable() []string { return r.unavailable }

// Read re-reads every counter and sets rd's CPUJoules and DRAMJoules to the
// energy counted since the first Read, correcting for wrap-around at
// max_energy_range_uj. A part any of whose counters could not be read stays
// missing in rd (its bit is not cleared). Read does not allocate.
func (r *RAPL) Read(rd *Reading) error {
	var cpu, dram uint64
	bad := Part(0)
	var first error
	for i := range r.zones {
		c := &r.zones[i]
		b, err := preadAll(c.fd, r.buf)
		var v uint64
		if err == nil {
			v, err = parseUint(b)
		}
		if err != nil {
			bad |= c.part
			if first == nil {
				first = fmt.Errorf("rapl: reading %s/%s/energy_uj: %w", r.dir, c.name, err)
			}
			continue
		}
		c.observe(v)
		if c.part == PartCPU {
			cpu += c.totalUJ
		} else {
			dram += c.totalUJ
		}
	}
	if ok := r.parts &^ bad; ok&PartCPU != 0 {
		rd.CPUJoules = float64(cpu) / 1e6
		rd.Missing &^= PartCPU
	}
	if ok := r.parts &^ bad; ok&PartDRAM != 0 {
		rd.DRAMJoules = float64(dram) / 1e6
		rd.Missing &^= PartDRAM
	}
	return first
}

// observe adds a reading to the counter's total. A reading below the
// previous one is a wrap-around: the counter went up to max and restarted
// from 0 (RAPL counters wrap every few minutes to hours, depending on the
// power drawn); only one wrap between two reads can be seen, which the
// agent's 5-minute maximum interval keeps true.
func (c *raplCounter) observe(v uint64) {
	if !c.started {
		c.started, c.last = true, v
		return
	}
	switch {
	case v >= c.last:
		c.totalUJ += v - c.last
	case c.max > 0 && c.last <= c.max:
		c.totalUJ += c.max - c.last + v
	default:
		c.totalUJ += v // range unknown: count from the restart only
	}
	c.last = v
}

// Close releases the counters' files.
func (r *RAPL) Close() error {
	var errs []error
	for i := range r.zones {
		if r.zones[i].fd >= 0 {
			if err := unix.Close(r.zones[i].fd); err != nil {
				errs = append(errs, err)
			}
			r.zones[i].fd = -1
		}
	}
	return errors.Join(errs...)
}
