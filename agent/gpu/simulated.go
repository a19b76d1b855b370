package gpu

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// SimulatedModel is the model name of simulated devices: it says what they
// are wherever it is shown.
const SimulatedModel = "Jobsight simulated GPU"

// Profile is a scripted load for a simulated device.
type Profile string

// The simulated load profiles. Each is what one kind of real job looks like
// on its GPUs, so that dashboards, alerts and reports can be exercised
// without hardware.
const (
	// ProfileIdle: the device is held and nothing runs on it (0 %
	// utilisation, no memory, no processes): the most wasted GPU.
	ProfileIdle Profile = "idle"
	// ProfileSteady: the job's processes keep the device busy (~90 %).
	ProfileSteady Profile = "steady"
	// ProfileOneOfN: of the devices one job holds, the lowest-index one is
	// busy (as steady) and the others idle: a job asking for N GPUs and
	// using one.
	ProfileOneOfN Profile = "one-of-n"
	// ProfileDropping: busy for DropAfter after the job attaches, then
	// ~5 %: a job that stalls on I/O or synchronisation.
	ProfileDropping Profile = "dropping"
	// ProfileMemoryHeavy: 90 % of device memory held, ~3 % utilisation:
	// a job that loads a model and waits (not idle: its memory is used).
	ProfileMemoryHeavy Profile = "memory-heavy"
)

// Profiles lists the valid profiles.
var Profiles = []Profile{ProfileIdle, ProfileSteady, ProfileOneOfN, ProfileDropping, ProfileMemoryHeavy}

// ParseProfile checks a profile name.
func ParseProfile(s string) (Profile, error) {
	p := Profile(strings.TrimSpace(s))
	if slices.Contains(Profiles, p) {
		return p, nil
	}
	names := make([]string, len(Profiles))
	for i, q := range Profiles {
		names[i] = string(q)
	}
	return "", fmt.Errorf("unknown simulated GPU profile %q (want one of %s)", s, strings.Join(names, ", "))
}

