package amd

import (
	"errors"
	"fmt"
	"time"

	"github.com/jobsight/jobsight/agent/gpu"
)

// Backend names, as written into documents.
const (
	// NameLibrary is the Name of the backend bound to libamd_smi.so.
	NameLibrary = "amdsmi"
	// NameCLI is the Name of the backend that runs the amd-smi tool.
	NameCLI = "amd-smi-cli"
)

// handle is an amdsmi_processor_handle: an opaque pointer owned by the C
// library, kept as an integer on the Go side.
type handle uintptr

// binding is the C library as the backend sees it: one method per amdsmi
// call, returning the call's status. Struct-filling calls write into buf
// (at least structBuf bytes, zeroed by the caller); the backend decodes the
// fields it needs with the offsets of layout.go. lib_cgo.go implements it
// with dlopen/dlsym; the tests implement it in Go.
type binding interface {
	// libVersion fills an amdsmi_version_t (amdsmi_get_lib_version).
	libVersion(buf []byte) status
	// processors lists the GPU processor handles, socket by socket
	// (amdsmi_get_socket_handles, amdsmi_get_processor_handles), the
	// order amd-smi numbers GPUs in.
	processors() ([]handle, error)
	uuid(h handle) (string, status)                     // amdsmi_get_gpu_device_uuid
	asicInfo(h handle, buf []byte) status               // amdsmi_get_gpu_asic_info
	boardInfo(h handle, buf []byte) status              // amdsmi_get_gpu_board_info
	deviceBDF(h handle) (uint64, status)                // amdsmi_get_gpu_device_bdf
	computePartition(h handle) (string, status)         // amdsmi_get_gpu_compute_partition
	enumerationInfo(h handle, buf []byte) status        // amdsmi_get_gpu_enumeration_info (6.4+)
	activity(h handle, buf []byte) status               // amdsmi_get_gpu_activity
	memoryTotal(h handle, kind uint32) (uint64, status) // amdsmi_get_gpu_memory_total
	memoryUsage(h handle, kind uint32) (uint64, status) // amdsmi_get_gpu_memory_usage
	powerInfo(h handle, buf []byte) status              // amdsmi_get_power_info
	// energyCount returns the accumulator and its resolution in µJ
	// (amdsmi_get_energy_count).
	energyCount(h handle) (uint64, float32, status)
	tempMetric(h handle, sensor, metric uint32) (int64, status) // amdsmi_get_temp_metric
	clockInfo(h handle, clk uint32, buf []byte) status          // amdsmi_get_clock_info
	// gpuMetrics fills an amdsmi_gpu_metrics_t (amdsmi_get_gpu_metrics_info);
	// buf holds gpuMetricsBuf bytes.
	gpuMetrics(h handle, buf []byte) status
	// processList calls amdsmi_get_gpu_process_list; buf receives pids
	// (ROCm 6.0, 6.1) or amdsmi_proc_info_t entries (6.2 and later).
	processList(h handle, max *uint32, buf []byte) status
	processInfo(h handle, pid uint32, buf []byte) status // amdsmi_get_gpu_process_info (6.0, 6.1)
	// close shuts the library down (amdsmi_shut_down) and unloads it.
	close() status
}

// Enum values of amdsmi.h used by the backend (the same in ROCm 6.0–7.x).
const (
	initAMDGPUs  = 1 << 1 // AMDSMI_INIT_AMD_GPUS
	memTypeVRAM  = 0      // AMDSMI_MEM_TYPE_VRAM
	clkGFX       = 0      // AMDSMI_CLK_TYPE_GFX (= AMDSMI_CLK_TYPE_SYS)
	clkMem       = 4      // AMDSMI_CLK_TYPE_MEM
	tempEdge     = 0      // AMDSMI_TEMPERATURE_TYPE_EDGE
	tempHotspot  = 1      // AMDSMI_TEMPERATURE_TYPE_HOTSPOT
	tempCurrent  = 0      // AMDSMI_TEMP_CURRENT
	uuidBufBytes = 64     // > AMDSMI_GPU_UUID_SIZE (38)
	nameBufBytes = 64     // for compute partition strings ("SPX", "CPX", …)
)

