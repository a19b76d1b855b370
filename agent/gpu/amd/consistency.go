package amd

import (
	"math"
	"strconv"
	"strings"

	"github.com/jobsight/jobsight/agent/gpu"
)

// devInfo is what the partition model and the consistency checks need to
// know about one enumerated device. Both backends fill it at open.
type devInfo struct {
	model    string // marketing name
	deviceID uint64 // PCI device id; 0 when unknown
	bdf      string // PCI address as "0000:c1:00.0"; "" when unknown
	mode     string // compute partition mode as reported ("SPX", "CPX", "N/A", …)
	serial   string // board serial number; "" when unknown
}

// mi200DeviceID is the PCI device id of the MI250 and MI250X: one package
// holding two GCDs that the driver enumerates as two GPUs.
const mi200DeviceID = 0x740c

// computeMode normalises a compute partition mode to "SPX", "DPX", "TPX",
// "QPX", "CPX" or "" (unknown, not supported).
func computeMode(s string) string {
	s = strings.ToUpper(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "AMDSMI_COMPUTE_PARTITION_")
	s = strings.TrimPrefix(s, "AMDSMI_ACCELERATOR_PARTITION_")
	switch s {
	case "SPX", "DPX", "TPX", "QPX", "CPX":
		return s
	}
	return ""
}

// memoryMode normalises a memory partition mode to "NPS1", "NPS2", "NPS4",
// "NPS8" or "".
func memoryMode(s string) string {
	s = strings.ToUpper(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "AMDSMI_MEMORY_PARTITION_")
	switch s {
	case "NPS1", "NPS2", "NPS4", "NPS8":
		return s
	}
	return ""
}

// dualGCD reports whether the device is one GCD of an MI250/MI250X package.
func dualGCD(d devInfo) bool {
	if d.deviceID == mi200DeviceID {
		return true
	}
	return strings.Contains(strings.ToUpper(d.model), "MI250")
}

// partitionOf returns gpu.Device.Partition for d: the compute partition
// mode when the physical GPU is split (DPX, TPX, QPX, CPX), "GCD" for one
// die of an MI250/MI250X, "" for a whole GPU (SPX or not partitionable).
func partitionOf(d devInfo) string {
	switch m := computeMode(d.mode); m {
	case "DPX", "TPX", "QPX", "CPX":
		return m
	}
	if dualGCD(d) {
		return "GCD"
	}
	return ""
}

// pciDevice returns the domain:bus:device part of a PCI address
// ("0000:0c:00.3" → "0000:0c:00"), the part all compute partitions of one
// physical GPU share (the driver puts the partition number in the function
// bits). ok is false when bdf is not a PCI address.
func pciDevice(bdf string) (string, bool) {
	bdf = strings.ToLower(strings.TrimSpace(bdf))
	dot := strings.LastIndexByte(bdf, '.')
	if dot < 0 {
		return "", false
	}
	head, fn := bdf[:dot], bdf[dot+1:]
	parts := strings.Split(head, ":")
	if len(parts) != 3 || len(fn) != 1 {
		return "", false
	}
	for i, p := range append(parts, fn) {
		width := []int{4, 2, 2, 1}[i]
		if len(p) == 0 || len(p) > 8 || (i > 0 && len(p) != width) {
			return "", false
		}
		if _, err := strconv.ParseUint(p, 16, 64); err != nil {
			return "", false
		}
	}
	return head, true
}

// usableSerial reports whether a board serial can identify a package.
func usableSerial(s string) bool {
	s = strings.TrimSpace(s)
	if notAvailable(s) {
		return false
	}
	return strings.Trim(s, "0") != "" && !strings.EqualFold(s, "0x0")
}

