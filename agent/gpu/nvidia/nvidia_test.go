//go:build cgo

package nvidia_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/jobsight/jobsight/agent/gpu"
	"github.com/jobsight/jobsight/agent/gpu/nvidia"
)

const (
	mib          = 1 << 20
	notAvailable = ^uint64(0) // NVML_VALUE_NOT_AVAILABLE
)

// values is what a mock device answers to the calls Read and Processes
// make, in NVML's units.
type values struct {
	utilPercent   uint32
	memUsed       uint64
	memReserved   uint64 // the driver's own: v1's Used includes it, v2's does not
	memTotal      uint64
	powerMW       uint32
	energyMJ      uint64
	tempC         uint32
	smMHz, memMHz uint32
	rxKBs, txKBs  uint32
	procs         []nvml.ProcessInfo
}

// valuesFor gives device i of a DGX A100 its own plausible values.
func valuesFor(i int) values {
	return values{
		utilPercent: uint32(10*i + 5),
		memUsed:     uint64(1000+i) * mib,
		memReserved: 615 * mib,
		memTotal:    40960 * mib,
		powerMW:     uint32(61000 + 1000*i),
		energyMJ:    uint64(123456789 + i),
		tempC:       uint32(30 + i),
		smMHz:       uint32(1410 - i),
		memMHz:      1215,
		rxKBs:       uint32(100 + i),
		txKBs:       uint32(200 + i),
		procs: []nvml.ProcessInfo{
			{Pid: uint32(1000 + i), UsedGpuMemory: uint64(500+i) * mib},
			{Pid: uint32(2000 + i), UsedGpuMemory: notAvailable},
		},
	}
}

// install makes d answer the reading calls with v.
func install(d *mock.Device, v values) {
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{Gpu: v.utilPercent, Memory: v.utilPercent / 2}, nvml.SUCCESS
	}
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		return nvml.Memory{Total: v.memTotal, Used: v.memUsed + v.memReserved, Free: v.memTotal - v.memUsed - v.memReserved}, nvml.SUCCESS
	}
	d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
		return nvml.Memory_v2{Total: v.memTotal, Reserved: v.memReserved, Used: v.memUsed, Free: v.memTotal - v.memUsed - v.memReserved}, nvml.SUCCESS
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return v.powerMW, nvml.SUCCESS }
	d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return v.energyMJ, nvml.SUCCESS }
	d.GetTemperatureFunc = func(s nvml.TemperatureSensors) (uint32, nvml.Return) {
		if s != nvml.TEMPERATURE_GPU {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return v.tempC, nvml.SUCCESS
	}
	d.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
		switch c {
		case nvml.CLOCK_SM:
			return v.smMHz, nvml.SUCCESS
		case nvml.CLOCK_MEM:
			return v.memMHz, nvml.SUCCESS
		}
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	d.GetPcieThroughputFunc = func(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
		switch c {
		case nvml.PCIE_UTIL_RX_BYTES:
			return v.rxKBs, nvml.SUCCESS
		case nvml.PCIE_UTIL_TX_BYTES:
			return v.txKBs, nvml.SUCCESS
		}
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		return v.procs, nvml.SUCCESS
	}
	// An A100 (Ampere) answers the GPM support query with "not a
	// supported device"; gpm_test.go makes Hopper devices say yes.
	d.GpmQueryDeviceSupportFunc = func() (nvml.GpmSupport, nvml.Return) {
		return nvml.GpmSupport{Version: nvml.GPM_SUPPORT_VERSION, IsSupportedDevice: 0}, nvml.SUCCESS
	}
}

