package amd

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/gpu"
)

// fakeGPU is one device of fakeLib.
type fakeGPU struct {
	uuid, model, serial, mode string
	deviceID, bdf             uint64
	render                    uint32 // 0: no enumeration info
	activity, umc             uint32 // gfx_activity, umc_activity (%)
	total, used               uint64
	cur, avg                  uint32
	energy                    uint64
	res                       float32
	edge, hotspot             int64
	gfxMHz, memMHz            uint32
	pids                      []uint32
	vram                      []uint64
	// xgmiRead and xgmiWrite are the gpu_metrics XGMI accumulators (KB);
	// nil: "not supported" (UINT64_MAX) on every link, as on an MI250X.
	xgmiRead, xgmiWrite []uint64
	// st overrides the status of a call, by binding method name ("*" for
	// every call).
	st map[string]status
}

// fakeLib is a binding written in Go that fills the structs the way a
// library of the given layout would.
type fakeLib struct {
	ver    []byte
	l      layout
	gpus   []fakeGPU
	calls  map[string][]int // method → device positions called with
	closed bool
	t      time.Time // the backend's clock
}

func newFakeLib(ver []byte, gpus ...fakeGPU) *fakeLib {
	v, ok := parseLibVersion(ver)
	return &fakeLib{ver: ver, l: layoutFor(v, ok), gpus: gpus, calls: map[string][]int{},
		t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
}

func (f *fakeLib) now() time.Time { return f.t }

func (f *fakeLib) call(name string, h handle) (*fakeGPU, status) {
	pos := int(h) - 1
	f.calls[name] = append(f.calls[name], pos)
	if pos < 0 || pos >= len(f.gpus) {
		return nil, statusInval
	}
	g := &f.gpus[pos]
	if s, ok := g.st[name]; ok {
		return g, s
	}
	if s, ok := g.st["*"]; ok {
		return g, s
	}
	return g, statusSuccess
}

func put32(b []byte, off int, v uint32) { binary.NativeEndian.PutUint32(b[off:], v) }
func put64(b []byte, off int, v uint64) { binary.NativeEndian.PutUint64(b[off:], v) }

func (f *fakeLib) libVersion(buf []byte) status { copy(buf, f.ver); return statusSuccess }

func (f *fakeLib) processors() ([]handle, error) {
	var hs []handle
	for i := range f.gpus {
		hs = append(hs, handle(i+1))
	}
	return hs, nil
}

func (f *fakeLib) uuid(h handle) (string, status) {
	g, st := f.call("uuid", h)
	if st != statusSuccess {
		return "", st
	}
	return g.uuid, st
}

func (f *fakeLib) asicInfo(h handle, buf []byte) status {
	g, st := f.call("asicInfo", h)
	if st == statusSuccess {
		copy(buf[:f.l.marketNameLen-1], g.model)
		if f.l.deviceIDOff >= 0 {
			put64(buf, f.l.deviceIDOff, g.deviceID)
		}
	}
	return st
}

func (f *fakeLib) boardInfo(h handle, buf []byte) status {
	g, st := f.call("boardInfo", h)
	if st == statusSuccess {
		copy(buf[f.l.boardSerialOff:f.l.boardSerialOff+f.l.boardSerialLen-1], g.serial)
	}
	return st
}

func (f *fakeLib) deviceBDF(h handle) (uint64, status) {
	g, st := f.call("deviceBDF", h)
	if st != statusSuccess {
		return 0, st
	}
	return g.bdf, st
}

func (f *fakeLib) computePartition(h handle) (string, status) {
	g, st := f.call("computePartition", h)
	if st == statusSuccess && g.mode == "" {
		st = statusNotSupported
	}
	if st != statusSuccess {
		return "", st
	}
	return g.mode, st
}

func (f *fakeLib) enumerationInfo(h handle, buf []byte) status {
	g, st := f.call("enumerationInfo", h)
	if st == statusSuccess && g.render == 0 {
		st = statusNoSymbol
	}
	if st == statusSuccess {
		put32(buf, 0, g.render)
	}
	return st
}

func (f *fakeLib) activity(h handle, buf []byte) status {
	g, st := f.call("activity", h)
	if st == statusSuccess {
		put32(buf, 0, g.activity)
		put32(buf, 4, g.umc)
	}
	return st
}

func (f *fakeLib) memoryTotal(h handle, kind uint32) (uint64, status) {
	g, st := f.call("memoryTotal", h)
	if st != statusSuccess || kind != memTypeVRAM {
		return 0, st
	}
	return g.total, st
}

func (f *fakeLib) memoryUsage(h handle, kind uint32) (uint64, status) {
	g, st := f.call("memoryUsage", h)
	if st != statusSuccess || kind != memTypeVRAM {
		return 0, st
	}
	return g.used, st
}

func (f *fakeLib) powerInfo(h handle, buf []byte) status {
	g, st := f.call("powerInfo", h)
	if st == statusSuccess {
		put32(buf, f.l.powerCurOff, g.cur)
		put32(buf, f.l.powerAvgOff, g.avg)
	}
	return st
}

func (f *fakeLib) energyCount(h handle) (uint64, float32, status) {
	g, st := f.call("energyCount", h)
	if st != statusSuccess {
		return 0, 0, st
	}
	return g.energy, g.res, st
}

func (f *fakeLib) tempMetric(h handle, sensor, metric uint32) (int64, status) {
	g, st := f.call("tempMetric", h)
	if st != statusSuccess || metric != tempCurrent {
		return 0, st
	}
	switch sensor {
	case tempEdge:
		if g.edge < 0 {
			return 0, statusNotSupported
		}
		return g.edge, st
	case tempHotspot:
		return g.hotspot, st
	}
	return 0, statusInval
}

func (f *fakeLib) clockInfo(h handle, clk uint32, buf []byte) status {
	g, st := f.call("clockInfo", h)
	if st == statusSuccess {
		put32(buf, 0, map[uint32]uint32{clkGFX: g.gfxMHz, clkMem: g.memMHz}[clk])
	}
	return st
}

// gpuMetrics fills amdsmi_gpu_metrics_t's XGMI arrays as the library does:
// UINT64_MAX for every link it has no value for.
func (f *fakeLib) gpuMetrics(h handle, buf []byte) status {
	g, st := f.call("gpuMetrics", h)
	if st != statusSuccess {
		return st
	}
	if len(buf) < 4544 {
		return statusInsufficientSize // smaller than a ROCm 7.1 amdsmi_gpu_metrics_t
	}
	for i := range xgmiLinks {
		rd, wr := ^uint64(0), ^uint64(0)
		if i < len(g.xgmiRead) {
			rd, wr = g.xgmiRead[i], g.xgmiWrite[i]
		}
		put64(buf, 184+8*i, rd)
		put64(buf, 248+8*i, wr)
	}
	return statusSuccess
}

func (f *fakeLib) processList(h handle, max *uint32, buf []byte) status {
	g, st := f.call("processList", h)
	if st != statusSuccess {
		return st
	}
	n := uint32(len(g.pids))
	if *max < n {
		*max = n
		return statusOutOfResources
	}
	for i, pid := range g.pids {
		if f.l.proc == procHandles {
			put32(buf, 4*i, pid)
			continue
		}
		entry := buf[i*f.l.procStride:]
		copy(entry, "proc")
		put32(entry, f.l.procPidOff, pid)
		put64(entry, f.l.procVramOff, g.vram[i])
	}
	*max = n
	return statusSuccess
}

func (f *fakeLib) processInfo(h handle, pid uint32, buf []byte) status {
	g, st := f.call("processInfo", h)
	if st != statusSuccess {
		return st
	}
	i := slices.Index(g.pids, pid)
	if i < 0 {
		return statusNotFound
	}
	put32(buf, f.l.procPidOff, pid)
	put64(buf, f.l.procVramOff, g.vram[i])
	return statusSuccess
}

func (f *fakeLib) close() status { f.closed = true; return statusSuccess }

// mi250xGCD returns GCD i of a fake MI250X node (package i/2).
func mi250xGCD(i int) fakeGPU {
	g := fakeGPU{
		uuid: "uuid-" + string(rune('a'+i)), model: "AMD Instinct MI250X", deviceID: mi200DeviceID,
		serial: []string{"PCB-1", "PCB-1", "PCB-2", "PCB-2"}[i], bdf: []uint64{0xc100, 0xc600, 0xc900, 0xce00}[i],
		activity: []uint32{97, 95, 12, 0xFFFF}[i], umc: []uint32{41, 40, 7, 0xFFFF}[i], total: 64 << 30, used: 12 << 30,
		cur: 0xFFFF, avg: 0xFFFF, edge: 45, hotspot: 60, gfxMHz: 1700, memMHz: 1600,
		st: map[string]status{},
	}
	if i%2 == 0 {
		g.avg = []uint32{383, 0, 412}[i]
		g.energy, g.res = 100_000_000, 15.259
	} else {
		g.st["energyCount"] = statusNotSupported
	}
	if i == 3 {
		g.edge = 0 // an edge sensor reading 0: use the hotspot
	}
	return g
}

func openFakeLib(t *testing.T, f *fakeLib, sysRoot string) *LibBackend {
	t.Helper()
	b, err := newLibBackend(f, "fake/libamd_smi.so", sysRoot, f.now)
	if err != nil {
		t.Fatalf("newLibBackend: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestLibMI250X(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "bus/pci/devices/0000:c6:00.0/drm/renderD129"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := newFakeLib(words(24, 6, 2, 0), mi250xGCD(0), mi250xGCD(1), mi250xGCD(2), mi250xGCD(3))
	b := openFakeLib(t, f, root)
	if b.Name() != "amdsmi" || !strings.Contains(b.Version(), "24.6.2.0 (ROCm 6.2/6.3 layout)") {
		t.Errorf("%s %s", b.Name(), b.Version())
	}
	devs := b.Devices()
	if len(devs) != 4 {
		t.Fatalf("%d devices", len(devs))
	}
	want0 := gpu.Device{Index: 0, Minor: -1, UUID: "uuid-a", Model: "AMD Instinct MI250X", Vendor: gpu.VendorAMD,
		Parent: -1, Partition: "GCD", PCIBusID: "0000:c1:00.0", MemoryTotalBytes: 64 << 30}
	if devs[0] != want0 {
		t.Errorf("device 0: %+v\nwant %+v", devs[0], want0)
	}
	if devs[1].Minor != 129 || devs[3].PCIBusID != "0000:ce:00.0" {
		t.Errorf("devices 1, 3: %+v %+v", devs[1], devs[3])
	}
	if !slices.EqualFunc(b.check.members, [][]int{{0, 1}, {2, 3}}, slices.Equal) {
		t.Errorf("packages %v", b.check.members)
	}

	// GPU metrics v1.3 has no XGMI counters: read once at open, then not.
	if !slices.Equal(f.calls["gpuMetrics"], []int{0, 1, 2, 3}) {
		t.Errorf("GPU metrics read at open on %v", f.calls["gpuMetrics"])
	}
	f.calls = map[string][]int{}
	f.t = f.t.Add(5 * time.Second)
	got := readAll(t, b)
	// Each GCD has its own memory controllers: their activity stays on
	// both GCDs of a package. No XGMI counters: links missing.
	const link = gpu.FieldLink
	checkReading(t, "GCD 0", got[0], want{missing: link, util: 0.97, used: 12 << 30, total: 64 << 30, watts: 383,
		joules: 100_000_000 * float64(float32(15.259)) * 1e-6, celsius: 45, smHz: 1700e6, memHz: 1600e6, dram: 0.41})
	checkReading(t, "GCD 1", got[1], want{missing: link | gpu.FieldPower | gpu.FieldEnergy, util: 0.95, used: 12 << 30,
		total: 64 << 30, celsius: 45, smHz: 1700e6, memHz: 1600e6, dram: 0.40})
	// 0xFFFF: "not supported", for the memory controllers too.
	checkReading(t, "GCD 3", got[3], want{missing: link | gpu.FieldPower | gpu.FieldEnergy | gpu.FieldUtilization |
		gpu.FieldDRAMActivity, used: 12 << 30, total: 64 << 30, celsius: 60, smHz: 1700e6, memHz: 1600e6})
	// Power and energy of the second GCDs are not even read.
	if !slices.Equal(f.calls["powerInfo"], []int{0, 2}) || !slices.Equal(f.calls["energyCount"], []int{0, 2}) {
		t.Errorf("power read on %v, energy on %v", f.calls["powerInfo"], f.calls["energyCount"])
	}
	if len(f.calls["gpuMetrics"]) != 0 {
		t.Errorf("GPU metrics read again on %v", f.calls["gpuMetrics"])
	}
}

// mi300xLinks are XGMI accumulators (KB) of an MI300X: seven peer links,
// the eighth slot "not supported" (UINT64_MAX).
func mi300xLinks(base, step uint64) []uint64 {
	l := make([]uint64, xgmiLinks)
	for i := range l {
		l[i] = base + uint64(i)*1000 + step
	}
	l[7] = ^uint64(0)
	return l
}

func TestLib7x(t *testing.T) {
	g := fakeGPU{uuid: "u0", model: "AMD Instinct MI300X", deviceID: 0x74a1, bdf: 0x0c00, mode: "SPX", render: 128,
		activity: 55, umc: 38, total: 192 << 30, used: 1 << 30, cur: 650, avg: 0xFFFFFFFF, energy: 5, res: 15.3,
		edge: -1, hotspot: 50, gfxMHz: 2100, memMHz: 1300, pids: []uint32{4242}, vram: []uint64{3 << 30},
		xgmiRead: mi300xLinks(5_000_000, 0), xgmiWrite: mi300xLinks(7_000_000, 0)}
	f := newFakeLib(words(26, 1, 0), g)
	b := openFakeLib(t, f, "")
	d := b.Devices()[0]
	if d.Minor != 128 || d.Partition != "" || d.Model != "AMD Instinct MI300X" {
		t.Errorf("device %+v", d)
	}
	// Right after open: the counters read at open are too recent to give
	// a rate.
	f.t = f.t.Add(10 * time.Millisecond)
	got := readAll(t, b)
	checkReading(t, "MI300X", got[0], want{missing: gpu.FieldLink, util: 0.55, used: 1 << 30, total: 192 << 30, watts: 650,
		joules: 5 * float64(float32(15.3)) * 1e-6, celsius: 50, smHz: 2100e6, memHz: 1300e6, dram: 0.38})
	// 2 s later each of the seven links received 48828125 KB (50 GB) and
	// sent half that.
	f.t = f.t.Add(2 * time.Second)
	f.gpus[0].xgmiRead, f.gpus[0].xgmiWrite = mi300xLinks(5_000_000, 48_828_125), mi300xLinks(7_000_000, 24_414_062)
	got = readAll(t, b)
	rx, tx := 7*48_828_125*1024/2.01, 7*24_414_062*1024/2.01
	checkReading(t, "MI300X", got[0], want{util: 0.55, used: 1 << 30, total: 192 << 30, watts: 650,
		joules: 5 * float64(float32(15.3)) * 1e-6, celsius: 50, smHz: 2100e6, memHz: 1300e6, dram: 0.38, rx: rx, tx: tx})
	procs, err := b.Processes(0, nil)
	if err != nil || !slices.Equal(procs, []gpu.Process{{PID: 4242, MemoryBytes: 3 << 30, MemoryKnown: true}}) {
		t.Errorf("processes %+v %v", procs, err)
	}
}

func TestLibCPXPartitions(t *testing.T) {
	var gpus []fakeGPU
	for k := range 8 {
		// ROCm 6.4.0: every partition mirrors the socket's GPU metrics.
		g := fakeGPU{uuid: "p", model: "AMD Instinct MI300X", bdf: 0x0c00 | uint64(k), mode: "CPX", activity: 10,
			umc: 30, total: 24 << 30, used: 1 << 30, cur: 0xFFFF, avg: 0xFFFF, energy: 1000, res: 15.259, edge: -1,
			hotspot: 40, gfxMHz: 2100, memMHz: 1300, st: map[string]status{},
			xgmiRead: mi300xLinks(1000, 0), xgmiWrite: mi300xLinks(1000, 0)}
		if k == 0 {
			g.cur = 202
		} else {
			g.st["energyCount"] = statusNotSupported
		}
		gpus = append(gpus, g)
	}
	f := newFakeLib(words(25, 25, 3, 0), gpus...)
	b := openFakeLib(t, f, "")
	for i, d := range b.Devices() {
		if d.Partition != "CPX" || d.Parent != -1 || d.PCIBusID != "0000:0c:00."+string(rune('0'+i)) {
			t.Errorf("partition %d: %+v", i, d)
		}
	}
	f.calls = map[string][]int{}
	f.t = f.t.Add(time.Second)
	for k := range f.gpus {
		f.gpus[k].xgmiRead = mi300xLinks(1000, 1024)
	}
	got := readAll(t, b)
	if !got[0].Has(gpu.FieldPower|gpu.FieldEnergy) || got[0].PowerWatts != 202 {
		t.Errorf("partition 0: %+v", got[0])
	}
	// The socket's memory controller activity and XGMI traffic: once, on
	// partition 0 (7 links × 1024 KB in 1 s).
	if !got[0].Has(gpu.FieldDRAMActivity|gpu.FieldLink) || got[0].DRAMActivity != 0.30 ||
		got[0].LinkRxBytesPerSecond != 7*1024*1024 || got[0].LinkTxBytesPerSecond != 0 {
		t.Errorf("partition 0: DRAM %v, links %v/%v (missing %v)", got[0].DRAMActivity,
			got[0].LinkRxBytesPerSecond, got[0].LinkTxBytesPerSecond, got[0].Missing)
	}
	for i := 1; i < 8; i++ {
		if got[i].Has(gpu.FieldPower) || got[i].Has(gpu.FieldEnergy) {
			t.Errorf("partition %d reports the socket's power again", i)
		}
		if got[i].Has(gpu.FieldDRAMActivity) || got[i].Has(gpu.FieldLink) || got[i].DRAMActivity != 0 {
			t.Errorf("partition %d reports the socket's memory or links again: %v", i, got[i].Missing)
		}
		if !got[i].Has(gpu.FieldUtilization) {
			t.Errorf("partition %d: its own utilisation is missing", i)
		}
	}
	if !slices.Equal(f.calls["gpuMetrics"], []int{0}) {
		t.Errorf("GPU metrics read on %v, want the owner only", f.calls["gpuMetrics"])
	}
}

func TestLibStatusMapping(t *testing.T) {
	unsupported := mi250xGCD(0)
	unsupported.st = map[string]status{"*": statusNotSupported}
	broken := mi250xGCD(2)
	broken.st = map[string]status{"*": statusNoPerm}
	partial := mi250xGCD(2)
	partial.bdf = 0xd100
	partial.st = map[string]status{"powerInfo": statusNoPerm, "clockInfo": statusNotYetImplemented}
	f := newFakeLib(words(24, 6, 2, 0), unsupported, broken, partial)
	b := openFakeLib(t, f, "")

	var r gpu.Reading
	r.Reset()
	if err := b.Read(0, &r); err != nil || r.Missing != gpu.AllFields {
		t.Errorf("all NOT_SUPPORTED: err %v, missing %v (want every field missing and no error)", err, r.Missing)
	}
	r.Reset()
	err := b.Read(1, &r)
	if err == nil || !strings.Contains(err.Error(), "read GPU 1") || !strings.Contains(err.Error(), "AMDSMI_STATUS_NO_PERM") {
		t.Errorf("all NO_PERM: err %v", err)
	}
	r.Reset()
	if err := b.Read(2, &r); err != nil || r.Has(gpu.FieldPower) || r.Has(gpu.FieldSMClock) || !r.Has(gpu.FieldEnergy|gpu.FieldMemoryUsed) {
		t.Errorf("partial: err %v, missing %v", err, r.Missing)
	}
	if err := b.Read(3, &r); err == nil {
		t.Error("Read(3) of 3 devices succeeded")
	}
}

func TestLibProcesses(t *testing.T) {
	many := make([]uint32, 100) // more than the first buffer holds
	vram := make([]uint64, 100)
	for i := range many {
		many[i], vram[i] = uint32(1000+i), uint64(i)<<20
	}
	for _, v := range []struct {
		name string
		ver  []byte
	}{
		{"ROCm 6.0 (pids, then process info)", words(23, 4, 0, 0)},
		{"ROCm 6.1 (pids, then process info)", words(24, 5, 0, 0)},
		{"ROCm 6.2 (proc_info array)", words(24, 6, 2, 0)},
		{"ROCm 6.4 (proc_info array, 704-byte entries)", words(25, 25, 3, 0)},
		{"ROCm 7.x", words(26, 0, 0)},
	} {
		t.Run(v.name, func(t *testing.T) {
			g0, g1 := mi250xGCD(0), mi250xGCD(1)
			g0.pids, g0.vram = []uint32{41230, 0, 41231}, []uint64{12 << 30, 0, 1 << 20}
			g1.pids, g1.vram = many, vram
			f := newFakeLib(v.ver, g0, g1)
			b := openFakeLib(t, f, "")
			got, err := b.Processes(0, []gpu.Process{{PID: 1}})
			want := []gpu.Process{{PID: 1}, {PID: 41230, MemoryBytes: 12 << 30, MemoryKnown: true},
				{PID: 41231, MemoryBytes: 1 << 20, MemoryKnown: true}}
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("GPU 0: %+v %v", got, err)
			}
			got, err = b.Processes(1, nil)
			if err != nil || len(got) != 100 || got[99] != (gpu.Process{PID: 1099, MemoryBytes: 99 << 20, MemoryKnown: true}) {
				t.Errorf("GPU 1: %d processes, %v", len(got), err)
			}
		})
	}

	t.Run("process info fails", func(t *testing.T) {
		g := mi250xGCD(0)
		g.pids, g.vram = []uint32{7}, []uint64{1}
		g.st["processInfo"] = statusNoPerm
		b := openFakeLib(t, newFakeLib(words(24, 5, 0, 0), g), "")
		got, err := b.Processes(0, nil)
		if err != nil || !slices.Equal(got, []gpu.Process{{PID: 7}}) {
			t.Errorf("%+v %v", got, err)
		}
	})

	t.Run("list fails", func(t *testing.T) {
		g := mi250xGCD(0)
		g.st["processList"] = statusNoPerm
		b := openFakeLib(t, newFakeLib(words(24, 6, 2, 0), g), "")
		_, err := b.Processes(0, nil)
		if err == nil || !strings.Contains(err.Error(), "amdsmi_get_gpu_process_list: AMDSMI_STATUS_NO_PERM") {
			t.Errorf("%v", err)
		}
	})
}

func TestLibUnknownVersion(t *testing.T) {
	g := mi250xGCD(0)
	g.model = strings.Repeat("M", 100) // read no further than the smallest market_name (64 bytes)
	f := newFakeLib(words(27, 0, 0), g)
	f.l = layoutFor(libVersion{year: 24, major: 6, hasYear: true}, true) // what the "future" library writes
	b := openFakeLib(t, f, "")
	if m := b.Devices()[0].Model; len(m) != 64 {
		t.Errorf("model %q", m)
	}
	f.calls = map[string][]int{}
	got := readAll(t, b)
	if len(f.calls["powerInfo"]) != 0 || got[0].Has(gpu.FieldPower) {
		t.Error("amdsmi_power_info_t read without a known layout")
	}
	if !got[0].Has(gpu.FieldEnergy | gpu.FieldUtilization | gpu.FieldSMClock | gpu.FieldMemoryTotal) {
		t.Errorf("layout-independent fields missing: %v", got[0].Missing)
	}
	if len(f.calls["gpuMetrics"]) != 0 || got[0].Has(gpu.FieldDRAMActivity) || got[0].Has(gpu.FieldLink) {
		t.Error("amdsmi_engine_usage_t.umc_activity or amdsmi_gpu_metrics_t read without a known layout")
	}
	if _, err := b.Processes(0, nil); err == nil || !errors.Is(err, errNotSupported) {
		t.Errorf("processes: %v", err)
	}
}

func TestLibNoGPUAndClose(t *testing.T) {
	f := newFakeLib(words(24, 6, 2, 0))
	_, err := newLibBackend(f, "fake", "", f.now)
	if !errors.Is(err, gpu.ErrUnavailable) || !errors.Is(err, errNoDevices) {
		t.Errorf("no GPU: %v", err)
	}
	f = newFakeLib(words(24, 6, 2, 0), mi250xGCD(0))
	b, err := newLibBackend(f, "fake", "", f.now)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil || !f.closed {
		t.Errorf("Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	var r gpu.Reading
	if err := b.Read(0, &r); err == nil {
		t.Error("Read after Close succeeded")
	}
}
