//go:build cgo

package nvidia

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/jobsight/jobsight/agent/gpu"
)

// valueNotAvailable is NVML_VALUE_NOT_AVAILABLE ((unsigned long long)-1),
// which NVML puts in a process's used memory when it does not know it.
const valueNotAvailable = ^uint64(0)

// Unit conversions.
const (
	wattsPerMilliwatt = 1e-3
	joulesPerMillij   = 1e-3
	hertzPerMegahertz = 1e6
	bytesPerKB        = 1024 // NVML's PCIe throughput is in KB/s, KB = 1024 bytes
)

// Backend reads NVIDIA GPUs through NVML. It implements gpu.Backend and,
// like every gpu.Backend, is not safe for concurrent use.
type Backend struct {
	lib     nvml.Interface
	devices []gpu.Device
	// handles is indexed by gpu.Device.Index; an entry whose dev is nil is
	// a GPU that could not be enumerated.
	handles  []handle
	problems []error
	closed   bool
	now      func() time.Time // the clock of the energy estimate; a test seam
	// gpmEvery is the shortest GPM window (SetActivityInterval).
	gpmEvery time.Duration
}

// energyEvery is how often the energy counter is read per device. The call
// costs 3.9 ms of CPU per device on an H200 with driver 580 (measured with
// getrusage, docs/performance.md; the field-value API costs the same),
// 35 times the rest of a sample with GPM. Between two reads the energy is
// the last counter plus the power read in each pass: on the H200, 30 s
// jobs wholly between counter reads came within 3.4 % of nvidia-smi's
// power samples integrated over the same window. Every 60 s keeps 8 GPUs'
// counters at 0.5 ms of CPU per second.
const energyEvery = 60 * time.Second

// handle is one enumerated device: its NVML handle (a GPU or a MIG
// device), a label for errors, and what it is known not to support.
type handle struct {
	dev   nvml.Device
	label string
	// unsupported are fields NVML said NOT_SUPPORTED for: not asked again.
	unsupported gpu.Field
	// noProcesses: GetComputeRunningProcesses is not supported.
	noProcesses bool
	// memoryV1: the driver lacks GetMemoryInfo_v2 (before R510), so
	// memory in use includes what the driver reserves for itself.
	memoryV1 bool
	// The energy counter and its estimate between reads (see energyEvery):
	// counterJ is the counter as last read at counterAt, sinceJ the power
	// integrated since, lastJ the value last returned (never returned
	// lower while the counter has not gone back), lastAt its time.
	counterJ, sinceJ, lastJ float64
	counterAt, lastAt       time.Time
	// gpmParent is the whole GPU of a MIG device (nil for a whole GPU),
	// which says whether GPM is supported; gpm is the device's GPM state.
	gpmParent nvml.Device
	gpm       gpmState
}

var _ gpu.Backend = (*Backend)(nil)

// OpenSystem opens the host's NVML (libnvidia-ml.so.1, found by dlopen)
// with nvml.New and enumerates its devices. Without the library or the
// driver the error wraps gpu.ErrUnavailable.
func OpenSystem() (*Backend, error) {
	return Open(nvml.New())
}

// Open initialises lib (nvml.Interface.Init) and enumerates its devices;
// Close shuts it down again. When Init fails because the library or the
// kernel driver is absent, or NVML sees no GPU, the error wraps
// gpu.ErrUnavailable (and, for Init, the nvml.Return). Any other failure
// to initialise or to count the devices is an error; a single GPU that
// cannot be enumerated is left out and reported by EnumerationErrors.
func Open(lib nvml.Interface) (*Backend, error) {
	if lib == nil {
		return nil, errors.New("nvidia: open: nil nvml.Interface")
	}
	if ret := lib.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND || ret == nvml.ERROR_DRIVER_NOT_LOADED {
			return nil, fmt.Errorf("nvidia: nvml init: %w: %w", gpu.ErrUnavailable, ret)
		}
		return nil, fmt.Errorf("nvidia: nvml init: %w", ret)
	}
	b := &Backend{lib: lib, now: time.Now, gpmEvery: DefaultActivityInterval}
	if err := b.enumerate(); err != nil {
		if ret := lib.Shutdown(); ret != nvml.SUCCESS {
			err = errors.Join(err, fmt.Errorf("nvidia: nvml shutdown: %w", ret))
		}
		return nil, err
	}
	return b, nil
}

// Name returns "nvml".
func (b *Backend) Name() string { return backendName }