// newDGX returns a DGX A100 mock (8 A100-SXM4-40GB) whose devices answer
// the reading calls with valuesFor(i), and those devices.
func newDGX(t testing.TB) (*dgxa100.Server, []*dgxa100.Device) {
	t.Helper()
	s := dgxa100.New()
	devs := make([]*dgxa100.Device, len(s.Devices))
	for i, d := range s.Devices {
		sd := d.(*dgxa100.Device)
		devs[i] = sd
		v := valuesFor(i)
		if v.memTotal != sd.MemoryInfo.Total {
			t.Fatalf("mock GPU %d has %d bytes, want %d", i, sd.MemoryInfo.Total, v.memTotal)
		}
		install(&sd.Device, v)
		// The mock's PCI info lacks the bus id it knows.
		sd.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			p := nvml.PciInfo{PciDeviceId: sd.Config.PciDeviceId}
			for j := range min(len(sd.PciBusID), len(p.BusId)-1) {
				p.BusId[j] = int8(sd.PciBusID[j])
			}
			return p, nvml.SUCCESS
		}
	}
	return s, devs
}

// open opens b over lib and closes it when the test ends.
func open(t testing.TB, lib nvml.Interface) *nvidia.Backend {
	t.Helper()
	b, err := nvidia.Open(lib)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// read reads device index into a fresh reading.
func read(t testing.TB, b *nvidia.Backend, index int) gpu.Reading {
	t.Helper()
	var r gpu.Reading
	r.Reset()
	if err := b.Read(index, &r); err != nil {
		t.Fatalf("Read(%d): %v", index, err)
	}
	return r
}

// mockCalls counts the calls recorded by go-nvml mocks (their …Calls
// methods), so that a test can see how many NVML calls the backend made.
func mockCalls(objs ...any) int {
	n := 0
	for _, o := range objs {
		v := reflect.ValueOf(o)
		t := v.Type()
		for i := range t.NumMethod() {
			m := t.Method(i)
			if !strings.HasSuffix(m.Name, "Calls") || m.Type.NumIn() != 1 || m.Type.NumOut() != 1 ||
				m.Type.Out(0).Kind() != reflect.Slice {
				continue
			}
			n += v.Method(i).Call(nil)[0].Len()
		}
	}
	return n
}

// allMocks lists the server and its devices for mockCalls.
func allMocks(s *dgxa100.Server, extra ...*mock.Device) []any {
	objs := []any{s}
	for _, d := range s.Devices {
		objs = append(objs, d)
	}
	for _, d := range extra {
		objs = append(objs, d)
	}
	return objs
}

func TestOpenDGXA100(t *testing.T) {
	t.Parallel()
	s, mocks := newDGX(t)
	b := open(t, s)

	if got := b.Name(); got != "nvml" {
		t.Errorf("Name() = %q, want nvml", got)
	}
	if n := len(s.InitCalls()); n != 1 {
		t.Errorf("Init called %d times, want 1", n)
	}
	if errs := b.EnumerationErrors(); errs != nil {
		t.Errorf("EnumerationErrors() = %v", errs)
	}
	devs := b.Devices()
	if len(devs) != 8 {
		t.Fatalf("got %d devices, want 8", len(devs))
	}
	seen := map[string]bool{}
	for i, d := range devs {
		want := gpu.Device{
			Index:            i,
			Minor:            i,
			UUID:             mocks[i].UUID,
			Model:            "Mock NVIDIA A100-SXM4-40GB",
			Vendor:           gpu.VendorNVIDIA,
			Parent:           -1,
			PCIBusID:         fmt.Sprintf("0000:%02x:00.0", i),
			MemoryTotalBytes: 40 << 30,
		}
		if d != want {
			t.Errorf("device %d:\n got %+v\nwant %+v", i, d, want)
		}
		if !strings.HasPrefix(d.UUID, "GPU-") || seen[d.UUID] {
			t.Errorf("device %d: UUID %q not a distinct GPU UUID", i, d.UUID)
		}
		seen[d.UUID] = true
	}
	// Devices returns the caller's copy.
	devs[0].Index = 99
	if b.Devices()[0].Index != 0 {
		t.Error("Devices() shares its slice with the backend")
	}
}

func TestReadDGXA100AllFields(t *testing.T) {
	t.Parallel()
	s, _ := newDGX(t)
	b := open(t, s)

	for i := range 8 {
		v := valuesFor(i)
		r := read(t, b, i)
		want := gpu.Reading{
			UtilizationRatio:     float64(10*i+5) / 100,
			MemoryUsedBytes:      uint64(1000+i) * mib,
			MemoryTotalBytes:     40 << 30,
			PowerWatts:           61 + float64(i),
			EnergyJoules:         float64(v.energyMJ) / 1000,
			TemperatureCelsius:   float64(30 + i),
			SMClockHz:            float64(1410-i) * 1e6,
			MemClockHz:           1215e6,
			PCIeRxBytesPerSecond: float64(100+i) * 1024,
			PCIeTxBytesPerSecond: float64(200+i) * 1024,
			// An A100 has no GPM: the activity figures are missing.
			Missing: gpu.ActivityFields,
		}
		if r.Missing != gpu.ActivityFields {
			t.Errorf("device %d: missing %s", i, r.Missing)
		}
		if !readingsClose(r, want) {
			t.Errorf("device %d:\n got %+v\nwant %+v", i, r, want)
		}

		buf := []gpu.Process{{PID: 1}} // Processes appends
		procs, err := b.Processes(i, buf)
		if err != nil {
			t.Fatalf("Processes(%d): %v", i, err)
		}
		wantProcs := []gpu.Process{
			{PID: 1},
			{PID: uint32(1000 + i), MemoryBytes: uint64(500+i) * mib, MemoryKnown: true},
			{PID: uint32(2000 + i)},
		}
		if !reflect.DeepEqual(procs, wantProcs) {
			t.Errorf("Processes(%d) = %+v, want %+v", i, procs, wantProcs)
		}
	}
}

// near says whether x and y agree to a relative 1e-12.
func near(x, y float64) bool { return math.Abs(x-y) <= 1e-12*math.Max(math.Abs(x), math.Abs(y)) }

// readingsClose compares readings, floats to a relative 1e-12.
func readingsClose(a, b gpu.Reading) bool {
	return near(a.UtilizationRatio, b.UtilizationRatio) && a.MemoryUsedBytes == b.MemoryUsedBytes &&
		a.MemoryTotalBytes == b.MemoryTotalBytes && near(a.PowerWatts, b.PowerWatts) &&
		near(a.EnergyJoules, b.EnergyJoules) && near(a.TemperatureCelsius, b.TemperatureCelsius) &&
		near(a.SMClockHz, b.SMClockHz) && near(a.MemClockHz, b.MemClockHz) &&
		near(a.PCIeRxBytesPerSecond, b.PCIeRxBytesPerSecond) &&
		near(a.PCIeTxBytesPerSecond, b.PCIeTxBytesPerSecond) && a.Missing == b.Missing
}

func TestReadCallsPerDevice(t *testing.T) {
	t.Parallel()
	s, _ := newDGX(t)
	b := open(t, s)
	before := mockCalls(allMocks(s)...)
	read(t, b, 3)
	if n := mockCalls(allMocks(s)...) - before; n != 10 {
		t.Errorf("Read made %d NVML calls, want 10 (one per field, two for PCIe, the GPM support query)", n)
	}
	// The GPM support query is made once per device, not per pass.
	before = mockCalls(allMocks(s)...)
	read(t, b, 3)
	if n := mockCalls(allMocks(s)...) - before; n != 8 {
		t.Errorf("second Read made %d NVML calls, want 8 (the energy counter is estimated, no GPM query)", n)
	}
	before = mockCalls(allMocks(s)...)
	if _, err := b.Processes(3, nil); err != nil {
		t.Fatal(err)
	}
	if n := mockCalls(allMocks(s)...) - before; n != 1 {
		t.Errorf("Processes made %d NVML calls, want 1", n)
	}
}

func TestSkipPCIe(t *testing.T) {
	t.Parallel()
	s, _ := newDGX(t)
	b := open(t, s)
	b.Skip(gpu.FieldPCIe)
	before := mockCalls(allMocks(s)...)
	r := read(t, b, 3)
	if n := mockCalls(allMocks(s)...) - before; n != 8 {
		t.Errorf("Read with PCIe skipped made %d NVML calls, want 8 (7 and the GPM support query)", n)
	}
	if r.Missing != gpu.FieldPCIe|gpu.ActivityFields || r.PCIeRxBytesPerSecond != 0 {
		t.Errorf("missing %s, rx %v: want only gpu_pcie missing", r.Missing, r.PCIeRxBytesPerSecond)
	}
}

// migDevice builds a mock MIG device of a DGX A100 GPU for GPU instance
// profile id, named as the driver names it.
func migDevice(t *testing.T, parent *dgxa100.Device, profileID int, profile, uuid string, procs []nvml.ProcessInfo) *mock.Device {
	t.Helper()
	info, ret := parent.GetGpuInstanceProfileInfo(profileID)
	if ret != nvml.SUCCESS {
		t.Fatalf("GetGpuInstanceProfileInfo(%d): %v", profileID, ret)
	}
	if _, ret := parent.CreateGpuInstance(&info); ret != nvml.SUCCESS {
		t.Fatalf("CreateGpuInstance: %v", ret)
	}
	m := &mock.Device{}
	v := values{
		memUsed:  100 * mib,
		memTotal: info.MemorySizeMB * mib,
		powerMW:  1, energyMJ: 1, tempC: 1, smMHz: 1, memMHz: 1, rxKBs: 1, txKBs: 1,
		procs: procs,
	}
	install(m, v)
	// The MIG handle answers only the v1 memory call: the backend falls
	// back to it.
	m.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) { return nvml.Memory_v2{}, nvml.ERROR_FUNCTION_NOT_FOUND }
	// MIG devices do not report utilisation, nor (in practice) power.
	m.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED }
	m.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	m.GetUUIDFunc = func() (string, nvml.Return) { return uuid, nvml.SUCCESS }
	m.GetNameFunc = func() (string, nvml.Return) { return "NVIDIA A100-SXM4-40GB MIG " + profile, nvml.SUCCESS }
	m.GetDeviceHandleFromMigDeviceHandleFunc = func() (nvml.Device, nvml.Return) { return parent, nvml.SUCCESS }
	return m
}