// powerGroups splits the devices (by position) into power domains: the
// devices that share one package's power and energy sensors.
//
//   - The compute partitions of one physical GPU (DPX/TPX/QPX/CPX) form one
//     domain, keyed by their shared PCI domain:bus:device.
//   - The two GCDs of an MI250/MI250X package form one domain, keyed by the
//     board serial number when every GCD has one and each serial names
//     exactly two GCDs; otherwise GCDs are paired in enumeration order
//     (0–1, 2–3, …), the order amd-smi lists them in (by PCI address, the
//     two dies of a package being adjacent).
//   - Every other device is its own domain.
//
// groupOf[pos] is the domain of the device at pos; members lists each
// domain's positions in enumeration order.
func powerGroups(devs []devInfo) (groupOf []int, members [][]int) {
	keys := make([]string, len(devs))
	var gcds []int
	for i, d := range devs {
		keys[i] = "dev:" + strconv.Itoa(i)
		switch partitionOf(d) {
		case "DPX", "TPX", "QPX", "CPX":
			if pd, ok := pciDevice(d.bdf); ok {
				keys[i] = "pci:" + pd
			}
		case "GCD":
			gcds = append(gcds, i)
		}
	}
	bySerial := map[string][]int{}
	serialsOK := len(gcds) > 0
	for _, i := range gcds {
		s := strings.TrimSpace(devs[i].serial)
		if !usableSerial(s) {
			serialsOK = false
			break
		}
		bySerial[s] = append(bySerial[s], i)
	}
	for _, m := range bySerial {
		if len(m) != 2 {
			serialsOK = false
		}
	}
	for n, i := range gcds {
		if serialsOK {
			keys[i] = "serial:" + strings.TrimSpace(devs[i].serial)
		} else {
			keys[i] = "pair:" + strconv.Itoa(n/2)
		}
	}
	groupOf = make([]int, len(devs))
	index := map[string]int{}
	for i, k := range keys {
		g, seen := index[k]
		if !seen {
			g = len(members)
			index[k] = g
			members = append(members, nil)
		}
		groupOf[i] = g
		members[g] = append(members[g], i)
	}
	return groupOf, members
}

// Plausibility bounds. A powered GPU never draws 0 W, sits at 0 °C or runs
// its clocks at 0 Hz: AMD tools report 0 for "not measured" (the second
// GCD of an MI250X), and 0xFFFF or 0xFFFFFFFF for "not supported".
const (
	maxPlausibleWatts   = 10000
	maxPlausibleCelsius = 200
	maxPlausibleHz      = 100e9
)

func bad(v, lowExclusive, highExclusive float64) bool {
	return math.IsNaN(v) || math.IsInf(v, 0) || v <= lowExclusive || v >= highExclusive
}

// sanitize marks missing the fields of r whose values are impossible:
// utilisation or memory controller activity outside 0–1, VRAM used above
// total (both marked, as either may be wrong), a total of 0, power ≤ 0 W or
// above 10 kW, energy ≤ 0 J, temperature outside (0, 200) °C, clocks ≤ 0
// Hz, link throughput negative or above 10 TB/s.
func sanitize(r *gpu.Reading) {
	if r.Has(gpu.FieldUtilization) {
		if u := r.UtilizationRatio; math.IsNaN(u) || u < 0 || u > 1 {
			r.Drop(gpu.FieldUtilization)
		}
	}
	if r.Has(gpu.FieldDRAMActivity) {
		if u := r.DRAMActivity; math.IsNaN(u) || u < 0 || u > 1 {
			r.Drop(gpu.FieldDRAMActivity)
		}
	}
	if r.Has(gpu.FieldLink) && !(plausibleLinkRate(r.LinkRxBytesPerSecond) && plausibleLinkRate(r.LinkTxBytesPerSecond)) {
		r.Drop(gpu.FieldLink)
	}
	if r.Has(gpu.FieldMemoryTotal) && r.MemoryTotalBytes == 0 {
		r.Drop(gpu.FieldMemoryTotal)
	}
	if r.Has(gpu.FieldMemoryUsed|gpu.FieldMemoryTotal) && r.MemoryUsedBytes > r.MemoryTotalBytes {
		r.Drop(gpu.FieldMemoryUsed | gpu.FieldMemoryTotal)
	}
	if r.Has(gpu.FieldPower) && bad(r.PowerWatts, 0, maxPlausibleWatts) {
		r.Drop(gpu.FieldPower)
	}
	if r.Has(gpu.FieldEnergy) && bad(r.EnergyJoules, 0, math.MaxFloat64) {
		r.Drop(gpu.FieldEnergy)
	}
	if r.Has(gpu.FieldTemperature) && bad(r.TemperatureCelsius, 0, maxPlausibleCelsius) {
		r.Drop(gpu.FieldTemperature)
	}
	if r.Has(gpu.FieldSMClock) && bad(r.SMClockHz, 0, maxPlausibleHz) {
		r.Drop(gpu.FieldSMClock)
	}
	if r.Has(gpu.FieldMemClock) && bad(r.MemClockHz, 0, maxPlausibleHz) {
		r.Drop(gpu.FieldMemClock)
	}
}