// Devices returns the devices enumerated at open: the whole GPUs in NVML
// index order, then the MIG devices. The slice is the caller's.
func (b *Backend) Devices() []gpu.Device { return slices.Clone(b.devices) }

// EnumerationErrors returns the errors met while enumerating devices at
// open: GPUs left out (lost, no permission) and MIG devices that could not
// be listed. Nil when every device was enumerated.
func (b *Backend) EnumerationErrors() []error { return slices.Clone(b.problems) }

// Skip stops reading fields on every device: they stay missing. The agent
// skips gpu.FieldPCIe unless configured, because NVML measures PCIe
// throughput over a 20 ms window per call, two calls per GPU.
func (b *Backend) Skip(fields gpu.Field) {
	for i := range b.handles {
		b.handles[i].unsupported |= fields
	}
}

// SetActivityInterval sets the shortest window between two GPM samples of
// a device (DefaultActivityInterval unless set); below
// MinActivityInterval it is raised to it. 0 turns GPM off: the activity
// figures stay missing and PCIe comes from the per-call counter (unless
// skipped).
func (b *Backend) SetActivityInterval(d time.Duration) {
	if d <= 0 {
		b.Skip(gpmFields)
		return
	}
	b.gpmEvery = max(d, MinActivityInterval)
}

// Close shuts NVML down (nvml.Interface.Shutdown). Only the first call
// does anything; afterwards Read and Processes fail.
func (b *Backend) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	for i := range b.handles {
		if b.handles[i].dev != nil {
			b.gpmFree(&b.handles[i])
		}
	}
	if ret := b.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("nvidia: nvml shutdown: %w", ret)
	}
	return nil
}

// Read fills in r for the device with the given Index, with one NVML call
// per field (two for PCIe), in the order of gpu.Field. It does not Reset r.
// See the package documentation for which errors leave a field missing and
// which fail the read.
func (b *Backend) Read(index int, r *gpu.Reading) error {
	h, err := b.handle(index)
	if err != nil {
		return err
	}
	d := h.dev

	if h.wants(gpu.FieldUtilization) {
		u, ret := d.GetUtilizationRates()
		if ok, err := h.check(gpu.FieldUtilization, "GetUtilizationRates", ret); err != nil {
			return err
		} else if ok {
			r.UtilizationRatio = float64(u.Gpu) / 100
			r.Set(gpu.FieldUtilization)
		}
	}
	if h.wants(gpu.FieldMemoryUsed | gpu.FieldMemoryTotal) {
		used, total, call, ret := h.memory()
		if ok, err := h.check(gpu.FieldMemoryUsed|gpu.FieldMemoryTotal, call, ret); err != nil {
			return err
		} else if ok {
			r.MemoryUsedBytes = used
			r.MemoryTotalBytes = total
			r.Set(gpu.FieldMemoryUsed | gpu.FieldMemoryTotal)
		}
	}
	if h.wants(gpu.FieldPower) {
		mw, ret := d.GetPowerUsage()
		if ok, err := h.check(gpu.FieldPower, "GetPowerUsage", ret); err != nil {
			return err
		} else if ok {
			r.PowerWatts = float64(mw) * wattsPerMilliwatt
			r.Set(gpu.FieldPower)
		}
	}
	if h.wants(gpu.FieldEnergy) {
		if err := h.energy(b.now(), r); err != nil {
			return err
		}
	}
	if h.wants(gpu.FieldTemperature) {
		c, ret := d.GetTemperature(nvml.TEMPERATURE_GPU)
		if ok, err := h.check(gpu.FieldTemperature, "GetTemperature", ret); err != nil {
			return err
		} else if ok {
			r.TemperatureCelsius = float64(c)
			r.Set(gpu.FieldTemperature)
		}
	}
	if h.wants(gpu.FieldSMClock) {
		mhz, ret := d.GetClockInfo(nvml.CLOCK_SM)
		if ok, err := h.check(gpu.FieldSMClock, "GetClockInfo(SM)", ret); err != nil {
			return err
		} else if ok {
			r.SMClockHz = float64(mhz) * hertzPerMegahertz
			r.Set(gpu.FieldSMClock)
		}
	}
	if h.wants(gpu.FieldMemClock) {
		mhz, ret := d.GetClockInfo(nvml.CLOCK_MEM)
		if ok, err := h.check(gpu.FieldMemClock, "GetClockInfo(MEM)", ret); err != nil {
			return err
		} else if ok {
			r.MemClockHz = float64(mhz) * hertzPerMegahertz
			r.Set(gpu.FieldMemClock)
		}
	}
	if h.wants(gpmFields) {
		b.gpm(h, b.now(), r)
	}
	if h.wants(gpu.FieldPCIe) && !r.Has(gpu.FieldPCIe) && (h.gpm.off || !h.gpm.checked || (h.gpm.lastFields != 0 && !h.gpm.everPCIe)) {
		// GPM gives no PCIe here (none on the device, turned off, or its
		// windows lack the PCIe metrics): NVML's per-call counter, 20 ms
		// a direction.
		rx, ret := d.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES)
		ok, err := h.check(gpu.FieldPCIe, "GetPcieThroughput(RX)", ret)
		if err != nil {
			return err
		}
		if ok {
			tx, ret := d.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES)
			if ok, err := h.check(gpu.FieldPCIe, "GetPcieThroughput(TX)", ret); err != nil {
				return err
			} else if ok {
				r.PCIeRxBytesPerSecond = float64(rx) * bytesPerKB
				r.PCIeTxBytesPerSecond = float64(tx) * bytesPerKB
				r.Set(gpu.FieldPCIe)
			}
		}
	}
	return nil
}