func TestMIG(t *testing.T) {
	t.Parallel()
	s, mocks := newDGX(t)
	parent := mocks[2]
	if ret, _ := parent.SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
		t.Fatalf("SetMigMode: %v", ret)
	}
	migA := migDevice(t, parent, nvml.GPU_INSTANCE_PROFILE_3_SLICE, "3g.20gb", "MIG-aaaaaaaa-0000-0000-0000-000000000001",
		[]nvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 300 * mib}})
	migB := migDevice(t, parent, nvml.GPU_INSTANCE_PROFILE_4_SLICE, "4g.20gb", "MIG-bbbbbbbb-0000-0000-0000-000000000002",
		[]nvml.ProcessInfo{{Pid: 4343, UsedGpuMemory: notAvailable}, {Pid: 4344, UsedGpuMemory: 7 * mib}})
	// Slots 0 and 2 hold MIG devices, slot 1 and the rest are empty.
	parent.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	parent.GetMigDeviceHandleByIndexFunc = func(n int) (nvml.Device, nvml.Return) {
		switch n {
		case 0:
			return migA, nvml.SUCCESS
		case 2:
			return migB, nvml.SUCCESS
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	b := open(t, s)

	devs := b.Devices()
	if len(devs) != 10 {
		t.Fatalf("got %d devices, want 8 GPUs + 2 MIG devices: %+v", len(devs), devs)
	}
	if devs[2].Parent != -1 || devs[2].UUID != parent.UUID || devs[2].MemoryTotalBytes != 40<<30 {
		t.Errorf("MIG-enabled GPU 2 not listed as a whole GPU: %+v", devs[2])
	}
	wantMIG := []gpu.Device{
		{Index: 8, Minor: -1, UUID: "MIG-aaaaaaaa-0000-0000-0000-000000000001", Model: "Mock NVIDIA A100-SXM4-40GB",
			Vendor: gpu.VendorNVIDIA, Parent: 2, Partition: "3g.20gb", PCIBusID: "0000:02:00.0",
			MemoryTotalBytes: dgxa100.MIGProfiles.GpuInstanceProfiles[nvml.GPU_INSTANCE_PROFILE_3_SLICE].MemorySizeMB * mib},
		{Index: 9, Minor: -1, UUID: "MIG-bbbbbbbb-0000-0000-0000-000000000002", Model: "Mock NVIDIA A100-SXM4-40GB",
			Vendor: gpu.VendorNVIDIA, Parent: 2, Partition: "4g.20gb", PCIBusID: "0000:02:00.0",
			MemoryTotalBytes: dgxa100.MIGProfiles.GpuInstanceProfiles[nvml.GPU_INSTANCE_PROFILE_4_SLICE].MemorySizeMB * mib},
	}
	for i, want := range wantMIG {
		if got := devs[8+i]; got != want {
			t.Errorf("MIG device %d:\n got %+v\nwant %+v", i, got, want)
		}
		if want.MemoryTotalBytes < 19<<30 {
			t.Errorf("MIG profile memory %d looks wrong", want.MemoryTotalBytes)
		}
	}
	// Other GPUs have MIG disabled and no MIG device calls.
	if n := len(mocks[0].GetMaxMigDeviceCountCalls()); n != 0 {
		t.Errorf("GetMaxMigDeviceCount called %d times on a GPU without MIG", n)
	}

	// A MIG device's reading: utilisation and power missing, the rest read
	// from the MIG handle.
	r := read(t, b, 8)
	if want := gpu.FieldUtilization | gpu.FieldPower | gpu.ActivityFields; r.Missing != want {
		t.Errorf("MIG reading missing %s, want %s", r.Missing, want)
	}
	if r.MemoryTotalBytes != wantMIG[0].MemoryTotalBytes || r.MemoryUsedBytes != 100*mib {
		t.Errorf("MIG reading memory %d/%d", r.MemoryUsedBytes, r.MemoryTotalBytes)
	}
	if len(migA.GetMemoryInfoCalls()) != 2 { // at open and in Read
		t.Errorf("GetMemoryInfo called %d times on the MIG handle, want 2", len(migA.GetMemoryInfoCalls()))
	}
	// v2 is asked once; after FUNCTION_NOT_FOUND the handle stays on v1.
	read(t, b, 8)
	if n, n1 := len(migA.GetMemoryInfo_v2Calls()), len(migA.GetMemoryInfoCalls()); n != 1 || n1 != 3 {
		t.Errorf("after two reads: %d GetMemoryInfo_v2 and %d GetMemoryInfo calls, want 1 and 3", n, n1)
	}
	// The parent GPU still reads as a whole GPU.
	if r := read(t, b, 2); r.Missing != gpu.ActivityFields || r.UtilizationRatio != 0.25 {
		t.Errorf("parent reading: %+v", r)
	}

	// Each MIG device has its own processes, from its own handle.
	for _, c := range []struct {
		index int
		want  []gpu.Process
	}{
		{8, []gpu.Process{{PID: 4242, MemoryBytes: 300 * mib, MemoryKnown: true}}},
		{9, []gpu.Process{{PID: 4343}, {PID: 4344, MemoryBytes: 7 * mib, MemoryKnown: true}}},
	} {
		got, err := b.Processes(c.index, nil)
		if err != nil {
			t.Fatalf("Processes(%d): %v", c.index, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Processes(%d) = %+v, want %+v", c.index, got, c.want)
		}
	}
	if len(migB.GetComputeRunningProcessesCalls()) != 1 {
		t.Error("MIG processes not read from the MIG handle")
	}
	if _, err := b.Processes(10, nil); err == nil {
		t.Error("Processes(10) of a device that does not exist: no error")
	}
}

func TestNotSupportedFieldsMissing(t *testing.T) {
	t.Parallel()
	s, mocks := newDGX(t)
	d := mocks[4]
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED }
	// Not permitted now: missing, but asked again next time.
	d.GetPcieThroughputFunc = func(nvml.PcieUtilCounter) (uint32, nvml.Return) { return 0, nvml.ERROR_NO_PERMISSION }
	b := open(t, s)

	for range 3 {
		r := read(t, b, 4)
		if want := gpu.FieldUtilization | gpu.FieldPower | gpu.FieldEnergy | gpu.FieldPCIe | gpu.ActivityFields; r.Missing != want {
			t.Fatalf("missing %s, want %s", r.Missing, want)
		}
		if r.UtilizationRatio != 0 || r.PowerWatts != 0 || r.EnergyJoules != 0 {
			t.Errorf("missing fields were written: %+v", r)
		}
		if r.TemperatureCelsius != 34 || r.SMClockHz != 1406e6 || r.MemoryUsedBytes != 1004*mib || r.MemClockHz != 1215e6 {
			t.Errorf("supported fields wrong: %+v", r)
		}
	}
	// NOT_SUPPORTED is asked once; NO_PERMISSION every time.
	if n := len(d.GetPowerUsageCalls()); n != 1 {
		t.Errorf("GetPowerUsage called %d times, want 1", n)
	}
	if n := len(d.GetUtilizationRatesCalls()); n != 1 {
		t.Errorf("GetUtilizationRates called %d times, want 1", n)
	}
	if n := len(d.GetPcieThroughputCalls()); n != 3 {
		t.Errorf("GetPcieThroughput called %d times, want 3 (RX only, each read)", n)
	}
	// Other devices are unaffected.
	if r := read(t, b, 5); r.Missing != gpu.ActivityFields {
		t.Errorf("device 5 missing %s", r.Missing)
	}
}

func TestProcessesNotSupported(t *testing.T) {
	t.Parallel()
	s, mocks := newDGX(t)
	mocks[1].GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED }
	b := open(t, s)
	buf := []gpu.Process{{PID: 7}}
	for range 2 {
		got, err := b.Processes(1, buf)
		if !errors.Is(err, gpu.ErrNoProcessList) || !reflect.DeepEqual(got, buf) {
			t.Errorf("Processes = %+v, %v; want buf unchanged, gpu.ErrNoProcessList", got, err)
		}
	}
	if n := len(mocks[1].GetComputeRunningProcessesCalls()); n != 1 {
		t.Errorf("GetComputeRunningProcesses called %d times, want 1", n)
	}
}