// SimConfig describes a simulated node.
type SimConfig struct {
	// Devices is the number of simulated GPUs (1–64).
	Devices int
	// MemoryBytes is each device's memory.
	MemoryBytes uint64
	// Profile is the load of every device not named in DeviceProfiles.
	Profile Profile
	// DeviceProfiles overrides Profile for single devices, by index.
	DeviceProfiles map[int]Profile
	// DropAfter is how long a "dropping" device stays busy after its job
	// attaches.
	DropAfter time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Simulated is a Backend whose devices follow scripted profiles. It is
// never chosen implicitly: the agent uses it only when its configuration
// names it, and every device says Simulated. A job's processes are placed
// on the devices it holds through Attach (a real backend sees them there
// because the job's processes opened the devices).
type Simulated struct {
	cfg     SimConfig
	devices []Device
	state   []simDevice
}

type simDevice struct {
	attached time.Time // when a job first attached (zero: none)
	pid      int32     // the attached job's process using the device (0: none)
	busy     bool      // for one-of-n: the lowest held device of its job
	energy   float64   // joules since the simulator started
	lastRead time.Time
}

// NewSimulated makes a simulated node.
func NewSimulated(cfg SimConfig) (*Simulated, error) {
	if cfg.Devices < 1 || cfg.Devices > 64 {
		return nil, fmt.Errorf("simulated GPUs: devices %d: want 1 to 64", cfg.Devices)
	}
	if cfg.MemoryBytes == 0 {
		cfg.MemoryBytes = 80 << 30
	}
	if cfg.Profile == "" {
		cfg.Profile = ProfileIdle
	}
	if _, err := ParseProfile(string(cfg.Profile)); err != nil {
		return nil, fmt.Errorf("simulated GPUs: %w", err)
	}
	for i, p := range cfg.DeviceProfiles {
		if i < 0 || i >= cfg.Devices {
			return nil, fmt.Errorf("simulated GPUs: profile for device %d, but there are %d devices", i, cfg.Devices)
		}
		if _, err := ParseProfile(string(p)); err != nil {
			return nil, fmt.Errorf("simulated GPUs: device %d: %w", i, err)
		}
	}
	if cfg.DropAfter <= 0 {
		cfg.DropAfter = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Simulated{cfg: cfg, devices: make([]Device, cfg.Devices), state: make([]simDevice, cfg.Devices)}
	for i := range s.devices {
		s.devices[i] = Device{
			Index: i, Minor: i, UUID: fmt.Sprintf("GPU-5131a7ed-0000-4000-8000-%012d", i),
			Model: SimulatedModel, Vendor: VendorNVIDIA, Parent: -1,
			PCIBusID: fmt.Sprintf("00000000:%02X:00.0", 0x10+i), MemoryTotalBytes: cfg.MemoryBytes, Simulated: true,
		}
	}
	return s, nil
}

// Name implements Backend.
func (s *Simulated) Name() string { return "simulated" }

// Devices implements Backend.
func (s *Simulated) Devices() []Device { return s.devices }

// Attach places a job's program (its newest process) on the devices it
// holds, as the job's own CUDA/HIP runtime would. Devices whose profile is
// idle show no process.
func (s *Simulated) Attach(held []int, pids []int32) {
	lowest := -1
	for _, i := range held {
		if i >= 0 && i < len(s.state) && (lowest < 0 || i < lowest) {
			lowest = i
		}
	}
	now := s.cfg.Now()
	for _, i := range held {
		if i < 0 || i >= len(s.state) {
			continue
		}
		st := &s.state[i]
		if st.attached.IsZero() {
			st.attached = now
		}
		st.busy = i == lowest
		st.pid = 0
		for _, p := range pids { // the newest process: the job's program, not its shell
			st.pid = max(st.pid, p)
		}
	}
}

func (s *Simulated) profile(i int) Profile {
	if p, ok := s.cfg.DeviceProfiles[i]; ok {
		return p
	}
	return s.cfg.Profile
}

// load is a device's utilisation and memory fraction now, and whether the
// job's processes are on it.
func (s *Simulated) load(i int, now time.Time) (util, mem float64, procs bool) {
	st := &s.state[i]
	if st.attached.IsZero() {
		return 0, 0, false
	}
	age := now.Sub(st.attached).Seconds()
	wobble := 0.03 * math.Sin(age/7+float64(i)) // deterministic, so runs repeat
	switch s.profile(i) {
	case ProfileSteady:
		return 0.9 + wobble, 0.6, true
	case ProfileOneOfN:
		if st.busy {
			return 0.9 + wobble, 0.6, true
		}
		return 0, 0, false
	case ProfileDropping:
		if now.Sub(st.attached) < s.cfg.DropAfter {
			return 0.85 + wobble, 0.5, true
		}
		return 0.05 + wobble/3, 0.5, true
	case ProfileMemoryHeavy:
		return 0.03 + wobble/3, 0.9, true
	}
	return 0, 0, false
}

// Read implements Backend. Power is 60 W idle plus 340 W at full load; the
// energy counter integrates it.
func (s *Simulated) Read(index int, r *Reading) error {
	if index < 0 || index >= len(s.devices) {
		return fmt.Errorf("simulated GPU %d: no such device", index)
	}
	now := s.cfg.Now()
	util, mem, _ := s.load(index, now)
	util = math.Max(0, math.Min(1, util))
	power := 60 + 340*util
	st := &s.state[index]
	if !st.lastRead.IsZero() {
		if dt := now.Sub(st.lastRead).Seconds(); dt > 0 {
			st.energy += power * dt
		}
	}
	st.lastRead = now
	total := s.devices[index].MemoryTotalBytes
	r.UtilizationRatio = util
	r.MemoryUsedBytes = uint64(mem * float64(total))
	r.MemoryTotalBytes = total
	r.PowerWatts = power
	r.EnergyJoules = st.energy
	r.TemperatureCelsius = 35 + 45*util
	r.SMClockHz = (1.41e9) * math.Min(1, 0.3+util)
	r.MemClockHz = 1.593e9
	r.Set(FieldUtilization | FieldMemoryUsed | FieldMemoryTotal | FieldPower | FieldEnergy | FieldTemperature | FieldSMClock | FieldMemClock)
	// PCIe throughput is not simulated: it stays missing, as on devices
	// whose driver does not report it.
	return nil
}

// Processes implements Backend: the attached job's program on devices its
// profile uses, holding the used memory.
func (s *Simulated) Processes(index int, buf []Process) ([]Process, error) {
	if index < 0 || index >= len(s.devices) {
		return buf, fmt.Errorf("simulated GPU %d: no such device", index)
	}
	_, mem, on := s.load(index, s.cfg.Now())
	st := &s.state[index]
	if !on || st.pid <= 0 {
		return buf, nil
	}
	return append(buf, Process{PID: uint32(st.pid), MemoryKnown: true,
		MemoryBytes: uint64(mem * float64(s.devices[index].MemoryTotalBytes))}), nil
}

// Close implements Backend.
func (s *Simulated) Close() error { return nil }