// LibBackend reads GPUs through the AMD SMI C library. It is not safe for
// concurrent use.
type LibBackend struct {
	lib     binding
	path    string
	version libVersion
	layout  layout
	handles []handle
	devices []gpu.Device
	check   *checker
	buf     []byte
	metrics []byte // gpuMetricsBuf bytes for amdsmi_gpu_metrics_t
	// noXGMI[pos]: the device's GPU metrics hold no XGMI counters (an
	// MI250X, or the call is not supported), found at open; not read again.
	noXGMI []bool
	now    func() time.Time
	closed bool
}

// libraryCandidates lists the paths OpenLibrary tries, path first.
func libraryCandidates(path string) []string {
	var c []string
	if path != "" {
		c = append(c, path)
	}
	return append(c, "libamd_smi.so", "/opt/rocm/lib/libamd_smi.so",
		"libamd_smi.so.26", "libamd_smi.so.25", "libamd_smi.so.24")
}

// OpenLibrary loads the AMD SMI library (path if given, else
// libamd_smi.so from the loader path or /opt/rocm/lib), initialises it for
// AMD GPUs and enumerates the devices. The error wraps gpu.ErrUnavailable
// when the library cannot be loaded, the agent was built without cgo, the
// library does not initialise (no driver) or it finds no AMD GPU.
func OpenLibrary(path string) (*LibBackend, error) {
	lib, loaded, err := openBinding(libraryCandidates(path))
	if err != nil {
		return nil, err
	}
	b, err := newLibBackend(lib, loaded, "/sys", time.Now)
	if err != nil {
		lib.close()
		return nil, err
	}
	return b, nil
}

// newLibBackend enumerates the devices of an initialised library. sysRoot
// is where sysfs is mounted, for render node minors; now is the clock of
// the XGMI rates.
func newLibBackend(lib binding, path, sysRoot string, now func() time.Time) (*LibBackend, error) {
	b := &LibBackend{lib: lib, path: path, buf: make([]byte, structBuf), now: now}
	ver, known := libVersion{}, false
	if st := lib.libVersion(b.zeroed()); st == statusSuccess {
		ver, known = parseLibVersion(b.buf)
	}
	b.version, b.layout = ver, layoutFor(ver, known)
	handles, err := lib.processors()
	if err != nil {
		return nil, fmt.Errorf("amd: %s: list GPUs: %w", path, err)
	}
	if len(handles) == 0 {
		return nil, fmt.Errorf("amd: %s: %w: %w", path, errNoDevices, gpu.ErrUnavailable)
	}
	b.handles = handles
	infos := make([]devInfo, len(handles))
	for pos, h := range handles {
		b.devices = append(b.devices, b.describe(pos, h, sysRoot, &infos[pos]))
	}
	b.check = newChecker(infos)
	b.noXGMI = make([]bool, len(handles))
	if b.layout.xgmiReadOff >= 0 {
		b.metrics = make([]byte, gpuMetricsBuf)
	}
	first := make([]gpu.Reading, len(handles))
	for pos := range handles {
		first[pos].Reset()
		var errs readErrors
		var x xgmiCounters
		st := b.readRaw(pos, &first[pos], true, true, &x, &errs)
		// GPU metrics without XGMI counters (an MI250X), or not supported:
		// not read again. A call that failed otherwise is tried again.
		b.noXGMI[pos] = !x.ok && (st == statusSuccess || st.unsupported())
		b.check.setLinkRates(pos, x, b.now(), &first[pos]) // the reference for the first Read
		sanitize(&first[pos])
	}
	b.check.prime(first)
	return b, nil
}

// zeroed returns the scratch buffer, cleared.
func (b *LibBackend) zeroed() []byte {
	clear(b.buf)
	return b.buf
}