func TestDeviceLost(t *testing.T) {
	t.Parallel()
	s, mocks := newDGX(t)
	b := open(t, s) // the GPU falls off the bus after open
	lost := mocks[5]
	lost.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_GPU_IS_LOST }
	lost.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST }
	lost.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_GPU_IS_LOST }

	var r gpu.Reading
	r.Reset()
	err := b.Read(5, &r)
	if err == nil {
		t.Fatal("Read of a lost GPU: no error")
	}
	if !errors.Is(err, nvml.ERROR_GPU_IS_LOST) {
		t.Errorf("error %v does not wrap ERROR_GPU_IS_LOST", err)
	}
	for _, want := range []string{"device 5", lost.UUID, "GetUtilizationRates"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if r.Missing != gpu.AllFields {
		t.Errorf("failed read set fields: missing %s", r.Missing)
	}
	if n := len(lost.GetMemoryInfoCalls()); n != 1 { // only at open
		t.Errorf("Read went on after the device was lost (%d GetMemoryInfo calls)", n)
	}
	// Still an error next time: GPU_IS_LOST is not remembered as "unsupported".
	if err := b.Read(5, &r); !errors.Is(err, nvml.ERROR_GPU_IS_LOST) {
		t.Errorf("second Read: %v", err)
	}
	if _, err := b.Processes(5, nil); !errors.Is(err, nvml.ERROR_GPU_IS_LOST) || !strings.Contains(err.Error(), "device 5") {
		t.Errorf("Processes of a lost GPU: %v", err)
	}
	read(t, b, 6) // the others still read
}

