package monitor

import (
	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/gpu"
)

// GPUMetric is one Prometheus series the agent writes per GPU of a job,
// labelled {cluster, job_id, node, gpu}, plus simulated="true" when the
// simulated source made it. At most thirteen per GPU keep the series
// count bounded; the activity series exist only for GPUs that report them
// (NVIDIA Hopper and later through GPM, AMD through its GPU metrics).
type GPUMetric struct {
	Name string
	Type string
	Help string
	need gpu.Field // the reading's fields the value needs
	// procs: the value needs the device's process list.
	procs bool
	get   func(*collector.GPUSample) float64
}

// GPUMetrics are the per-GPU series, in base units; docs/metrics.md
// documents them and a test runs promtool over them.
var GPUMetrics = []GPUMetric{
	{"jobsight_job_gpu_utilization_ratio", "gauge", "Fraction of time the GPU was busy over the driver's last sample period (0-1).",
		gpu.FieldUtilization, false, func(g *collector.GPUSample) float64 { return g.Reading.UtilizationRatio }},
	{"jobsight_job_gpu_memory_used_bytes", "gauge", "GPU memory in use on the device.",
		gpu.FieldMemoryUsed, false, func(g *collector.GPUSample) float64 { return float64(g.Reading.MemoryUsedBytes) }},
	{"jobsight_job_gpu_memory_total_bytes", "gauge", "GPU memory of the device.",
		gpu.FieldMemoryTotal, false, func(g *collector.GPUSample) float64 { return float64(g.Reading.MemoryTotalBytes) }},
	{"jobsight_job_gpu_energy_joules_total", "counter", "The device's energy counter (since driver load); rate() gives its power.",
		gpu.FieldEnergy, false, func(g *collector.GPUSample) float64 { return g.Reading.EnergyJoules }},
	{"jobsight_job_gpu_processes", "gauge", "Processes of the job on the GPU (0 on a held GPU: held and idle).",
		0, true, func(g *collector.GPUSample) float64 { return float64(g.JobProcesses) }},
	{"jobsight_job_gpu_sm_activity_ratio", "gauge", "Fraction of the GPU's SMs busy over the last measurement window (0-1); low under a high utilization means kernels too small to fill the GPU.",
		gpu.FieldSMActivity, false, func(g *collector.GPUSample) float64 { return g.Reading.SMActivity }},
	{"jobsight_job_gpu_sm_occupancy_ratio", "gauge", "Resident warps against the SMs' maximum over the last measurement window (0-1).",
		gpu.FieldSMOccupancy, false, func(g *collector.GPUSample) float64 { return g.Reading.SMOccupancy }},
	{"jobsight_job_gpu_tensor_activity_ratio", "gauge", "Fraction of time the tensor cores were busy, any precision (0-1).",
		gpu.FieldTensorActivity, false, func(g *collector.GPUSample) float64 { return g.Reading.TensorActivity }},
	{"jobsight_job_gpu_dram_activity_ratio", "gauge", "Device memory bandwidth used against the maximum (AMD: memory controller activity), 0-1.",
		gpu.FieldDRAMActivity, false, func(g *collector.GPUSample) float64 { return g.Reading.DRAMActivity }},
	{"jobsight_job_gpu_pcie_receive_bytes_per_second", "gauge", "PCIe traffic into the GPU (host to device) over the last measurement window.",
		gpu.FieldPCIe, false, func(g *collector.GPUSample) float64 { return g.Reading.PCIeRxBytesPerSecond }},
	{"jobsight_job_gpu_pcie_transmit_bytes_per_second", "gauge", "PCIe traffic out of the GPU (device to host) over the last measurement window.",
		gpu.FieldPCIe, false, func(g *collector.GPUSample) float64 { return g.Reading.PCIeTxBytesPerSecond }},
	{"jobsight_job_gpu_link_receive_bytes_per_second", "gauge", "GPU-to-GPU link traffic into the GPU (NVLink, XGMI; all links) over the last measurement window.",
		gpu.FieldLink, false, func(g *collector.GPUSample) float64 { return g.Reading.LinkRxBytesPerSecond }},
	{"jobsight_job_gpu_link_transmit_bytes_per_second", "gauge", "GPU-to-GPU link traffic out of the GPU (NVLink, XGMI; all links) over the last measurement window.",
		gpu.FieldLink, false, func(g *collector.GPUSample) float64 { return g.Reading.LinkTxBytesPerSecond }},
}

// gpuBuffer holds the points of one GPU since the last push.
type gpuBuffer struct {
	index     int
	uuid      string
	simulated bool
	points    [][]Point // indexed like GPUMetrics
	ever      []bool    // which have had a point
}

// addGPUs appends a pass's GPU points, one buffer per device, reused
// between pushes.
func (b *Buffer) addGPUs(s *collector.Sample) {
	ts := s.Time.UnixMilli()
	for k := range s.GPUs {
		g := &s.GPUs[k]
		gb := b.gpu(g.Device)
		for i := range GPUMetrics {
			m := &GPUMetrics[i]
			if g.Reading.Has(m.need) && (!m.procs || g.ProcessesKnown) {
				gb.points[i] = append(gb.points[i], Point{TimestampMs: ts, Value: m.get(g)})
				gb.ever[i] = true
			}
		}
	}
}

func (b *Buffer) gpu(d gpu.Device) *gpuBuffer {
	for i := range b.GPUs {
		if b.GPUs[i].index == d.Index && b.GPUs[i].uuid == d.UUID {
			return &b.GPUs[i]
		}
	}
	b.GPUs = append(b.GPUs, gpuBuffer{index: d.Index, uuid: d.UUID, simulated: d.Simulated,
		points: make([][]Point, len(GPUMetrics)), ever: make([]bool, len(GPUMetrics))})
	return &b.GPUs[len(b.GPUs)-1]
}

// gpuLabels are a GPU's series labels: the job's, gpu, and simulated.
func (gb *gpuBuffer) labels(job []Label) []Label {
	ls := append(append(make([]Label, 0, len(job)+2), job...), Label{Name: "gpu", Value: gpu.Device{Index: gb.index}.Name()})
	if gb.simulated {
		ls = append(ls, Label{Name: "simulated", Value: "true"})
	}
	return ls
}

// gpuSeries appends the buffered GPU points as series with the job's labels
// plus gpu (and simulated).
func (b *Buffer) gpuSeries(out []Series, labels []Label) []Series {
	for k := range b.GPUs {
		gb := &b.GPUs[k]
		ls := gb.labels(labels)
		for i, pts := range gb.points {
			if len(pts) > 0 {
				out = append(out, Series{Name: GPUMetrics[i].Name, Labels: ls, Samples: pts})
			}
		}
	}
	return out
}
