//go:build cgo

package nvidia_test

import (
	"math"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/jobsight/jobsight/agent/gpu"
	"github.com/jobsight/jobsight/agent/gpu/nvidia"
)

// The GPM tests run on go-nvml's DGX H200 mock (a mock, not hardware: the
// real driver is exercised by TestRealNVMLGPM on a GPU machine). Its
// devices say they support GPM, and GpmMetricsGet answers each metric id
// with the window's value from gpmWindow, in NVML's units (percent 0–100,
// MiB/s), as nvml.h documents them.

// gpmWindow is what a mock H200 reports for a window: a launch-bound job
// (utilisation high, SMs mostly idle) with some host-to-device traffic.
var gpmWindow = map[nvml.GpmMetricId]float64{
	nvml.GPM_METRIC_SM_UTIL:                 12.5,
	nvml.GPM_METRIC_SM_OCCUPANCY:            6,
	nvml.GPM_METRIC_ANY_TENSOR_UTIL:         2,
	nvml.GPM_METRIC_DFMA_TENSOR_UTIL:        0,
	nvml.GPM_METRIC_DMMA_TENSOR_UTIL:        0.5,
	nvml.GPM_METRIC_HMMA_TENSOR_UTIL:        1.5,
	nvml.GPM_METRIC_IMMA_TENSOR_UTIL:        0,
	nvml.GPM_METRIC_FP64_UTIL:               0,
	nvml.GPM_METRIC_FP32_UTIL:               9,
	nvml.GPM_METRIC_FP16_UTIL:               1,
	nvml.GPM_METRIC_DRAM_BW_UTIL:            4,
	nvml.GPM_METRIC_PCIE_RX_PER_SEC:         1200,
	nvml.GPM_METRIC_PCIE_TX_PER_SEC:         30,
	nvml.GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC: 0,
	nvml.GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC: 0,
}

// gpmMock counts the GPM calls of a mock server.
type gpmMock struct {
	allocs, frees, gets, metrics int
	// unsupported metrics answer NOT_SUPPORTED; failGet makes the next
	// sample fail with that error.
	unsupported map[nvml.GpmMetricId]bool
	failGet     nvml.Return
	samples     map[*mock.GpmSample]int // sample → the gets counter when it was filled
}