func TestLostAtOpenLeftOut(t *testing.T) {
	t.Parallel()
	s, _ := newDGX(t)
	byIndex := s.DeviceGetHandleByIndexFunc
	s.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 3 {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		return byIndex(i)
	}
	b := open(t, s)
	devs := b.Devices()
	if len(devs) != 7 {
		t.Fatalf("got %d devices, want 7", len(devs))
	}
	for _, d := range devs {
		if d.Index == 3 {
			t.Error("lost GPU 3 listed")
		}
	}
	if devs[3].Index != 4 || devs[3].Minor != 4 {
		t.Errorf("GPU after the lost one renumbered: %+v", devs[3])
	}
	errs := b.EnumerationErrors()
	if len(errs) != 1 || !errors.Is(errs[0], nvml.ERROR_GPU_IS_LOST) || !strings.Contains(errs[0].Error(), "GPU 3") {
		t.Errorf("EnumerationErrors() = %v", errs)
	}
	var r gpu.Reading
	if err := b.Read(3, &r); err == nil {
		t.Error("Read(3) of a GPU left out: no error")
	}
	read(t, b, 4)
}

func TestInitUnavailable(t *testing.T) {
	t.Parallel()
	for _, ret := range []nvml.Return{nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED} {
		lib := &mock.Interface{
			InitFunc: func() nvml.Return { return ret },
			// ShutdownFunc unset: calling it would panic.
		}
		b, err := nvidia.Open(lib)
		if b != nil || err == nil {
			t.Fatalf("Open with Init %v = %v, %v", ret, b, err)
		}
		if !errors.Is(err, gpu.ErrUnavailable) || !errors.Is(err, ret) {
			t.Errorf("Init %v: error %v does not wrap gpu.ErrUnavailable and the return", ret, err)
		}
	}
}

