//go:build cgo

package nvidia

import (
	"math"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/jobsight/jobsight/agent/gpu"
)

// GPM (GPU Performance Monitoring, NVML on Hopper and later) gives what the
// device did between two of its samples: SM activity and occupancy, tensor
// and pipe use, DRAM bandwidth, PCIe and NVLink throughput. The agent takes
// one GPM sample per device at most every activity interval (Backend.gpmEvery)
// and computes the
// metrics of the window since the one before; every pass reports the last
// complete window's figures (at most one interval old), the way the energy
// counter is read every energyEvery.

// DefaultActivityInterval is the default shortest window between two GPM
// samples of a device (config gpu.activity_interval). A window costs
// ~70 µs of CPU per GPU on an H200 (docs/performance.md): every 2 s keeps an
// 8-GPU node at a 1 s sampling interval near 1.5 ms of CPU per sample, GPUs
// and the job's own pass together, against 2 ms with a window every second.
const DefaultActivityInterval = 2 * time.Second

// MinActivityInterval is NVML's own refresh: "the interval between two
// samples should be greater than 100ms" (nvml.h).
const MinActivityInterval = 100 * time.Millisecond

// mibPerSecond converts GPM's MiB/s throughputs.
const mibPerSecond = 1 << 20

// gpmFields are the reading fields GPM gives (FieldPCIe too, but that has
// the older per-call fallback, so it is not in this set).
const gpmFields = gpu.ActivityFields

// gpmMetricIDs are the metrics asked for, in the order gpmApply reads them.
var gpmMetricIDs = [...]nvml.GpmMetricId{
	nvml.GPM_METRIC_SM_UTIL,
	nvml.GPM_METRIC_SM_OCCUPANCY,
	nvml.GPM_METRIC_ANY_TENSOR_UTIL,
	nvml.GPM_METRIC_DFMA_TENSOR_UTIL,
	nvml.GPM_METRIC_DMMA_TENSOR_UTIL,
	nvml.GPM_METRIC_HMMA_TENSOR_UTIL,
	nvml.GPM_METRIC_IMMA_TENSOR_UTIL,
	nvml.GPM_METRIC_FP64_UTIL,
	nvml.GPM_METRIC_FP32_UTIL,
	nvml.GPM_METRIC_FP16_UTIL,
	nvml.GPM_METRIC_DRAM_BW_UTIL,
	nvml.GPM_METRIC_PCIE_RX_PER_SEC,
	nvml.GPM_METRIC_PCIE_TX_PER_SEC,
	nvml.GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC,
	nvml.GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
}

// gpmState is one device's GPM samples and the figures of its last window.
type gpmState struct {
	checked bool // support queried and samples allocated (or refused)
	// off: GPM is not available on this device, for good.
	off     bool
	samples [2]nvml.GpmSample
	// prev is the index in samples of the last sample taken, at prevAt;
	// prevOK says it is valid.
	prev   int
	prevAt time.Time
	prevOK bool
	// last holds the figures of the last complete window (lastFields
	// says which are valid); pcie says its PCIe figures are valid.
	last       gpu.Reading
	lastFields gpu.Field
	get        nvml.GpmMetricsGetType
	// readAt is when the device was last read, gap the time between the
	// two reads before: a read much later than usual (no job followed
	// the device meanwhile, or the agent was stopped) starts a new window
	// rather than report one reaching back into that time.
	readAt time.Time
	gap    time.Duration
	// everPCIe: GPM has given PCIe throughput on this device.
	everPCIe bool
}

// staleAfter is how many usual read gaps (or activity intervals, if
// longer) a window may span: beyond it the window reaches back into time
// the device was not followed, perhaps another job's.
const staleAfter = 3

// gpm fills r's GPM fields from the device's last complete window, taking a
// new sample when the window is b.gpmEvery old. It never fails the read: a
// device or driver without GPM leaves the fields missing (for good when
// NVML says it is not supported), and a failed sample leaves them missing
// for this pass.
func (b *Backend) gpm(h *handle, now time.Time, r *gpu.Reading) {
	g := &h.gpm
	if !g.checked {
		switch ok, permanent := b.gpmOpen(h); {
		case ok:
			g.checked = true
		case permanent:
			g.checked, g.off = true, true
			h.unsupported |= gpmFields
			return
		default:
			return // asked again next pass
		}
	}
	if g.off {
		return
	}
	gap := now.Sub(g.readAt)
	if g.prevOK && g.gap > 0 && gap > staleAfter*max(g.gap, b.gpmEvery) {
		// The last sample is from before a long pause: a new window.
		g.prevOK, g.lastFields = false, 0
	}
	if !g.readAt.IsZero() && gap > 0 {
		g.gap = gap
	}
	g.readAt = now
	// A pass a little early (the agent's timer jitters) still starts the
	// next window: otherwise every other pass would repeat the last one.
	if !g.prevOK || now.Sub(g.prevAt) >= b.gpmEvery-b.gpmEvery/10 {
		b.gpmSample(h, now)
	}
	if g.lastFields == 0 {
		return
	}
	r.CopyFields(&g.last, g.lastFields)
}