// newH200 returns a DGX H200 mock whose devices answer the reading calls
// (with valuesFor) and the GPM calls.
func newH200(t *testing.T) (*server.Server, []*server.Device, *gpmMock) {
	t.Helper()
	s := dgxh200.New()
	g := &gpmMock{unsupported: map[nvml.GpmMetricId]bool{}, samples: map[*mock.GpmSample]int{}}
	devs := make([]*server.Device, len(s.Devices))
	for i, d := range s.Devices {
		sd := d.(*server.Device)
		devs[i] = sd
		v := valuesFor(i)
		v.memTotal = sd.MemoryInfo.Total
		install(&sd.Device, v)
		sd.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{}, nvml.SUCCESS }
		sd.GpmQueryDeviceSupportFunc = func() (nvml.GpmSupport, nvml.Return) {
			return nvml.GpmSupport{Version: nvml.GPM_SUPPORT_VERSION, IsSupportedDevice: 1}, nvml.SUCCESS
		}
		sd.GpmSampleGetFunc = func(smp nvml.GpmSample) nvml.Return {
			if g.failGet != nvml.SUCCESS {
				ret := g.failGet
				g.failGet = nvml.SUCCESS
				return ret
			}
			g.gets++
			g.samples[smp.(*mock.GpmSample)] = g.gets
			return nvml.SUCCESS
		}
	}
	s.GpmSampleAllocFunc = func() (nvml.GpmSample, nvml.Return) {
		g.allocs++
		smp := &mock.GpmSample{}
		smp.FreeFunc = func() nvml.Return { g.frees++; return nvml.SUCCESS }
		return smp, nvml.SUCCESS
	}
	s.GpmSampleFreeFunc = func(smp nvml.GpmSample) nvml.Return { return smp.Free() }
	s.GpmMetricsGetFunc = func(m *nvml.GpmMetricsGetType) nvml.Return {
		g.metrics++
		if m.Version != nvml.GPM_METRICS_GET_VERSION || m.NumMetrics == 0 || m.NumMetrics > uint32(len(m.Metrics)) {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		// Sample1 must be the earlier sample: NVML computes s2 − s1.
		if g.samples[m.Sample1.(*mock.GpmSample)] >= g.samples[m.Sample2.(*mock.GpmSample)] {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		for i := range m.NumMetrics {
			id := nvml.GpmMetricId(m.Metrics[i].MetricId)
			v, known := gpmWindow[id]
			if !known || g.unsupported[id] {
				m.Metrics[i].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
				continue
			}
			m.Metrics[i].NvmlReturn = uint32(nvml.SUCCESS)
			m.Metrics[i].Value = v
		}
		return nvml.SUCCESS
	}
	return s, devs, g
}

// clock is a settable clock for the backend.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// openClocked opens lib (closed when the test ends) with a clock the test
// moves and a GPM window every second.
func openClocked(t *testing.T, lib nvml.Interface) (*nvidia.Backend, *clock) {
	t.Helper()
	b := open(t, lib)
	b.SetActivityInterval(time.Second)
	c := &clock{t: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}
	b.SetClock(c.now)
	return b, c
}

func TestGPMActivityOnHopper(t *testing.T) {
	t.Parallel()
	s, devs, g := newH200(t)
	b, c := openClocked(t, s)

	// The first pass takes the first sample: no window yet, so the
	// activity figures are missing (never zero); PCIe comes from the
	// per-call counter there (the site reads PCIe), never once GPM gives it.
	r := read(t, b, 0)
	if r.Missing&gpu.ActivityFields != gpu.ActivityFields {
		t.Errorf("first pass: missing %s, want every activity field", r.Missing)
	}
	if g.allocs != 2 || g.gets != 1 || g.metrics != 0 {
		t.Errorf("first pass: %d allocs, %d samples, %d metric calls; want 2, 1, 0", g.allocs, g.gets, g.metrics)
	}

	c.t = c.t.Add(time.Second)
	pcieCalls := len(devs[0].GetPcieThroughputCalls())
	r = read(t, b, 0)
	if r.Missing != 0 {
		t.Fatalf("second pass: missing %s", r.Missing)
	}
	want := map[string][2]float64{
		"sm": {r.SMActivity, 0.125}, "occupancy": {r.SMOccupancy, 0.06}, "tensor": {r.TensorActivity, 0.02},
		"tensor fp64 (the larger of DFMA and DMMA)": {r.TensorFP64Activity, 0.005}, "tensor fp16": {r.TensorFP16Activity, 0.015},
		"tensor int8": {r.TensorINT8Activity, 0}, "fp32": {r.FP32Activity, 0.09}, "fp16": {r.FP16Activity, 0.01},
		"dram": {r.DRAMActivity, 0.04}, "pcie rx": {r.PCIeRxBytesPerSecond, 1200 << 20}, "pcie tx": {r.PCIeTxBytesPerSecond, 30 << 20},
		"link rx": {r.LinkRxBytesPerSecond, 0},
	}
	for name, v := range want {
		if math.Abs(v[0]-v[1]) > 1e-9*math.Max(1, v[1]) {
			t.Errorf("%s = %v, want %v", name, v[0], v[1])
		}
	}
	if n := len(devs[0].GetPcieThroughputCalls()) - pcieCalls; n != 0 {
		t.Errorf("PCIe read with %d per-call queries (20 ms each) although GPM gave it", n)
	}

	// Within gpmEvery no new sample: the last window's figures again.
	c.t = c.t.Add(400 * time.Millisecond)
	if r := read(t, b, 0); r.Missing != 0 || r.SMActivity != 0.125 || g.gets != 2 {
		t.Errorf("pass within the window: missing %s, sm %v, %d samples (want 2)", r.Missing, r.SMActivity, g.gets)
	}
	c.t = c.t.Add(time.Second)
	read(t, b, 0)
	if g.gets != 3 || g.metrics != 2 || g.allocs != 2 {
		t.Errorf("after three windows: %d samples, %d metric calls, %d allocs; want 3, 2, 2 (two buffers reused)", g.gets, g.metrics, g.allocs)
	}
	if n := len(devs[0].GpmQueryDeviceSupportCalls()); n != 1 {
		t.Errorf("GPM support asked %d times, want once", n)
	}
}

func TestGPMMetricNotSupportedIsMissing(t *testing.T) {
	t.Parallel()
	s, _, g := newH200(t)
	// A PCIe H100 without NVLink bridges, and a driver without the
	// precision split.
	g.unsupported[nvml.GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC] = true
	g.unsupported[nvml.GPM_METRIC_IMMA_TENSOR_UTIL] = true
	b, c := openClocked(t, s)
	read(t, b, 1)
	c.t = c.t.Add(time.Second)
	r := read(t, b, 1)
	if want := gpu.FieldLink | gpu.FieldTensorPrecision; r.Missing != want {
		t.Errorf("missing %s, want %s", r.Missing, want)
	}
	if r.LinkRxBytesPerSecond != 0 || r.TensorFP16Activity != 0 || r.SMActivity != 0.125 {
		t.Errorf("reading %+v", r)
	}
}

func TestGPMSampleFailureLosesOneWindow(t *testing.T) {
	t.Parallel()
	s, _, g := newH200(t)
	b, c := openClocked(t, s)
	read(t, b, 2)
	c.t = c.t.Add(time.Second)
	read(t, b, 2)
	// A transient failure: the read still succeeds, the activity figures
	// are missing for the pass, and the next sample starts a new window.
	g.failGet = nvml.ERROR_UNKNOWN
	c.t = c.t.Add(time.Second)
	r := read(t, b, 2)
	if r.Missing&gpu.ActivityFields != gpu.ActivityFields || r.UtilizationRatio != 0.25 {
		t.Errorf("after a failed sample: missing %s, utilisation %v; want the activity fields missing, the rest read", r.Missing, r.UtilizationRatio)
	}
	c.t = c.t.Add(time.Second)
	if r := read(t, b, 2); r.Missing&gpu.ActivityFields != gpu.ActivityFields {
		t.Errorf("first sample after the failure has no window: missing %s", r.Missing)
	}
	c.t = c.t.Add(time.Second)
	if r := read(t, b, 2); r.Missing != 0 {
		t.Errorf("recovered: missing %s", r.Missing)
	}
	// NOT_SUPPORTED from the sample call: GPM off for good, buffers freed.
	g.failGet = nvml.ERROR_NOT_SUPPORTED
	c.t = c.t.Add(time.Second)
	gets := g.gets
	for range 3 {
		c.t = c.t.Add(time.Second)
		if r := read(t, b, 2); r.Missing&gpu.ActivityFields != gpu.ActivityFields {
			t.Errorf("GPM refused: missing %s", r.Missing)
		}
	}
	if g.gets != gets || g.frees != 2 {
		t.Errorf("after NOT_SUPPORTED: %d more samples, %d frees; want 0, 2", g.gets-gets, g.frees)
	}
}

func TestGPMSamplesFreedAtClose(t *testing.T) {
	t.Parallel()
	s, _, g := newH200(t)
	b, err := nvidia.Open(s)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		read(t, b, i)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if g.allocs != 16 || g.frees != 16 {
		t.Errorf("%d samples allocated, %d freed; want 16 and 16", g.allocs, g.frees)
	}
}

func TestGPMPerMIGInstance(t *testing.T) {
	t.Parallel()
	s, devs, g := newH200(t)
	parent := devs[3]
	if ret, _ := parent.SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
		t.Fatalf("SetMigMode: %v", ret)
	}
	mig := migDevice(t, parent, nvml.GPU_INSTANCE_PROFILE_3_SLICE, "3g.71gb", "MIG-cccccccc-0000-0000-0000-000000000003", nil)
	// The MIG handle takes its own GPM samples (nvml.h: GpmSampleGet
	// "supports the device handle and MIG device handle"); whether GPM
	// exists at all is the GPU's to say.
	var migSamples int
	mig.GpmSampleGetFunc = func(smp nvml.GpmSample) nvml.Return {
		migSamples++
		g.gets++
		g.samples[smp.(*mock.GpmSample)] = g.gets
		return nvml.SUCCESS
	}
	parent.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	parent.GetMigDeviceHandleByIndexFunc = func(n int) (nvml.Device, nvml.Return) {
		if n == 0 {
			return mig, nvml.SUCCESS
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	b, c := openClocked(t, s)
	idx := len(b.Devices()) - 1
	if d := b.Devices()[idx]; d.Parent != 3 || d.UUID != "MIG-cccccccc-0000-0000-0000-000000000003" {
		t.Fatalf("last device %+v, want the MIG instance", d)
	}
	read(t, b, idx)
	c.t = c.t.Add(time.Second)
	r := read(t, b, idx)
	if !r.Has(gpu.FieldSMActivity|gpu.FieldTensorActivity|gpu.FieldDRAMActivity) || r.SMActivity != 0.125 {
		t.Errorf("MIG instance: missing %s, SM activity %v", r.Missing, r.SMActivity)
	}
	if migSamples != 2 || len(mig.GpmQueryDeviceSupportCalls()) != 0 || len(parent.GpmQueryDeviceSupportCalls()) != 1 {
		t.Errorf("%d samples on the MIG handle (want 2); support asked %d times of the instance (want 0), %d of its GPU (want 1)",
			migSamples, len(mig.GpmQueryDeviceSupportCalls()), len(parent.GpmQueryDeviceSupportCalls()))
	}
}

func TestGPMActivityInterval(t *testing.T) {
	t.Parallel()
	// The default window (2 s) at a 1 s agent: a new window every other
	// pass, the last one's figures in between; a pass 10 % early counts.
	s, _, g := newH200(t)
	b := open(t, s)
	c := &clock{t: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}
	b.SetClock(c.now)
	for i := range 7 {
		r := read(t, b, 0)
		if i >= 2 && r.Missing != 0 {
			t.Errorf("pass %d: missing %s", i, r.Missing)
		}
		c.t = c.t.Add(time.Second - 50*time.Millisecond)
	}
	if g.gets != 4 || g.metrics != 3 {
		t.Errorf("7 passes 0.95 s apart with a 2 s window: %d samples, %d windows; want 4 and 3", g.gets, g.metrics)
	}

	// 0 turns GPM off: no GPM call at all, the activity figures missing,
	// PCIe from the per-call counter.
	s2, devs2, g2 := newH200(t)
	b2 := open(t, s2)
	b2.SetActivityInterval(0)
	for range 3 {
		r := read(t, b2, 1)
		if r.Missing != gpu.ActivityFields || !r.Has(gpu.FieldPCIe) {
			t.Errorf("GPM off: missing %s", r.Missing)
		}
	}
	if g2.allocs+g2.gets+len(devs2[1].GpmQueryDeviceSupportCalls()) != 0 || len(devs2[1].GetPcieThroughputCalls()) != 6 {
		t.Errorf("GPM off: %d allocs, %d samples, %d support queries, %d PCIe calls (want 0, 0, 0, 6)",
			g2.allocs, g2.gets, len(devs2[1].GpmQueryDeviceSupportCalls()), len(devs2[1].GetPcieThroughputCalls()))
	}

	// Below NVML's 100 ms refresh the window is raised to it.
	s3, _, g3 := newH200(t)
	b3 := open(t, s3)
	b3.SetActivityInterval(time.Millisecond)
	c3 := &clock{t: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}
	b3.SetClock(c3.now)
	for range 10 {
		read(t, b3, 2)
		c3.t = c3.t.Add(20 * time.Millisecond)
	}
	if g3.gets != 2 {
		t.Errorf("10 passes 20 ms apart: %d samples, want 2 (one per 100 ms)", g3.gets)
	}
}

func TestGPMWindowNotAcrossAPause(t *testing.T) {
	t.Parallel()
	// A device followed by one job, then by nobody for ten minutes, then
	// by the next job: the next job's first figures must not come from a
	// window that reaches back over the pause (the first job's work).
	s, _, g := newH200(t)
	b, c := openClocked(t, s)
	for range 3 {
		read(t, b, 0)
		c.t = c.t.Add(time.Second)
	}
	metrics := g.metrics
	c.t = c.t.Add(10 * time.Minute)
	if r := read(t, b, 0); r.Missing&gpu.ActivityFields != gpu.ActivityFields {
		t.Errorf("first read after a pause reports a window over it: missing %s", r.Missing)
	}
	if g.metrics != metrics {
		t.Errorf("a window was computed across the pause")
	}
	c.t = c.t.Add(time.Second)
	if r := read(t, b, 0); r.Missing != 0 {
		t.Errorf("the next window: missing %s", r.Missing)
	}
	// A steady slow agent (one read a minute) is no pause.
	s2, _, g2 := newH200(t)
	b2, c2 := openClocked(t, s2)
	for i := range 5 {
		r := read(t, b2, 0)
		if i >= 1 && r.Missing != 0 {
			t.Errorf("read %d a minute apart: missing %s", i, r.Missing)
		}
		c2.t = c2.t.Add(time.Minute)
	}
	if g2.metrics != 4 {
		t.Errorf("5 reads a minute apart: %d windows, want 4", g2.metrics)
	}
}

func TestGPMSupportQueryErrorIsAskedAgain(t *testing.T) {
	t.Parallel()
	s, devs, _ := newH200(t)
	fail := true
	devs[4].GpmQueryDeviceSupportFunc = func() (nvml.GpmSupport, nvml.Return) {
		if fail {
			return nvml.GpmSupport{}, nvml.ERROR_UNKNOWN
		}
		return nvml.GpmSupport{Version: nvml.GPM_SUPPORT_VERSION, IsSupportedDevice: 1}, nvml.SUCCESS
	}
	b, c := openClocked(t, s)
	read(t, b, 4)
	fail = false
	for range 3 {
		c.t = c.t.Add(time.Second)
		read(t, b, 4)
	}
	if r := read(t, b, 4); r.Missing != 0 {
		t.Errorf("after a transient support-query error: missing %s (GPM off for good?)", r.Missing)
	}
	if n := len(devs[4].GpmQueryDeviceSupportCalls()); n != 2 {
		t.Errorf("support asked %d times, want 2 (the error, then the answer)", n)
	}
}

func TestGPMWithoutPCIeFallsBackToTheCounter(t *testing.T) {
	t.Parallel()
	// A driver whose GPM lacks the PCIe metrics: PCIe comes from the
	// per-call counter (when the site reads PCIe), the rest from GPM.
	s, devs, g := newH200(t)
	g.unsupported[nvml.GPM_METRIC_PCIE_RX_PER_SEC] = true
	b, c := openClocked(t, s)
	read(t, b, 5)
	c.t = c.t.Add(time.Second)
	read(t, b, 5)
	calls := len(devs[5].GetPcieThroughputCalls())
	c.t = c.t.Add(time.Second)
	r := read(t, b, 5)
	if !r.Has(gpu.FieldPCIe|gpu.FieldSMActivity) || r.PCIeRxBytesPerSecond != float64(valuesFor(5).rxKBs)*1024 {
		t.Errorf("missing %s, PCIe rx %v: want the counter's", r.Missing, r.PCIeRxBytesPerSecond)
	}
	if n := len(devs[5].GetPcieThroughputCalls()) - calls; n != 2 {
		t.Errorf("%d PCIe counter calls, want 2", n)
	}
}

func TestGPMRejectsImpossibleValues(t *testing.T) {
	t.Parallel()
	s, _, _ := newH200(t)
	s.GpmMetricsGetFunc = func(m *nvml.GpmMetricsGetType) nvml.Return {
		for i := range m.NumMetrics {
			m.Metrics[i].NvmlReturn = uint32(nvml.SUCCESS)
			m.Metrics[i].Value = math.Inf(1)
			switch nvml.GpmMetricId(m.Metrics[i].MetricId) {
			case nvml.GPM_METRIC_SM_UTIL:
				m.Metrics[i].Value = math.NaN()
			case nvml.GPM_METRIC_DRAM_BW_UTIL:
				m.Metrics[i].Value = -3
			case nvml.GPM_METRIC_SM_OCCUPANCY:
				m.Metrics[i].Value = 250 // over 100 %: clamped to 1
			}
		}
		return nvml.SUCCESS
	}
	b, c := openClocked(t, s)
	read(t, b, 0)
	c.t = c.t.Add(time.Second)
	r := read(t, b, 0)
	if r.Has(gpu.FieldSMActivity) || r.Has(gpu.FieldDRAMActivity) || r.Has(gpu.FieldLink) || r.Has(gpu.FieldTensorActivity) {
		t.Errorf("NaN, negative or infinite values read: missing only %s", r.Missing)
	}
	// GPM's infinite PCIe is refused; the per-call counter stands in.
	if math.IsInf(r.PCIeRxBytesPerSecond, 0) || r.PCIeRxBytesPerSecond != float64(valuesFor(0).rxKBs)*1024 {
		t.Errorf("PCIe rx %v", r.PCIeRxBytesPerSecond)
	}
	if !r.Has(gpu.FieldSMOccupancy) || r.SMOccupancy != 1 {
		t.Errorf("occupancy %v (missing %s), want 1", r.SMOccupancy, r.Missing)
	}
}
