package monitor

import (
	"math"
	"slices"
	"time"

	"github.com/jobsight/jobsight/agent/aggregate"
	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/gpu"
	"github.com/jobsight/jobsight/internal/intconv"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// GPUState is what the agent has learned about a job's GPUs on this node.
// Plain data, so it round-trips through the checkpoint file.
type GPUState struct {
	// Source is the backend's name; Attribution how the job's devices
	// were learned; Held the number of devices its allocation names (-1
	// when unknown).
	Source      string `json:"source"`
	Attribution string `json:"attribution"`
	Held        int    `json:"held"`
	// Threshold is the utilisation above which a GPU counts as active, and
	// a GPU's average as effective use.
	Threshold float64 `json:"threshold"`
	// Unavailable says why GPUs the job holds could not be read ("" when
	// they could).
	Unavailable string           `json:"unavailable,omitempty"`
	Devices     []GPUDeviceState `json:"devices,omitempty"`
	// Timeline is the mean utilisation of the job's GPUs on this node over
	// the job's life (at most 64 points); SMTimeline the mean SM activity
	// of those that report it, on the same buckets (Start and Step follow
	// Timeline's).
	Timeline   aggregate.Timeline  `json:"timeline"`
	SMTimeline *aggregate.Timeline `json:"sm_timeline,omitempty"`
}

// GPUDeviceState is the rolling summary of one GPU.
type GPUDeviceState struct {
	Device gpu.Device `json:"device"`
	Held   bool       `json:"held"`
	// Seen is the set of fields read at least once.
	Seen    gpu.Field `json:"seen"`
	Samples int64     `json:"samples"`
	// Seconds is the time the GPU was watched, ProcessSeconds the part
	// with the job's processes on it.
	Seconds        float64 `json:"seconds"`
	ProcessSeconds float64 `json:"process_seconds"`
	// ProcessKnownSeconds is the watched time in which the device's
	// processes could be listed.
	ProcessKnownSeconds float64           `json:"process_known_seconds"`
	Util                aggregate.Series  `json:"utilization"`
	Memory              aggregate.Series  `json:"memory"`
	Power               aggregate.Series  `json:"power"`
	SMClock             aggregate.Series  `json:"sm_clock"`
	EnergyMilli         aggregate.Counter `json:"energy_mj"`
	TempPeak            float64           `json:"temperature_peak"`
	JobMemoryPeak       uint64            `json:"job_memory_peak"`
	JobMemoryKnown      bool              `json:"job_memory_known"`
	// Activity holds one series per activityFigures entry, made at the
	// first reading that has any of them (nil on a GPU that never did).
	Activity []aggregate.Series `json:"activity,omitempty"`
}

// activityFigure is one figure of jobmodel.GPUActivity: the reading's
// field and value.
type activityFigure struct {
	field gpu.Field
	get   func(*gpu.Reading) float64
}

// activityFigures are the figures summarised per GPU, in the order of
// jobmodel.ActivityStats (the array types make a length mismatch a compile
// error); the order is also the checkpoint's (GPUDeviceState.Activity).
var activityFigures = [jobmodel.ActivityFigures]activityFigure{
	{gpu.FieldSMActivity, func(r *gpu.Reading) float64 { return r.SMActivity }},
	{gpu.FieldSMOccupancy, func(r *gpu.Reading) float64 { return r.SMOccupancy }},
	{gpu.FieldTensorActivity, func(r *gpu.Reading) float64 { return r.TensorActivity }},
	{gpu.FieldTensorPrecision, func(r *gpu.Reading) float64 { return r.TensorFP64Activity }},
	{gpu.FieldTensorPrecision, func(r *gpu.Reading) float64 { return r.TensorFP16Activity }},
	{gpu.FieldTensorPrecision, func(r *gpu.Reading) float64 { return r.TensorINT8Activity }},
	{gpu.FieldPipeActivity, func(r *gpu.Reading) float64 { return r.FP64Activity }},
	{gpu.FieldPipeActivity, func(r *gpu.Reading) float64 { return r.FP32Activity }},
	{gpu.FieldPipeActivity, func(r *gpu.Reading) float64 { return r.FP16Activity }},
	{gpu.FieldDRAMActivity, func(r *gpu.Reading) float64 { return r.DRAMActivity }},
	{gpu.FieldPCIe, func(r *gpu.Reading) float64 { return r.PCIeRxBytesPerSecond }},
	{gpu.FieldPCIe, func(r *gpu.Reading) float64 { return r.PCIeTxBytesPerSecond }},
	{gpu.FieldLink, func(r *gpu.Reading) float64 { return r.LinkRxBytesPerSecond }},
	{gpu.FieldLink, func(r *gpu.Reading) float64 { return r.LinkTxBytesPerSecond }},
}

// activityReadFields are the fields activityFigures read.
const activityReadFields = gpu.ActivityFields | gpu.FieldPCIe

// EnableGPU starts GPU summaries for a job: source and attribution as the
// collector has them, held the allocation's size (-1 unknown).
func (n *NodeState) EnableGPU(source, attribution string, held int, threshold float64) {
	if n.GPU == nil {
		n.GPU = &GPUState{}
	}
	n.GPU.Source, n.GPU.Attribution, n.GPU.Held, n.GPU.Threshold = source, attribution, held, threshold
}

// GPUUnavailable records that the job holds GPUs the agent cannot read
// (held -1: unknown how many).
func (n *NodeState) GPUUnavailable(why string, held int) {
	if n.GPU == nil {
		n.GPU = &GPUState{Held: held}
	}
	n.GPU.Unavailable = why
}

// add folds a pass's GPU readings into the state; t is the pass's time
// and dt the time it stands for.
func (g *GPUState) add(gs []collector.GPUSample, t time.Time, dt float64) {
	var utilSum, smSum float64
	var nUtil, nSM int
	for k := range gs {
		s := &gs[k]
		d := g.device(s)
		r := &s.Reading
		read := gpu.AllFields &^ r.Missing
		d.Seen |= read
		d.Samples++
		d.Seconds += dt
		if s.ProcessesKnown {
			d.ProcessKnownSeconds += dt
		}
		if s.ProcessesKnown && s.JobProcesses > 0 {
			d.ProcessSeconds += dt
			if s.JobMemoryKnown {
				d.JobMemoryKnown = true
				d.JobMemoryPeak = max(d.JobMemoryPeak, s.JobMemoryBytes)
			}
		}
		if r.Has(gpu.FieldUtilization) {
			d.Util.Add(r.UtilizationRatio, dt)
			utilSum += r.UtilizationRatio
			nUtil++
		}
		if r.Has(gpu.FieldMemoryUsed) {
			d.Memory.Add(float64(r.MemoryUsedBytes), dt)
		}
		if r.Has(gpu.FieldMemoryTotal) && r.MemoryTotalBytes > 0 {
			d.Device.MemoryTotalBytes = r.MemoryTotalBytes
		}
		if r.Has(gpu.FieldPower) {
			d.Power.Add(r.PowerWatts, dt)
		}
		if r.Has(gpu.FieldSMClock) {
			d.SMClock.Add(r.SMClockHz, dt)
		}
		if r.Has(gpu.FieldEnergy) && r.EnergyJoules >= 0 && !math.IsInf(r.EnergyJoules, 0) {
			d.EnergyMilli.Observe(uint64(r.EnergyJoules * 1000))
		}
		if r.Has(gpu.FieldTemperature) {
			d.TempPeak = max(d.TempPeak, r.TemperatureCelsius)
		}
		if read&activityReadFields != 0 {
			d.addActivity(r, dt)
		}
		if r.Has(gpu.FieldSMActivity) {
			smSum += r.SMActivity
			nSM++
		}
	}
	now := float64(t.UnixMilli()) / 1000
	if (nUtil > 0 || nSM > 0) && g.Timeline.Step == 0 {
		// Both timelines start at the first pass with either figure (a
		// MIG instance gives SM activity and no utilisation).
		g.Timeline = aggregate.NewTimeline(dt)
		g.Timeline.Start = now
	}
	if nUtil > 0 {
		g.Timeline.Add(now, utilSum/float64(nUtil))
	}
	if nSM > 0 {
		if g.SMTimeline == nil {
			// The same buckets as the utilisation's: its start and step.
			g.SMTimeline = &aggregate.Timeline{Start: g.Timeline.Start, Step: g.Timeline.Step}
		}
		g.SMTimeline.Add(now, smSum/float64(nSM))
	}
}

// coarsened returns tl's means on buckets step seconds long, leaving tl as
// it is; nil when it has none.
func coarsened(tl *aggregate.Timeline, step float64) []*float64 {
	if len(tl.Count) == 0 {
		return nil
	}
	c := aggregate.Timeline{Start: tl.Start, Step: tl.Step, Sum: slices.Clone(tl.Sum), Count: slices.Clone(tl.Count)}
	c.CoarsenTo(step)
	return c.Means()
}

// addActivity folds a reading's activity figures into d.
func (d *GPUDeviceState) addActivity(r *gpu.Reading, dt float64) {
	if len(d.Activity) != len(activityFigures) {
		d.Activity = make([]aggregate.Series, len(activityFigures))
	}
	for i := range activityFigures {
		if f := &activityFigures[i]; r.Has(f.field) {
			d.Activity[i].Add(f.get(r), dt)
		}
	}
}

// activity renders d's activity figures; nil when it has none.
func (d *GPUDeviceState) activity() *jobmodel.GPUActivity {
	var a jobmodel.GPUActivity
	stats := jobmodel.ActivityStats(&a)
	found := false
	for i := range d.Activity {
		if i >= len(stats) {
			break
		}
		s := &d.Activity[i]
		avg, ok := s.Avg()
		if !ok {
			continue
		}
		*stats[i] = &jobmodel.Stat{Avg: jobmodel.Ptr(avg), P95: opt(s.Quantile(0.95)), Peak: opt(s.Max())}
		found = true
	}
	if !found {
		return nil
	}
	return &a
}

// device finds (or starts) the state of the sample's device.
func (g *GPUState) device(s *collector.GPUSample) *GPUDeviceState {
	for i := range g.Devices {
		if g.Devices[i].Device.Index == s.Device.Index && g.Devices[i].Device.UUID == s.Device.UUID {
			g.Devices[i].Held = g.Devices[i].Held || s.Held
			return &g.Devices[i]
		}
	}
	g.Devices = append(g.Devices, GPUDeviceState{
		Device: s.Device, Held: s.Held,
		Util:   aggregate.NewSeries(g.Threshold),
		Memory: aggregate.NewSeries(0), Power: aggregate.NewSeries(0), SMClock: aggregate.NewSeries(0),
	})
	slices.SortFunc(g.Devices, func(a, b GPUDeviceState) int { return a.Device.Index - b.Device.Index })
	for i := range g.Devices {
		if g.Devices[i].Device.Index == s.Device.Index {
			return &g.Devices[i]
		}
	}
	panic("unreachable")
}

// fill writes the GPU summary and per-GPU entries into a node document.
func (g *GPUState) fill(doc *jobmodel.Node) {
	if g.Unavailable != "" {
		doc.MissingMetrics = appendUnique(doc.MissingMetrics, "gpu")
	}
	if g.Held >= 0 {
		doc.Allocated.GPUs = jobmodel.Ptr(int64(g.Held))
	}
	if len(g.Devices) == 0 && g.Held <= 0 {
		return // no GPU of the job: no summary
	}
	sum := jobmodel.GPUUsage{Source: g.Source, Attribution: g.Attribution, Count: int64(len(g.Devices))}
	if g.Held >= 0 {
		sum.Held = jobmodel.Ptr(int64(g.Held))
	}
	var utilSum, gpuSeconds, active, energy float64
	var nUtil, effective, heldIdle int64
	var haveEnergy, haveActive bool
	var memPeak *int64
	acts := make([]*jobmodel.GPUActivity, 0, len(g.Devices))
	for i := range g.Devices {
		d := &g.Devices[i]
		e := d.document()
		acts = append(acts, e.Activity)
		sum.Simulated = sum.Simulated || e.Simulated
		gpuSeconds += d.Seconds
		if e.HeldIdle {
			heldIdle++
		}
		if e.UtilizationAvg != nil {
			utilSum += *e.UtilizationAvg
			nUtil++
			if *e.UtilizationAvg > g.Threshold {
				effective++
			}
		}
		if e.ActiveSeconds != nil {
			active += *e.ActiveSeconds
			haveActive = true
		}
		if e.EnergyJoules != nil {
			energy += *e.EnergyJoules
			haveEnergy = true
		}
		if e.MemoryPeakBytes != nil && (memPeak == nil || *e.MemoryPeakBytes > *memPeak) {
			memPeak = e.MemoryPeakBytes
		}
		for _, m := range e.MissingMetrics {
			doc.MissingMetrics = appendUnique(doc.MissingMetrics, m)
		}
		doc.GPUs = append(doc.GPUs, e)
	}
	if len(g.Devices) > 0 {
		sum.GPUSeconds = jobmodel.Ptr(gpuSeconds)
		sum.HeldIdle = jobmodel.Ptr(heldIdle)
	}
	if nUtil > 0 {
		sum.UtilizationAvg = jobmodel.Ptr(utilSum / float64(nUtil))
		sum.EffectiveGPUs = jobmodel.Ptr(effective)
		sum.EffectiveRatio = jobmodel.Ptr(float64(effective) / float64(len(g.Devices)))
	}
	if haveActive {
		sum.ActiveSeconds = jobmodel.Ptr(active)
	}
	if haveEnergy {
		sum.EnergyJoules = jobmodel.Ptr(energy)
	}
	sum.MemoryPeakBytes = memPeak
	// The two timelines share their start; either may have halved its
	// buckets more often than the other (a pass far into the job with one
	// figure only), so both are brought to the coarser step, on copies.
	step := g.Timeline.Step
	if g.SMTimeline != nil {
		step = max(step, g.SMTimeline.Step)
	}
	util := coarsened(&g.Timeline, step)
	var sm []*float64
	if g.SMTimeline != nil {
		sm = coarsened(g.SMTimeline, step)
	}
	if len(util) > 0 || len(sm) > 0 {
		sum.UtilizationTimeline, sum.SMActivityTimeline = util, sm
		sum.TimelineStepSeconds = jobmodel.Ptr(step)
		sum.TimelineStart = jobmodel.At(time.UnixMilli(int64(g.Timeline.Start * 1000)).UTC())
	}
	sum.Activity = jobmodel.SummarizeActivity(acts)
	doc.GPU = &sum
}

// document renders one GPU's entry.
func (d *GPUDeviceState) document() jobmodel.GPUDevice {
	e := jobmodel.GPUDevice{
		Index: int64(d.Device.Index), UUID: d.Device.UUID, Model: d.Device.Model, Vendor: string(d.Device.Vendor),
		PCIBusID: d.Device.PCIBusID, Partition: d.Device.Partition, Simulated: d.Device.Simulated,
		Held: d.Held,
	}
	// Held and idle needs the device's processes to have been listed: an
	// unlisted process is unknown, not absent.
	if d.ProcessKnownSeconds > 0 {
		e.ProcessSeconds = jobmodel.Ptr(d.ProcessSeconds)
		e.HeldIdle = d.Held && d.ProcessSeconds == 0
	}
	if d.Device.Parent >= 0 {
		e.ParentIndex = jobmodel.Ptr(int64(d.Device.Parent))
	}
	if avg, ok := d.Util.Avg(); ok {
		e.UtilizationAvg = jobmodel.Ptr(avg)
		e.UtilizationP95 = opt(d.Util.Quantile(0.95))
		e.UtilizationPeak = opt(d.Util.Max())
		e.ActiveSeconds = jobmodel.Ptr(d.Util.ActiveSeconds())
		e.IdleSeconds = jobmodel.Ptr(math.Max(0, d.Util.Seconds-d.Util.ActiveSeconds()))
	}
	e.MemoryAvgBytes = optI(d.Memory.Avg())
	e.MemoryPeakBytes = optI(d.Memory.Max())
	if d.Device.MemoryTotalBytes > 0 {
		e.MemoryTotalBytes = jobmodel.Ptr(intconv.Int64(d.Device.MemoryTotalBytes))
	}
	if d.JobMemoryKnown {
		e.JobMemoryPeakBytes = jobmodel.Ptr(intconv.Int64(d.JobMemoryPeak))
	}
	e.PowerAvgWatts = opt(d.Power.Avg())
	e.PowerPeakWatts = opt(d.Power.Max())
	e.SMClockAvgHz = opt(d.SMClock.Avg())
	if inc, ok := d.EnergyMilli.Increase(); ok && d.EnergyMilli.Observations > 1 {
		e.EnergyJoules = jobmodel.Ptr(float64(inc) / 1000)
	}
	if d.Seen&gpu.FieldTemperature != 0 {
		e.TemperaturePeakCelsius = jobmodel.Ptr(d.TempPeak)
	}
	e.Activity = d.activity()
	if d.Samples > 0 {
		e.MissingMetrics = (gpu.AllFields &^ d.Seen).Names()
		if d.ProcessKnownSeconds == 0 {
			e.MissingMetrics = append(e.MissingMetrics, "gpu_processes")
		}
	}
	return e
}

func appendUnique(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