func TestInitOtherFailure(t *testing.T) {
	t.Parallel()
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIB_RM_VERSION_MISMATCH }}
	_, err := nvidia.Open(lib)
	if err == nil || errors.Is(err, gpu.ErrUnavailable) || !errors.Is(err, nvml.ERROR_LIB_RM_VERSION_MISMATCH) {
		t.Errorf("Open with a driver/library mismatch: %v; want a real error", err)
	}
}

func TestOpenFailureShutsDown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		count       int
		ret         nvml.Return
		unavailable bool
	}{
		{"count fails", 0, nvml.ERROR_UNKNOWN, false},
		{"no GPU", 0, nvml.SUCCESS, true},
	} {
		lib := &mock.Interface{
			InitFunc:           func() nvml.Return { return nvml.SUCCESS },
			ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
			DeviceGetCountFunc: func() (int, nvml.Return) { return c.count, c.ret },
		}
		_, err := nvidia.Open(lib)
		if err == nil || errors.Is(err, gpu.ErrUnavailable) != c.unavailable {
			t.Errorf("%s: Open error %v, want unavailable=%v", c.name, err, c.unavailable)
		}
		if n := len(lib.ShutdownCalls()); n != 1 {
			t.Errorf("%s: Shutdown called %d times, want 1", c.name, n)
		}
	}
}