// describe reads what the device at pos is, once at open.
func (b *LibBackend) describe(pos int, h handle, sysRoot string, info *devInfo) gpu.Device {
	d := gpu.Device{Index: pos, Minor: -1, Vendor: gpu.VendorAMD, Parent: -1}
	if s, st := b.lib.uuid(h); st == statusSuccess {
		d.UUID = s
	}
	if b.lib.asicInfo(h, b.zeroed()) == statusSuccess {
		info.model = cString(b.buf, 0, b.layout.marketNameLen)
		if b.layout.deviceIDOff >= 0 {
			info.deviceID = u64(b.buf, b.layout.deviceIDOff)
		}
	}
	if v, st := b.lib.deviceBDF(h); st == statusSuccess {
		info.bdf, _ = formatBDF(v)
	}
	if b.layout.boardSerialOff >= 0 && b.lib.boardInfo(h, b.zeroed()) == statusSuccess {
		info.serial = cString(b.buf, b.layout.boardSerialOff, b.layout.boardSerialLen)
	}
	if s, st := b.lib.computePartition(h); st == statusSuccess {
		info.mode = s
	}
	d.Model, d.PCIBusID, d.Partition = info.model, info.bdf, partitionOf(*info)
	if b.lib.enumerationInfo(h, b.zeroed()) == statusSuccess {
		if m := u32(b.buf, 0); m >= 128 && m < 1<<20 { // drm_render: renderD<m>
			d.Minor = int(m)
		}
	}
	if d.Minor < 0 && sysfsMinorApplies(d.Partition, d.PCIBusID) {
		d.Minor = renderMinor(sysRoot, d.PCIBusID)
	}
	if total, st := b.lib.memoryTotal(h, memTypeVRAM); st == statusSuccess {
		d.MemoryTotalBytes = total
	}
	return d
}

// Name returns "amdsmi".
func (b *LibBackend) Name() string { return NameLibrary }

// Devices lists the devices enumerated at open, in amd-smi's order.
func (b *LibBackend) Devices() []gpu.Device { return b.devices }

// Version describes the loaded library: its path, version and the struct
// layout family used to read it.
func (b *LibBackend) Version() string {
	return fmt.Sprintf("%s %s (%s layout)", b.path, b.version, b.layout.name)
}

func (b *LibBackend) position(index int) (int, error) {
	if b.closed {
		return 0, errors.New("amd: amdsmi backend is closed")
	}
	if index < 0 || index >= len(b.devices) {
		return 0, fmt.Errorf("amd: no GPU with index %d (have %d)", index, len(b.devices))
	}
	return index, nil
}

// readErrors collects the failures of the calls of one Read that are not
// "unsupported".
type readErrors struct{ hard []error }

func (e *readErrors) note(call string, s status) {
	if s != statusSuccess && !s.unsupported() {
		e.hard = append(e.hard, check(call, s))
	}
}

// Read fills r for the device with the given index. Values the device does
// not support, and values the consistency checks reject, stay missing; the
// error is non-nil only when nothing at all could be read and a call
// failed for another reason than "not supported".
func (b *LibBackend) Read(index int, r *gpu.Reading) error {
	pos, err := b.position(index)
	if err != nil {
		return err
	}
	var errs readErrors
	var x xgmiCounters
	b.readRaw(pos, r, !b.check.skipPower(pos), !b.check.skipSocketFigures(pos), &x, &errs)
	b.check.setLinkRates(pos, x, b.now(), r)
	nothing := r.Missing == gpu.AllFields
	b.check.apply(pos, r)
	if nothing && len(errs.hard) > 0 {
		return fmt.Errorf("amd: read GPU %d: %w", index, errors.Join(errs.hard...))
	}
	return nil
}