// gpmOpen asks NVML whether the device supports GPM and allocates its two
// samples. Not ok and permanent when the device has no GPM (the driver
// says so, or lacks the call); not ok and not permanent when the answer
// was an error that may pass (asked again next pass).
func (b *Backend) gpmOpen(h *handle) (ok, permanent bool) {
	dev := h.dev
	if h.gpmParent != nil {
		dev = h.gpmParent // a MIG device: its GPU says whether GPM exists
	}
	s, ret := dev.GpmQueryDeviceSupport()
	if ret != nvml.SUCCESS {
		_, permanent := fieldMissing(ret)
		return false, permanent
	}
	if s.IsSupportedDevice == 0 {
		return false, true
	}
	for i := range h.gpm.samples {
		smp, ret := b.lib.GpmSampleAlloc()
		if ret != nvml.SUCCESS {
			b.gpmFree(h)
			_, permanent := fieldMissing(ret)
			return false, permanent
		}
		h.gpm.samples[i] = smp
	}
	return true, false
}

// gpmSample takes a sample into the buffer not holding the previous one
// and, when a previous one exists and is old enough, computes the window's
// metrics.
func (b *Backend) gpmSample(h *handle, now time.Time) {
	g := &h.gpm
	if g.prevOK && now.Sub(g.prevAt) < MinActivityInterval {
		return
	}
	next := 1 - g.prev
	if ret := h.dev.GpmSampleGet(g.samples[next]); ret != nvml.SUCCESS {
		if missing, permanent := fieldMissing(ret); missing && permanent {
			g.off = true
			h.unsupported |= gpmFields
			b.gpmFree(h)
		}
		// Lost window: the next sample starts a new one.
		g.prevOK, g.lastFields = false, 0
		return
	}
	if g.prevOK {
		b.gpmMetrics(h, g.samples[g.prev], g.samples[next])
	}
	g.prev, g.prevAt, g.prevOK = next, now, true
}

// gpmMetrics computes the metrics between two samples into g.last.
func (b *Backend) gpmMetrics(h *handle, s1, s2 nvml.GpmSample) {
	g := &h.gpm
	g.get.Version = nvml.GPM_METRICS_GET_VERSION
	g.get.NumMetrics = uint32(len(gpmMetricIDs))
	g.get.Sample1, g.get.Sample2 = s1, s2
	for i, id := range gpmMetricIDs {
		g.get.Metrics[i] = nvml.GpmMetric{MetricId: uint32(id)} // #nosec G115 -- the ids are nvml.h's constants, 2 to 61: never negative
	}
	if ret := b.lib.GpmMetricsGet(&g.get); ret != nvml.SUCCESS {
		g.lastFields = 0
		return
	}
	g.last, g.lastFields = gpmApply(g.get.Metrics[:len(gpmMetricIDs)])
	g.everPCIe = g.everPCIe || g.lastFields&gpu.FieldPCIe != 0
}

// gpmApply turns the metrics of one window (in gpmMetricIDs order) into
// reading values and the fields they fill; a field is filled only when
// every metric it needs was given.
func gpmApply(m []nvml.GpmMetric) (r gpu.Reading, fields gpu.Field) {
	val := func(i int) (float64, bool) {
		if v := m[i].Value; m[i].NvmlReturn != uint32(nvml.SUCCESS) || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, false
		}
		return m[i].Value, true
	}
	pct := func(i int) (float64, bool) {
		v, ok := val(i)
		return min(v/100, 1), ok
	}
	if v, ok := pct(0); ok {
		r.SMActivity, fields = v, fields|gpu.FieldSMActivity
	}
	if v, ok := pct(1); ok {
		r.SMOccupancy, fields = v, fields|gpu.FieldSMOccupancy
	}
	if v, ok := pct(2); ok {
		r.TensorActivity, fields = v, fields|gpu.FieldTensorActivity
	}
	// FP64 tensor work: NVML names it DFMA (6) and DMMA (8); a driver
	// gives one or both: the larger is taken.
	dfma, ok1 := pct(3)
	dmma, ok2 := pct(4)
	hmma, ok3 := pct(5)
	imma, ok4 := pct(6)
	if (ok1 || ok2) && ok3 && ok4 {
		r.TensorFP64Activity, r.TensorFP16Activity, r.TensorINT8Activity = max(dfma, dmma), hmma, imma
		fields |= gpu.FieldTensorPrecision
	}
	fp64, ok1 := pct(7)
	fp32, ok2 := pct(8)
	fp16, ok3 := pct(9)
	if ok1 && ok2 && ok3 {
		r.FP64Activity, r.FP32Activity, r.FP16Activity = fp64, fp32, fp16
		fields |= gpu.FieldPipeActivity
	}
	if v, ok := pct(10); ok {
		r.DRAMActivity, fields = v, fields|gpu.FieldDRAMActivity
	}
	rx, ok1 := val(11)
	tx, ok2 := val(12)
	if ok1 && ok2 {
		r.PCIeRxBytesPerSecond, r.PCIeTxBytesPerSecond = rx*mibPerSecond, tx*mibPerSecond
		fields |= gpu.FieldPCIe
	}
	rx, ok1 = val(13)
	tx, ok2 = val(14)
	if ok1 && ok2 {
		r.LinkRxBytesPerSecond, r.LinkTxBytesPerSecond = rx*mibPerSecond, tx*mibPerSecond
		fields |= gpu.FieldLink
	}
	return r, fields
}

// gpmFree releases the device's GPM samples.
func (b *Backend) gpmFree(h *handle) {
	for i, s := range h.gpm.samples {
		if s != nil {
			b.lib.GpmSampleFree(s)
			h.gpm.samples[i] = nil
		}
	}
	h.gpm.prevOK = false
}