// Processes appends the compute processes on the device
// (GetComputeRunningProcesses; for a MIG device, those in that MIG
// device) to buf. A process whose memory NVML does not know has
// MemoryKnown false. When the device does not list processes
// (NOT_SUPPORTED, NO_PERMISSION, …) the error wraps gpu.ErrNoProcessList.
func (b *Backend) Processes(index int, buf []gpu.Process) ([]gpu.Process, error) {
	h, err := b.handle(index)
	if err != nil {
		return buf, err
	}
	if h.noProcesses {
		return buf, fmt.Errorf("nvidia: %s: %w", h.label, gpu.ErrNoProcessList)
	}
	infos, ret := h.dev.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		missing, permanent := fieldMissing(ret)
		if !missing {
			return buf, fmt.Errorf("nvidia: %s: GetComputeRunningProcesses: %w", h.label, ret)
		}
		h.noProcesses = permanent
		return buf, fmt.Errorf("nvidia: %s: GetComputeRunningProcesses: %w: %w", h.label, ret, gpu.ErrNoProcessList)
	}
	for _, p := range infos {
		known := p.UsedGpuMemory != valueNotAvailable
		var mem uint64
		if known {
			mem = p.UsedGpuMemory
		}
		buf = append(buf, gpu.Process{PID: p.Pid, MemoryBytes: mem, MemoryKnown: known})
	}
	return buf, nil
}

// handle returns the device with the given Index.
func (b *Backend) handle(index int) (*handle, error) {
	if b.closed {
		return nil, fmt.Errorf("nvidia: device %d: backend closed", index)
	}
	if index < 0 || index >= len(b.handles) || b.handles[index].dev == nil {
		return nil, fmt.Errorf("nvidia: no device with index %d", index)
	}
	return &b.handles[index], nil
}

// energy sets the device's energy counter in r: read from NVML at most
// every energyEvery, and in between the last counter plus the power of each
// pass (r's, read just before) times the time since the pass before. What
// it returns never goes down unless the counter itself went back (a driver
// reload), so rate() and increases stay right; a job's total is exact to
// within the power samples of the last energyEvery.
func (h *handle) energy(now time.Time, r *gpu.Reading) error {
	if !h.counterAt.IsZero() && now.Sub(h.counterAt) < energyEvery && now.After(h.lastAt) && r.Has(gpu.FieldPower) {
		h.sinceJ += r.PowerWatts * now.Sub(h.lastAt).Seconds()
		h.lastJ = max(h.lastJ, h.counterJ+h.sinceJ)
		h.lastAt = now
		r.EnergyJoules = h.lastJ
		r.Set(gpu.FieldEnergy)
		return nil
	}
	mj, ret := h.dev.GetTotalEnergyConsumption()
	if ok, err := h.check(gpu.FieldEnergy, "GetTotalEnergyConsumption", ret); !ok {
		return err
	}
	j := float64(mj) * joulesPerMillij
	if h.counterAt.IsZero() || j < h.counterJ {
		h.lastJ = j // the first read, or the counter went back
	} else {
		h.lastJ = max(h.lastJ, j)
	}
	h.counterJ, h.sinceJ, h.counterAt, h.lastAt = j, 0, now, now
	r.EnergyJoules = h.lastJ
	r.Set(gpu.FieldEnergy)
	return nil
}

