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
	// ProfileLaunchBound: utilisation ~95 % but the SMs ~10 % busy, low
	// occupancy, no tensor work: a stream of tiny kernels (or one kernel
	// on a few SMs) keeps "a kernel is running" true while the device idles.
	ProfileLaunchBound Profile = "launch-bound"
	// ProfileInputBound: utilisation ~35 %, SMs ~25 % busy, PCIe receive
	// ~20 GB/s: the device waits for data copied from the host.
	ProfileInputBound Profile = "input-bound"
)

// Profiles lists the valid profiles.
var Profiles = []Profile{ProfileIdle, ProfileSteady, ProfileOneOfN, ProfileDropping, ProfileMemoryHeavy,
	ProfileLaunchBound, ProfileInputBound}

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

// simActivity is what a simulated device's kernels do: the values of the
// Reading's activity and throughput fields (fractions 0–1, bytes/s).
type simActivity struct {
	sm, occupancy                              float64
	tensor, tensorFP64, tensorFP16, tensorINT8 float64
	fp64, fp32, fp16                           float64
	dram                                       float64
	pcieRx, pcieTx, linkRx, linkTx             float64
}

// The activity of each kind of load, shaped like what NVML's GPM metrics
// show for such a job on an H100.
var (
	// Training in mixed precision: SMs mostly busy, tensor cores on FP16/
	// BF16, moderate memory traffic, gradients over NVLink, little PCIe.
	activitySteady = simActivity{sm: 0.75, occupancy: 0.45, tensor: 0.55, tensorFP16: 0.52, tensorINT8: 0.03,
		fp64: 0.01, fp32: 0.2, fp16: 0.08, dram: 0.35, pcieRx: 1.2e9, pcieTx: 0.3e9, linkRx: 12e9, linkTx: 12e9}
	// After a dropping job stalls: a trickle.
	activityStalled = simActivity{sm: 0.03, occupancy: 0.02, tensor: 0.01, tensorFP16: 0.01, fp32: 0.01, dram: 0.02,
		pcieRx: 50e6, pcieTx: 10e6, linkRx: 5e6, linkTx: 5e6}
	// A model held in memory, hardly used.
	activityMemoryHeavy = simActivity{sm: 0.02, occupancy: 0.03, fp32: 0.01, dram: 0.03, pcieRx: 20e6, pcieTx: 5e6}
	// Tiny kernels back to back: busy by utilisation, idle by SM activity.
	activityLaunchBound = simActivity{sm: 0.1, occupancy: 0.05, tensor: 0.005, tensorFP16: 0.005, fp32: 0.04,
		fp16: 0.01, dram: 0.06, pcieRx: 300e6, pcieTx: 100e6}
	// Waiting for host-to-device copies.
	activityInputBound = simActivity{sm: 0.25, occupancy: 0.2, tensor: 0.15, tensorFP16: 0.14, tensorINT8: 0.01,
		fp32: 0.06, fp16: 0.03, dram: 0.12, pcieRx: 20e9, pcieTx: 0.5e9, linkRx: 1e9, linkTx: 1e9}
)

// scaled returns a with every figure times k, fractions kept within 0–1.
func (a simActivity) scaled(k float64) simActivity {
	f := func(v float64) float64 { return math.Max(0, math.Min(1, v*k)) }
	t := func(v float64) float64 { return math.Max(0, v*k) }
	return simActivity{sm: f(a.sm), occupancy: f(a.occupancy), tensor: f(a.tensor), tensorFP64: f(a.tensorFP64),
		tensorFP16: f(a.tensorFP16), tensorINT8: f(a.tensorINT8), fp64: f(a.fp64), fp32: f(a.fp32), fp16: f(a.fp16),
		dram: f(a.dram), pcieRx: t(a.pcieRx), pcieTx: t(a.pcieTx), linkRx: t(a.linkRx), linkTx: t(a.linkTx)}
}