// readRaw reads the device's values into r, before the consistency checks,
// and its XGMI accumulators into x. Power and energy are read only when
// withPower is true, the socket-wide figures (memory controller activity,
// XGMI) only when withSocket is true. It returns the status of
// amdsmi_get_gpu_metrics_info (statusNoSymbol when not called).
func (b *LibBackend) readRaw(pos int, r *gpu.Reading, withPower, withSocket bool, x *xgmiCounters, errs *readErrors) status {
	h := b.handles[pos]
	st := b.lib.activity(h, b.zeroed())
	if st == statusSuccess {
		// amdsmi_engine_usage_t: gfx_activity and umc_activity, the GPU
		// metrics' average_gfx_activity and average_umc_activity (%),
		// 0xFFFF when not supported.
		if v := u32(b.buf, 0); !sentinel(v) {
			r.UtilizationRatio = float64(v) / 100
			r.Set(gpu.FieldUtilization)
		}
		if withSocket && b.layout.umcOff >= 0 {
			if v := u32(b.buf, b.layout.umcOff); !sentinel(v) {
				r.DRAMActivity = float64(v) / 100
				r.Set(gpu.FieldDRAMActivity)
			}
		}
	}
	errs.note("amdsmi_get_gpu_activity", st)

	total, st := b.lib.memoryTotal(h, memTypeVRAM)
	if st == statusSuccess {
		r.MemoryTotalBytes = total
		r.Set(gpu.FieldMemoryTotal)
	}
	errs.note("amdsmi_get_gpu_memory_total", st)
	used, st := b.lib.memoryUsage(h, memTypeVRAM)
	if st == statusSuccess {
		r.MemoryUsedBytes = used
		r.Set(gpu.FieldMemoryUsed)
	}
	errs.note("amdsmi_get_gpu_memory_usage", st)

	if withPower {
		if b.layout.powerCurOff >= 0 {
			st := b.lib.powerInfo(h, b.zeroed())
			if st == statusSuccess {
				if w, ok := socketPower(u32(b.buf, b.layout.powerCurOff), u32(b.buf, b.layout.powerAvgOff)); ok {
					r.PowerWatts = w
					r.Set(gpu.FieldPower)
				}
			}
			errs.note("amdsmi_get_power_info", st)
		}
		acc, res, st := b.lib.energyCount(h)
		if st == statusSuccess {
			if j, ok := energyJoules(acc, res); ok {
				r.EnergyJoules = j
				r.Set(gpu.FieldEnergy)
			}
		}
		errs.note("amdsmi_get_energy_count", st)
	}

	t, st := b.lib.tempMetric(h, tempEdge, tempCurrent)
	if st != statusSuccess || t <= 0 || t >= maxPlausibleCelsius {
		// No edge sensor (MI300) or an edge value of 0: use the hotspot.
		t, st = b.lib.tempMetric(h, tempHotspot, tempCurrent)
	}
	if st == statusSuccess {
		r.TemperatureCelsius = float64(t)
		r.Set(gpu.FieldTemperature)
	}
	errs.note("amdsmi_get_temp_metric", st)

	for _, c := range []struct {
		clk   uint32
		field gpu.Field
		dst   *float64
	}{{clkGFX, gpu.FieldSMClock, &r.SMClockHz}, {clkMem, gpu.FieldMemClock, &r.MemClockHz}} {
		st := b.lib.clockInfo(h, c.clk, b.zeroed())
		if st == statusSuccess {
			if mhz := u32(b.buf, 0); !sentinel(mhz) {
				*c.dst = float64(mhz) * 1e6
				r.Set(c.field)
			}
		}
		errs.note("amdsmi_get_clock_info", st)
	}

	mst := statusNoSymbol
	if withSocket && b.metrics != nil && !b.noXGMI[pos] {
		clear(b.metrics)
		mst = b.lib.gpuMetrics(h, b.metrics)
		if mst == statusSuccess {
			// xgmi_read_data_acc[i] and xgmi_write_data_acc[i]: KB
			// received and sent over link i, UINT64_MAX when not supported.
			for i := range xgmiLinks {
				x.addRaw(i, u64(b.metrics, b.layout.xgmiReadOff+8*i), u64(b.metrics, b.layout.xgmiWriteOff+8*i))
			}
		}
		errs.note("amdsmi_get_gpu_metrics_info", mst)
	}
	return mst
}