// memory reads the device's memory in use and its total. NVML's v1 call
// counts the memory the driver and firmware reserve as used (615 MiB on an
// H200 with driver 580, with no process on it), so every job that holds a
// GPU would show that much in use; the v2 call keeps it apart, as
// nvidia-smi does. Drivers without v2 fall back to v1 for good.
func (h *handle) memory() (used, total uint64, call string, ret nvml.Return) {
	if !h.memoryV1 {
		m, ret := h.dev.GetMemoryInfo_v2()
		switch ret {
		case nvml.SUCCESS:
			return m.Used, m.Total, "GetMemoryInfo_v2", ret
		case nvml.ERROR_FUNCTION_NOT_FOUND, nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_ARGUMENT_VERSION_MISMATCH:
			h.memoryV1 = true
		default:
			return 0, 0, "GetMemoryInfo_v2", ret
		}
	}
	m, ret := h.dev.GetMemoryInfo()
	return m.Used, m.Total, "GetMemoryInfo", ret
}

// wants reports whether fields f are still worth asking for.
func (h *handle) wants(f gpu.Field) bool { return h.unsupported&f == 0 }

// check sorts out the result of one NVML call that reads fields f: ok when
// the value can be stored; neither ok nor an error when the fields stay
// missing (remembered when that is permanent); an error naming the device
// and the call otherwise.
func (h *handle) check(f gpu.Field, call string, ret nvml.Return) (ok bool, err error) {
	if ret == nvml.SUCCESS {
		return true, nil
	}
	missing, permanent := fieldMissing(ret)
	if !missing {
		return false, fmt.Errorf("nvidia: %s: %s: %w", h.label, call, ret)
	}
	if permanent {
		h.unsupported |= f
	}
	return false, nil
}

// fieldMissing says whether an NVML error only means "this value is not
// available" (rather than "the device cannot be read"), and whether that
// will stay so for the life of the backend.
func fieldMissing(ret nvml.Return) (missing, permanent bool) {
	switch ret {
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
		return true, true
	case nvml.ERROR_NOT_FOUND, nvml.ERROR_NO_PERMISSION, nvml.ERROR_NO_DATA:
		return true, false
	}
	return false, false
}

// enumerate lists the whole GPUs, then the MIG devices of those with MIG
// enabled, filling b.devices, b.handles and b.problems.
func (b *Backend) enumerate() error {
	count, ret := b.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("nvidia: DeviceGetCount: %w", ret)
	}
	if count == 0 {
		return fmt.Errorf("nvidia: NVML sees no GPU: %w", gpu.ErrUnavailable)
	}
	b.handles = make([]handle, count)
	for i := range count {
		d, ret := b.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			b.problems = append(b.problems, fmt.Errorf("nvidia: GPU %d left out: DeviceGetHandleByIndex: %w", i, ret))
			continue
		}
		dev, err := describeGPU(i, d)
		if err != nil {
			b.problems = append(b.problems, fmt.Errorf("nvidia: GPU %d left out: %w", i, err))
			continue
		}
		b.devices = append(b.devices, dev)
		b.handles[i] = handle{dev: d, label: label(dev)}
	}
	if len(b.devices) == 0 {
		return fmt.Errorf("nvidia: none of the %d GPUs could be enumerated: %w", count, errors.Join(b.problems...))
	}
	// addMIG appends to b.devices: only the whole GPUs listed so far are
	// parents.
	for _, parent := range slices.Clone(b.devices) {
		b.addMIG(parent, b.handles[parent.Index].dev)
	}
	return nil
}

// describeGPU reads what gpu.Device says about whole GPU i. A value NVML
// cannot give is left unknown; any other error fails the GPU.
func describeGPU(i int, d nvml.Device) (gpu.Device, error) {
	dev := gpu.Device{Index: i, Minor: -1, Vendor: gpu.VendorNVIDIA, Parent: -1}
	minor, ret := d.GetMinorNumber()
	if err := metaErr("GetMinorNumber", ret); err != nil {
		return dev, err
	} else if ret == nvml.SUCCESS {
		dev.Minor = minor
	}
	uuid, ret := d.GetUUID()
	if err := metaErr("GetUUID", ret); err != nil {
		return dev, err
	}
	dev.UUID = uuid
	name, ret := d.GetName()
	if err := metaErr("GetName", ret); err != nil {
		return dev, err
	}
	dev.Model = name
	pci, ret := d.GetPciInfo()
	if err := metaErr("GetPciInfo", ret); err != nil {
		return dev, err
	} else if ret == nvml.SUCCESS {
		dev.PCIBusID = busID(pci)
	}
	mem, ret := d.GetMemoryInfo()
	if err := metaErr("GetMemoryInfo", ret); err != nil {
		return dev, err
	} else if ret == nvml.SUCCESS {
		dev.MemoryTotalBytes = mem.Total
	}
	return dev, nil
}