func TestCloseShutsDownOnce(t *testing.T) {
	t.Parallel()
	s, _ := newDGX(t)
	b, err := nvidia.Open(s)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.ShutdownCalls()); n != 0 {
		t.Fatalf("Shutdown called %d times before Close", n)
	}
	for range 3 {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	if n := len(s.ShutdownCalls()); n != 1 {
		t.Errorf("Shutdown called %d times, want 1", n)
	}
	var r gpu.Reading
	if err := b.Read(0, &r); err == nil {
		t.Error("Read after Close: no error")
	}
	if _, err := b.Processes(0, nil); err == nil {
		t.Error("Processes after Close: no error")
	}
}

func TestCloseShutdownError(t *testing.T) {
	t.Parallel()
	s, _ := newDGX(t)
	s.ShutdownFunc = func() nvml.Return { return nvml.ERROR_UNKNOWN }
	b, err := nvidia.Open(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); !errors.Is(err, nvml.ERROR_UNKNOWN) {
		t.Errorf("Close = %v, want ERROR_UNKNOWN", err)
	}
}

func TestOpenNil(t *testing.T) {
	t.Parallel()
	if _, err := nvidia.Open(nil); err == nil {
		t.Error("Open(nil): no error")
	}
}

// BenchmarkRead8GPUs samples a DGX A100 (go-nvml's mock, 8 GPUs): Read and
// Processes of every GPU per op. It reports the NVML calls per sample,
// counted from the mocks' call records. Allocations and bytes include the
// mocks' own call recording (appending to a slice per call).
func BenchmarkRead8GPUs(b *testing.B) {
	s, _ := newDGX(b)
	be := open(b, s)
	devs := be.Devices()
	procs := make([]gpu.Process, 0, 64)
	var r gpu.Reading
	before := mockCalls(allMocks(s)...)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, d := range devs {
			r.Reset()
			if err := be.Read(d.Index, &r); err != nil {
				b.Fatal(err)
			}
			var err error
			if procs, err = be.Processes(d.Index, procs[:0]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	calls := mockCalls(allMocks(s)...) - before
	b.ReportMetric(float64(calls)/float64(b.N), "nvml-calls/sample")
}

// TestEnergyBetweenCounterReads: the costly energy counter is read once per
// 10 s per device; in between, the energy grows by the power read in each
// pass, never goes down while the counter does not, and a counter that went
// back (driver reload) is taken as it is.
func TestEnergyBetweenCounterReads(t *testing.T) {
	t.Parallel()
	s, mocks := newDGX(t)
	b := open(t, s)
	d := mocks[0]
	counterMJ := uint64(1_000_000) // 1 kJ
	d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return counterMJ, nvml.SUCCESS }
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 100_000, nvml.SUCCESS } // 100 W
	clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	b.SetClock(func() time.Time { return clock })
	// One pass a second until the counter is due again: the counter's
	// first value plus 100 W × the seconds since.
	n := int(nvidia.EnergyEvery / time.Second)
	for i := range n {
		if r := read(t, b, 0); !near(r.EnergyJoules, 1000+100*float64(i)) {
			t.Errorf("pass %d: energy %v J, want %v", i, r.EnergyJoules, 1000+100*float64(i))
		}
		clock = clock.Add(time.Second)
	}
	if n := len(d.GetTotalEnergyConsumptionCalls()); n != 1 {
		t.Errorf("%d counter reads in %s, want 1", n, nvidia.EnergyEvery-time.Second)
	}
	// EnergyEvery on: the counter is read again. It says less than the
	// estimate (the GPU drew less than its power samples said): the value
	// holds.
	last := 1000 + 100*float64(n-1)
	counterMJ = uint64(last-50) * 1000
	if r := read(t, b, 0); !near(r.EnergyJoules, last) {
		t.Errorf("counter below the estimate: energy %v J, want %v held", r.EnergyJoules, last)
	}
	clock = clock.Add(time.Second)
	if r := read(t, b, 0); !near(r.EnergyJoules, last+50) { // the counter + 100
		t.Errorf("after the second counter read: energy %v J, want %v", r.EnergyJoules, last+50)
	}
	// The counter went back (driver reload): taken as it is at the next read.
	clock = clock.Add(nvidia.EnergyEvery)
	counterMJ = 5_000
	if r := read(t, b, 0); !near(r.EnergyJoules, 5) {
		t.Errorf("after a reset: energy %v J, want 5", r.EnergyJoules)
	}
	if n := len(d.GetTotalEnergyConsumptionCalls()); n != 3 {
		t.Errorf("%d counter reads, want 3", n)
	}
}