// socketPower picks the socket power of an amdsmi_power_info_t: the
// current power (MI300 and later) when reported, else the average power
// (MI200 and earlier). Fields holding 0xFFFF/0xFFFFFFFF or 0 are not
// reported.
func socketPower(current, average uint32) (float64, bool) {
	if !sentinel(current) && current > 0 {
		return float64(current), true
	}
	if !sentinel(average) && average > 0 {
		return float64(average), true
	}
	return 0, false
}

// energyJoules converts amdsmi_get_energy_count's accumulator and its
// resolution (µJ per count, typically 15.259) to joules.
func energyJoules(acc uint64, resolutionMicroJ float32) (float64, bool) {
	res := float64(resolutionMicroJ)
	if !(res > 0) || res > 1e6 || acc == ^uint64(0) {
		return 0, false
	}
	return float64(acc) * res * 1e-6, true
}

// Processes appends the processes using the device, with the VRAM each
// holds (amdsmi_proc_info_t.memory_usage.vram_mem).
func (b *LibBackend) Processes(index int, buf []gpu.Process) ([]gpu.Process, error) {
	pos, err := b.position(index)
	if err != nil {
		return buf, err
	}
	h := b.handles[pos]
	switch b.layout.proc {
	case procArray:
		return b.processArray(index, h, buf)
	case procHandles:
		return b.processHandles(index, h, buf)
	}
	return buf, fmt.Errorf("amd: list processes of GPU %d: amdsmi_proc_info_t layout unknown for library %s: %w: %w",
		index, b.version, errNotSupported, gpu.ErrNoProcessList)
}

// The process list buffer starts with room for procListStart entries and
// grows while the library says it is too small, up to procListMax.
const (
	procListStart = 64
	procListMax   = 4096
)

// list calls amdsmi_get_gpu_process_list with a buffer of entrySize bytes
// per entry, growing it while the library says it is too small, and
// returns the buffer and the number of entries written.
func (b *LibBackend) list(index int, h handle, entrySize int) ([]byte, int, error) {
	for capacity := procListStart; ; capacity *= 4 {
		raw := make([]byte, capacity*entrySize)
		n := uint32(capacity)
		st := b.lib.processList(h, &n, raw)
		switch {
		case st == statusSuccess:
			return raw, int(min(n, uint32(capacity))), nil
		case (st == statusOutOfResources || st == statusInsufficientSize || st == statusMoreData) &&
			capacity < procListMax:
			continue
		}
		return nil, 0, fmt.Errorf("amd: list processes of GPU %d: %w", index, check("amdsmi_get_gpu_process_list", st))
	}
}

func (b *LibBackend) processArray(index int, h handle, buf []gpu.Process) ([]gpu.Process, error) {
	raw, n, err := b.list(index, h, procEntryBuf)
	if err != nil {
		return buf, err
	}
	l := b.layout
	for i := range n {
		entry := raw[i*l.procStride:]
		pid := u32(entry, l.procPidOff)
		if pid == 0 {
			continue
		}
		buf = append(buf, gpu.Process{PID: pid, MemoryBytes: u64(entry, l.procVramOff), MemoryKnown: true})
	}
	return buf, nil
}

func (b *LibBackend) processHandles(index int, h handle, buf []gpu.Process) ([]gpu.Process, error) {
	raw, n, err := b.list(index, h, 4)
	if err != nil {
		return buf, err
	}
	for i := range n {
		pid := u32(raw, 4*i)
		if pid == 0 {
			continue
		}
		p := gpu.Process{PID: pid}
		if b.lib.processInfo(h, pid, b.zeroed()) == statusSuccess {
			p.MemoryBytes, p.MemoryKnown = u64(b.buf, b.layout.procVramOff), true
		}
		buf = append(buf, p)
	}
	return buf, nil
}

// Close shuts the library down and unloads it.
func (b *LibBackend) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	if err := check("amdsmi_shut_down", b.lib.close()); err != nil {
		return fmt.Errorf("amd: close %s: %w", b.path, err)
	}
	return nil
}

var _ gpu.Backend = (*LibBackend)(nil)