// addMIG adds the MIG devices of parent when MIG mode is enabled on it.
// Problems are recorded; the parent stays listed whatever happens.
func (b *Backend) addMIG(parent gpu.Device, d nvml.Device) {
	current, _, ret := d.GetMigMode()
	if ret != nvml.SUCCESS {
		if missing, _ := fieldMissing(ret); !missing {
			b.problems = append(b.problems, fmt.Errorf("nvidia: %s: GetMigMode: %w", label(parent), ret))
		}
		return
	}
	if current != nvml.DEVICE_MIG_ENABLE {
		return
	}
	slots, ret := d.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		b.problems = append(b.problems, fmt.Errorf("nvidia: %s: MIG devices left out: GetMaxMigDeviceCount: %w", label(parent), ret))
		return
	}
	for slot := range slots {
		m, ret := d.GetMigDeviceHandleByIndex(slot)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue // an empty slot
		}
		if ret != nvml.SUCCESS {
			b.problems = append(b.problems, fmt.Errorf("nvidia: %s: MIG slot %d left out: GetMigDeviceHandleByIndex: %w", label(parent), slot, ret))
			continue
		}
		dev, err := describeMIG(len(b.handles), parent, m)
		if err != nil {
			b.problems = append(b.problems, fmt.Errorf("nvidia: %s: MIG slot %d left out: %w", label(parent), slot, err))
			continue
		}
		b.devices = append(b.devices, dev)
		b.handles = append(b.handles, handle{dev: m, label: label(dev), gpmParent: d})
	}
}

// describeMIG reads what gpu.Device says about a MIG device of parent,
// which gets Index index.
func describeMIG(index int, parent gpu.Device, m nvml.Device) (gpu.Device, error) {
	dev := gpu.Device{
		Index:     index,
		Minor:     -1,
		Model:     parent.Model,
		Vendor:    gpu.VendorNVIDIA,
		Parent:    parent.Index,
		Partition: "MIG",
		PCIBusID:  parent.PCIBusID,
	}
	uuid, ret := m.GetUUID()
	if err := metaErr("GetUUID", ret); err != nil {
		return dev, err
	}
	dev.UUID = uuid
	name, ret := m.GetName()
	if err := metaErr("GetName", ret); err != nil {
		return dev, err
	}
	if p := migProfile(name); p != "" {
		dev.Partition = p
	}
	mem, ret := m.GetMemoryInfo()
	if err := metaErr("GetMemoryInfo", ret); err != nil {
		return dev, err
	} else if ret == nvml.SUCCESS {
		dev.MemoryTotalBytes = mem.Total
	}
	return dev, nil
}

// metaErr is nil when a call made at enumeration succeeded or only could
// not give its value; otherwise the call's error.
func metaErr(call string, ret nvml.Return) error {
	if ret == nvml.SUCCESS {
		return nil
	}
	if missing, _ := fieldMissing(ret); missing {
		return nil
	}
	return fmt.Errorf("%s: %w", call, ret)
}

// migProfile returns the profile in a MIG device's name
// ("NVIDIA A100-SXM4-40GB MIG 3g.20gb" → "3g.20gb"), "" when the name has
// none.
func migProfile(name string) string {
	i := strings.LastIndex(name, "MIG ")
	if i < 0 {
		return ""
	}
	return strings.TrimSpace(name[i+len("MIG "):])
}

// busID returns a PCI info's bus id as a string ("00000000:07:00.0").
func busID(p nvml.PciInfo) string {
	if s := cString(p.BusId[:]); s != "" {
		return s
	}
	return cString(p.BusIdLegacy[:])
}

// cString converts a NUL-terminated C char array.
func cString(c []int8) string {
	var sb strings.Builder
	for _, ch := range c {
		if ch == 0 {
			break
		}
		sb.WriteByte(byte(ch)) // #nosec G115 -- keeps the C char's 8 bits: a UTF-8 byte above 0x7f is a negative int8
	}
	return sb.String()
}

// label names a device in errors: "device 3 (GPU-…)".
func label(d gpu.Device) string {
	if d.UUID == "" {
		return fmt.Sprintf("device %d", d.Index)
	}
	return fmt.Sprintf("device %d (%s)", d.Index, d.UUID)
}