// simLoad is a device's state now: utilisation and memory fraction,
// whether the job's processes are on it, and what its kernels do.
type simLoad struct {
	util, mem float64
	procs     bool
	act       simActivity
}

// load is a device's load now. A device no job attached to, or that its
// profile leaves idle, is all zeros.
func (s *Simulated) load(i int, now time.Time) simLoad {
	st := &s.state[i]
	if st.attached.IsZero() {
		return simLoad{}
	}
	age := now.Sub(st.attached).Seconds()
	wobble := 0.03 * math.Sin(age/7+float64(i)) // deterministic, so runs repeat
	k := 1 + wobble                             // the same wobble on the activity figures
	switch s.profile(i) {
	case ProfileSteady:
		return simLoad{0.9 + wobble, 0.6, true, activitySteady.scaled(k)}
	case ProfileOneOfN:
		if st.busy {
			return simLoad{0.9 + wobble, 0.6, true, activitySteady.scaled(k)}
		}
		return simLoad{}
	case ProfileDropping:
		if now.Sub(st.attached) < s.cfg.DropAfter {
			return simLoad{0.85 + wobble, 0.5, true, activitySteady.scaled(0.95 * k)}
		}
		return simLoad{0.05 + wobble/3, 0.5, true, activityStalled.scaled(k)}
	case ProfileMemoryHeavy:
		return simLoad{0.03 + wobble/3, 0.9, true, activityMemoryHeavy.scaled(k)}
	case ProfileLaunchBound:
		return simLoad{0.95 + wobble/3, 0.3, true, activityLaunchBound.scaled(k)}
	case ProfileInputBound:
		return simLoad{0.35 + wobble, 0.4, true, activityInputBound.scaled(k)}
	}
	return simLoad{}
}

// Read implements Backend. Power is 60 W idle plus 340 W at full
// utilisation; the energy counter integrates it. Every field is filled,
// the activity and throughput figures (SM, tensor, pipes, DRAM, PCIe,
// NVLink) included, as on a Hopper GPU whose driver offers GPM.
func (s *Simulated) Read(index int, r *Reading) error {
	if index < 0 || index >= len(s.devices) {
		return fmt.Errorf("simulated GPU %d: no such device", index)
	}
	now := s.cfg.Now()
	l := s.load(index, now)
	util, mem, a := math.Max(0, math.Min(1, l.util)), l.mem, l.act
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
	r.PCIeRxBytesPerSecond, r.PCIeTxBytesPerSecond = a.pcieRx, a.pcieTx
	r.SMActivity, r.SMOccupancy = a.sm, a.occupancy
	r.TensorActivity = a.tensor
	r.TensorFP64Activity, r.TensorFP16Activity, r.TensorINT8Activity = a.tensorFP64, a.tensorFP16, a.tensorINT8
	r.FP64Activity, r.FP32Activity, r.FP16Activity = a.fp64, a.fp32, a.fp16
	r.DRAMActivity = a.dram
	r.LinkRxBytesPerSecond, r.LinkTxBytesPerSecond = a.linkRx, a.linkTx
	r.Set(FieldPCIe | FieldSMActivity | FieldSMOccupancy | FieldTensorActivity | FieldTensorPrecision |
		FieldPipeActivity | FieldDRAMActivity | FieldLink)
	return nil
}

// Processes implements Backend: the attached job's program on devices its
// profile uses, holding the used memory.
func (s *Simulated) Processes(index int, buf []Process) ([]Process, error) {
	if index < 0 || index >= len(s.devices) {
		return buf, fmt.Errorf("simulated GPU %d: no such device", index)
	}
	l := s.load(index, s.cfg.Now())
	st := &s.state[index]
	if !l.procs || st.pid <= 0 {
		return buf, nil
	}
	return append(buf, Process{PID: uint32(st.pid), MemoryKnown: true,
		MemoryBytes: uint64(l.mem * float64(s.devices[index].MemoryTotalBytes))}), nil
}

// Close implements Backend.
func (s *Simulated) Close() error { return nil }