// socketFigures are the values that a compute partition (DPX, TPX, QPX,
// CPX) of an MI300 reports for its whole physical GPU: the memory
// controllers' activity (HBM is shared: GPU metrics has one
// average_umc_activity per socket) and the XGMI links (one set per socket).
// ROCm ≥ 6.4.1 reports them on the first partition only, earlier releases
// mirror them on every partition. Like power, they are kept on the
// domain's owner only. The two GCDs of an MI250X each have their own memory
// controllers and links: there, they stay on every GCD.
const socketFigures = gpu.FieldDRAMActivity | gpu.FieldLink

// checker applies the consistency rules to the readings of one backend. It
// keeps state between sampling passes: the owner of each shared power
// domain, the last energy counter of each device and its XGMI counters.
type checker struct {
	groupOf     []int
	members     [][]int
	partitioned []bool // per domain: the compute partitions of one MI300
	owner       []int  // per domain: position reporting its power; -1 undecided
	lastEnergy  []float64
	haveLast    []bool
	links       []linkRate
}

func newChecker(devs []devInfo) *checker {
	groupOf, members := powerGroups(devs)
	c := &checker{
		groupOf:     groupOf,
		members:     members,
		partitioned: make([]bool, len(members)),
		owner:       make([]int, len(members)),
		lastEnergy:  make([]float64, len(devs)),
		haveLast:    make([]bool, len(devs)),
		links:       make([]linkRate, len(devs)),
	}
	for g, m := range members {
		c.owner[g] = -1
		switch partitionOf(devs[m[0]]) {
		case "DPX", "TPX", "QPX", "CPX":
			c.partitioned[g] = len(m) > 1
		}
	}
	return c
}

// shared reports whether the device at pos shares its power domain.
func (c *checker) shared(pos int) bool { return len(c.members[c.groupOf[pos]]) > 1 }

// skipPower reports whether power and energy of the device at pos need not
// be read: another device of its domain reports them.
func (c *checker) skipPower(pos int) bool {
	g := c.groupOf[pos]
	return len(c.members[g]) > 1 && c.owner[g] >= 0 && c.owner[g] != pos
}

// skipSocketFigures reports whether the socket-wide figures of the device
// at pos need not be read: it is a compute partition whose domain's owner
// is another partition.
func (c *checker) skipSocketFigures(pos int) bool {
	return c.partitioned[c.groupOf[pos]] && c.skipPower(pos)
}

// prime chooses the owner of each shared domain from a first set of
// sanitized readings (one per position): the first member, in enumeration
// order, that reports power, else the first that reports energy. Domains
// with neither stay undecided and are decided by apply.
func (c *checker) prime(readings []gpu.Reading) {
	for g, m := range c.members {
		if len(m) < 2 || c.owner[g] >= 0 {
			continue
		}
		for _, f := range []gpu.Field{gpu.FieldPower, gpu.FieldEnergy} {
			for _, pos := range m {
				if pos < len(readings) && readings[pos].Has(f) && c.owner[g] < 0 {
					c.owner[g] = pos
				}
			}
		}
	}
}

// apply runs the rules on the reading of the device at pos:
//
//  1. sanitize (impossible values → missing);
//  2. in a shared power domain, power and energy stay only on the domain's
//     owner (the package power is attributed once, to the device that
//     reports it) and are missing on the other members — never 0 W;
//  3. on the compute partitions of one MI300, the socket-wide figures
//     (memory controller activity, XGMI) likewise stay only on the owner
//     (the first partition while no owner is decided);
//  4. an energy counter lower than the device's previous one is missing
//     for this pass (the new value becomes the reference, so a counter
//     reset by a driver reload recovers on the next pass).
func (c *checker) apply(pos int, r *gpu.Reading) {
	sanitize(r)
	g := c.groupOf[pos]
	if len(c.members[g]) > 1 {
		if c.owner[g] < 0 && (r.Has(gpu.FieldPower) || r.Has(gpu.FieldEnergy)) {
			c.owner[g] = pos
		}
		if c.owner[g] != pos {
			r.Drop(gpu.FieldPower | gpu.FieldEnergy)
		}
		if c.partitioned[g] {
			owner := c.owner[g]
			if owner < 0 {
				owner = c.members[g][0]
			}
			if owner != pos {
				r.Drop(socketFigures)
			}
		}
	}
	if r.Has(gpu.FieldEnergy) {
		e := r.EnergyJoules
		if c.haveLast[pos] && e < c.lastEnergy[pos] {
			r.Drop(gpu.FieldEnergy)
		}
		c.lastEnergy[pos], c.haveLast[pos] = e, true
	}
}
