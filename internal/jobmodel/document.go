package jobmodel

// SchemaVersion is written into every document; it changes when a field's
// meaning changes (added fields do not change it).
const SchemaVersion = 1

// Sources of a document.
const (
	SourceSlurm      = "slurm"      // written by the agent started by the SPANK plugin
	SourceStandalone = "standalone" // written by `jobsight-agent run -- CMD`
	// SourceGenerated marks made-up data: the demo history and benchmark
	// seed of internal/demo (`jobsight-stack up --history`), never a
	// measurement.
	SourceGenerated = "generated"
)

// Job states as stored: Slurm's base state names, plus RUNNING while the job
// runs and UNKNOWN when the final state could not be learned.
const (
	StateRunning     = "RUNNING"
	StateCompleted   = "COMPLETED"
	StateFailed      = "FAILED"
	StateCancelled   = "CANCELLED"
	StateTimeout     = "TIMEOUT"
	StateOutOfMemory = "OUT_OF_MEMORY"
	StateNodeFail    = "NODE_FAIL"
	StateUnknown     = "UNKNOWN"
)

// EndLost is the end_reason of a job the cluster-state collector closed:
// Slurm no longer listed it and no agent had updated its documents for
// the collector's lost_after. Its end_time is the last update seen, its
// state UNKNOWN, and missing_metrics names what is missing
// (MissingFinalState, and per node what Assemble names).
const EndLost = "lost"

// MissingFinalState is the missing_metrics entry of a job whose final
// state and summary no agent wrote (closed as EndLost).
const MissingFinalState = "slurm_final_state"

// Job is the job document: one per job, in the job index, id DocID. It holds
// the job's metadata and request, written when the job starts, and the usage
// summed over its nodes, written when it ends. Fields that could not be read
// are absent (and named in MissingMetrics), never zero.
type Job struct {
	DocID         string `json:"doc_id"`
	SchemaVersion int    `json:"schema_version"`
	Source        string `json:"source"`
	Cluster       string `json:"cluster"`
	JobID         string `json:"job_id"`
	SlurmJobID    uint64 `json:"slurm_job_id,omitempty"`
	// SLUID is Slurm's unique id of the job (26.05 on), which tells a
	// reused job id apart before the submit time does.
	SLUID        string  `json:"sluid,omitempty"`
	ArrayJobID   *uint64 `json:"array_job_id,omitempty"`
	ArrayTaskID  *uint64 `json:"array_task_id,omitempty"`
	HetJobID     *uint64 `json:"het_job_id,omitempty"`
	HetJobOffset *uint64 `json:"het_job_offset,omitempty"`

	Name      string   `json:"name,omitempty"`
	User      string   `json:"user,omitempty"`
	UID       *uint32  `json:"uid,omitempty"`
	GID       *uint32  `json:"gid,omitempty"`
	Account   string   `json:"account,omitempty"`
	Partition string   `json:"partition,omitempty"`
	QOS       string   `json:"qos,omitempty"`
	Nodes     []string `json:"nodes,omitempty"`
	NodeCount int      `json:"node_count,omitempty"`

	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// EndReason says why a final document ended other than by its
	// agent: EndLost when the cluster-state collector closed it.
	EndReason  string `json:"end_reason,omitempty"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	ExitSignal *int   `json:"exit_signal,omitempty"`

	SubmitTime       *Time    `json:"submit_time,omitempty"`
	StartTime        *Time    `json:"start_time,omitempty"`
	EndTime          *Time    `json:"end_time,omitempty"`
	TimeLimitSeconds *int64   `json:"time_limit_seconds,omitempty"`
	ElapsedSeconds   *float64 `json:"elapsed_seconds,omitempty"`

	Requested Request `json:"requested"`
	Usage

	Sampling       Sampling `json:"sampling"`
	MissingMetrics []string `json:"missing_metrics,omitempty"`
	// Analysis is the post-job analysis, set when the final document is
	// written (internal/analysis).
	Analysis *Analysis `json:"analysis,omitempty"`
	// Totals are the reserved and used hours, computed once when the
	// final document is written (TotalsOf); absent while the job runs.
	Totals *Totals `json:"totals,omitempty"`
	// Final is true once the job has ended and its summary is complete
	// (or as complete as it will get: see MissingMetrics).
	Final        bool   `json:"final"`
	AgentVersion string `json:"agent_version"`
	UpdatedAt    *Time  `json:"updated_at"`
}

// Node is the per-node document: one per job per node, id NodeDocID, written
// only by that node's agent. The job document is assembled from these.
type Node struct {
	DocID         string  `json:"doc_id"`
	JobDocID      string  `json:"job_doc_id"`
	SchemaVersion int     `json:"schema_version"`
	Source        string  `json:"source"`
	Cluster       string  `json:"cluster"`
	JobID         string  `json:"job_id"`
	SlurmJobID    uint64  `json:"slurm_job_id,omitempty"`
	SLUID         string  `json:"sluid,omitempty"`
	Node          string  `json:"node"`
	User          string  `json:"user,omitempty"`
	UID           *uint32 `json:"uid,omitempty"`

	// SubmitTime is the job's submit time, which tells a reused job id
	// from the job that held it before.
	SubmitTime *Time `json:"submit_time,omitempty"`
	// StartTime and EndTime are when the agent began and stopped watching
	// the job on this node.
	StartTime *Time `json:"start_time,omitempty"`
	EndTime   *Time `json:"end_time,omitempty"`

	Allocated Allocation `json:"allocated"`
	Usage

	Sampling       Sampling `json:"sampling"`
	MissingMetrics []string `json:"missing_metrics,omitempty"`
	// AgentState is "running" while the agent samples, "finished" when it
	// stopped at job end, and "lost" when the agent died and its successor
	// finalized the document from the last checkpoint.
	AgentState   string `json:"agent_state"`
	Final        bool   `json:"final"`
	AgentVersion string `json:"agent_version"`
	UpdatedAt    *Time  `json:"updated_at"`
}

// Agent states of a node document.
const (
	AgentRunning  = "running"
	AgentFinished = "finished"
	AgentLost     = "lost"
)

// Request is what the job asked Slurm for, over all its nodes.
type Request struct {
	CPUs               *int64   `json:"cpus,omitempty"`
	MemoryBytes        *int64   `json:"memory_bytes,omitempty"`
	MemoryPerNodeBytes *int64   `json:"memory_per_node_bytes,omitempty"`
	GPUs               *int64   `json:"gpus,omitempty"`
	Nodes              *int64   `json:"nodes,omitempty"`
	Tasks              *int64   `json:"tasks,omitempty"`
	Gres               []string `json:"gres,omitempty"`
	TRES               string   `json:"tres,omitempty"`
}

// Allocation is what the job holds on one node, as its cgroup enforces it
// (GPUs: as Slurm or the job's device cgroup lists them).
type Allocation struct {
	CPUs        *int64 `json:"cpus,omitempty"`
	MemoryBytes *int64 `json:"memory_bytes,omitempty"`
	GPUs        *int64 `json:"gpus,omitempty"`
}

// Usage is what a job used: on one node (node document) or over all its
// nodes (job document).
type Usage struct {
	CPU       *CPUUsage    `json:"cpu,omitempty"`
	Memory    *MemoryUsage `json:"memory,omitempty"`
	IO        *IOUsage     `json:"io,omitempty"`
	Processes *CountUsage  `json:"processes,omitempty"`
	Threads   *CountUsage  `json:"threads,omitempty"`
	// GPU summarises the job's GPUs; GPUs has one entry per GPU.
	GPU  *GPUUsage   `json:"gpu,omitempty"`
	GPUs []GPUDevice `json:"gpus,omitempty"`
	// Energy is the job's share of its nodes' energy (docs/energy.md);
	// Emissions the CO2e of that energy.
	Energy    *EnergyUsage `json:"energy,omitempty"`
	Emissions *Emissions   `json:"emissions,omitempty"`
	// Pressure is how much of the time the job was watched its tasks
	// stalled waiting for CPU, memory or I/O (cgroup v2 pressure stall
	// information); absent where it could not be read (cgroup v1,
	// standalone mode, a kernel without PSI).
	Pressure *PressureUsage `json:"pressure,omitempty"`
}

// PressureFamilies names the pressure stall families of a PressureUsage,
// in the order of its Families: a resource ("cpu", "memory", "io") and
// "some" (at least one of the job's tasks stalled) or "full" (all its
// non-idle tasks stalled at once).
var PressureFamilies = [...]string{"cpu_some", "memory_some", "memory_full", "io_some", "io_full"}

// PressureUsage is the share of its watched time that a job's tasks
// stalled on a resource, from the kernel's cumulative stall totals of the
// job's cgroup (PSI: cpu.pressure, memory.pressure, io.pressure). Stall
// time is wall-clock time, not summed over tasks or CPUs; ratios are 0–1.
//
// On a node: WatchedSeconds is the time from the first to the last sample
// that read the pressure files; *Seconds the kernel's stall totals at the
// last of them (since the job's cgroup was made, as cpu.core_seconds is
// cpu.stat's); *Ratio that over WatchedSeconds, clamped to 0–1; *PeakRatio the largest share over
// one interval between two samples. In job documents: WatchedSeconds and
// *Seconds are sums over the nodes, *Ratio is the stall seconds over the
// watched seconds (the nodes' mean weighted by time), *PeakRatio the
// largest of any node's, MaxNode*Ratio the largest node's *Ratio.
type PressureUsage struct {
	WatchedSeconds *float64 `json:"watched_seconds,omitempty"`

	CPUSomeSeconds    *float64 `json:"cpu_some_seconds,omitempty"`
	MemorySomeSeconds *float64 `json:"memory_some_seconds,omitempty"`
	MemoryFullSeconds *float64 `json:"memory_full_seconds,omitempty"`
	IOSomeSeconds     *float64 `json:"io_some_seconds,omitempty"`
	IOFullSeconds     *float64 `json:"io_full_seconds,omitempty"`

	CPUSomeRatio    *float64 `json:"cpu_some_ratio,omitempty"`
	MemorySomeRatio *float64 `json:"memory_some_ratio,omitempty"`
	MemoryFullRatio *float64 `json:"memory_full_ratio,omitempty"`
	IOSomeRatio     *float64 `json:"io_some_ratio,omitempty"`
	IOFullRatio     *float64 `json:"io_full_ratio,omitempty"`

	CPUSomePeakRatio    *float64 `json:"cpu_some_peak_ratio,omitempty"`
	MemorySomePeakRatio *float64 `json:"memory_some_peak_ratio,omitempty"`
	MemoryFullPeakRatio *float64 `json:"memory_full_peak_ratio,omitempty"`
	IOSomePeakRatio     *float64 `json:"io_some_peak_ratio,omitempty"`
	IOFullPeakRatio     *float64 `json:"io_full_peak_ratio,omitempty"`

	MaxNodeCPUSomeRatio    *float64 `json:"max_node_cpu_some_ratio,omitempty"`
	MaxNodeMemorySomeRatio *float64 `json:"max_node_memory_some_ratio,omitempty"`
	MaxNodeMemoryFullRatio *float64 `json:"max_node_memory_full_ratio,omitempty"`
	MaxNodeIOSomeRatio     *float64 `json:"max_node_io_some_ratio,omitempty"`
	MaxNodeIOFullRatio     *float64 `json:"max_node_io_full_ratio,omitempty"`
}

// StallFields are one pressure family's fields of a PressureUsage, as
// pointers into it.
type StallFields struct {
	Seconds, Ratio, PeakRatio, MaxNodeRatio **float64
}

// Families returns the fields of every family, in PressureFamilies order.
func (p *PressureUsage) Families() [len(PressureFamilies)]StallFields {
	return [...]StallFields{
		{&p.CPUSomeSeconds, &p.CPUSomeRatio, &p.CPUSomePeakRatio, &p.MaxNodeCPUSomeRatio},
		{&p.MemorySomeSeconds, &p.MemorySomeRatio, &p.MemorySomePeakRatio, &p.MaxNodeMemorySomeRatio},
		{&p.MemoryFullSeconds, &p.MemoryFullRatio, &p.MemoryFullPeakRatio, &p.MaxNodeMemoryFullRatio},
		{&p.IOSomeSeconds, &p.IOSomeRatio, &p.IOSomePeakRatio, &p.MaxNodeIOSomeRatio},
		{&p.IOFullSeconds, &p.IOFullRatio, &p.IOFullPeakRatio, &p.MaxNodeIOFullRatio},
	}
}

// EnergyMethod names how a job's energy is apportioned on shared nodes
// (docs/energy.md): RAPL and node power split by the job's share of the
// node's CPU time, the job's own GPUs' energy counted directly.
const EnergyMethod = "cpu_time_share+gpu_direct"

// EnergyUsage is the energy a job used on one node (node document) or over
// all its nodes (job document). Values are joules; a part that could not be
// measured is absent and named in missing_metrics (energy_cpu,
// energy_dram, energy_gpu, energy_node), never zero.
type EnergyUsage struct {
	// Method says how node energy was apportioned to the job.
	Method string `json:"method"`
	// CPUJoules and DRAMJoules are the job's share of the node's RAPL
	// package and DRAM energy; NodeJoules its share of the node's wall
	// energy (IPMI DCMI power); GPUJoules its own GPUs' energy.
	CPUJoules  *float64 `json:"cpu_joules,omitempty"`
	DRAMJoules *float64 `json:"dram_joules,omitempty"`
	GPUJoules  *float64 `json:"gpu_joules,omitempty"`
	NodeJoules *float64 `json:"node_joules,omitempty"`
	// TotalJoules is the job's energy: cpu + dram + gpu when RAPL was
	// read, else node (+ nothing: the wall power already holds the GPUs),
	// else gpu alone; TotalBasis names the parts summed ("cpu+dram+gpu").
	TotalJoules *float64 `json:"total_joules,omitempty"`
	TotalKWh    *float64 `json:"total_kwh,omitempty"`
	TotalBasis  string   `json:"total_basis,omitempty"`
	// CPUSeconds is the job's CPU time over the intervals energy was
	// apportioned in; CPUTimeShare that over the node's busy CPU time in
	// them (0–1); AttributedSeconds the intervals' length.
	CPUSeconds        *float64 `json:"cpu_seconds,omitempty"`
	CPUTimeShare      *float64 `json:"cpu_time_share,omitempty"`
	AttributedSeconds *float64 `json:"attributed_seconds,omitempty"`
	// Node is what the whole node (all jobs and the system) used over the
	// same intervals.
	Node *NodeEnergy `json:"node,omitempty"`
}

// NodeEnergy is a node's whole energy and busy CPU time over the intervals a
// job's share was computed in (summed over nodes in job documents).
type NodeEnergy struct {
	CPUJoules  *float64 `json:"cpu_joules,omitempty"`
	DRAMJoules *float64 `json:"dram_joules,omitempty"`
	// WallJoules is the node's energy at the wall (IPMI DCMI power ×
	// time).
	WallJoules *float64 `json:"wall_joules,omitempty"`
	CPUSeconds *float64 `json:"cpu_seconds,omitempty"`
}

// Emissions is the estimated CO2-equivalent of a job's energy
// (energy.total_kwh × the grid's emission factor).
type Emissions struct {
	CO2eGrams *float64 `json:"co2e_grams,omitempty"`
	// FactorGPerKWh is the grid emission factor used (gCO2e/kWh); in job
	// documents, co2e_grams / total kWh over the nodes.
	FactorGPerKWh *float64 `json:"factor_g_per_kwh,omitempty"`
	// Zone is the configured grid zone (an ISO 3166 country code, or a
	// live provider's zone).
	Zone string `json:"zone,omitempty"`
	// Source cites where the factor comes from (data set and year, or the
	// live provider).
	Source string `json:"source,omitempty"`
	// Provider is "static" (the built-in table or a configured factor) or
	// the live provider's name.
	Provider string `json:"provider,omitempty"`
	// Fallback says why a configured live provider was not used (the
	// static factor was, instead).
	Fallback string `json:"fallback,omitempty"`
}

// GPU data sources (GPUUsage.Source).
const (
	GPUSourceNVML      = "nvml"
	GPUSourceAMDSMI    = "amdsmi"
	GPUSourceAMDSMICLI = "amd-smi-cli"
	GPUSourceSimulated = "simulated"
)

// GPUUsage summarises a job's GPUs on one node (node document) or over all
// its nodes (job document). Utilisation is a ratio, 0–1.
type GPUUsage struct {
	// Count is the number of GPUs reported in GPUs.
	Count int64 `json:"count"`
	// Held is the number of GPUs the job's allocation names (absent when
	// the allocation is unknown: attribution "processes").
	Held *int64 `json:"held,omitempty"`
	// Source is the backend the data came from (nvml, amdsmi, amd-smi-cli,
	// simulated); several, "+"-joined, when nodes differ.
	Source string `json:"source,omitempty"`
	// Attribution says how the job's GPUs were learned: slurm, cgroup or
	// processes.
	Attribution string `json:"attribution,omitempty"`
	// Simulated is true when any of the data came from the simulated
	// source: it is not a measurement of real hardware.
	Simulated bool `json:"simulated,omitempty"`
	// UtilizationAvg is the mean over the GPUs of their average utilisation.
	UtilizationAvg *float64 `json:"utilization_avg,omitempty"`
	// EffectiveGPUs is the number of GPUs whose average utilisation is
	// above the agent's gpu.active_threshold; EffectiveRatio is that
	// over Count.
	EffectiveGPUs  *int64   `json:"effective_gpus,omitempty"`
	EffectiveRatio *float64 `json:"effective_ratio,omitempty"`
	// HeldIdle is the number of held GPUs on which no process of the job
	// was ever seen.
	HeldIdle *int64 `json:"held_idle,omitempty"`
	// GPUSeconds is the time the GPUs were watched, summed over GPUs
	// (GPU-seconds reserved); ActiveSeconds the part with utilisation above
	// the active threshold.
	GPUSeconds    *float64 `json:"gpu_seconds,omitempty"`
	ActiveSeconds *float64 `json:"active_seconds,omitempty"`
	// MemoryPeakBytes is the largest device memory in use on any one GPU.
	MemoryPeakBytes *int64 `json:"memory_peak_bytes,omitempty"`
	// EnergyJoules is the energy the GPUs used while watched.
	EnergyJoules *float64 `json:"energy_joules,omitempty"`
	// UtilizationTimeline is the mean utilisation of the GPUs over the
	// job's life, one value per TimelineStepSeconds from TimelineStart (at
	// most 64 values; coarser steps for longer jobs).
	// A gap in sampling (the agent down) is null, never a guessed value.
	UtilizationTimeline []*float64 `json:"utilization_timeline,omitempty"`
	TimelineStepSeconds *float64   `json:"timeline_step_seconds,omitempty"`
	TimelineStart       *Time      `json:"timeline_start,omitempty"`
	// SMActivityTimeline is the mean SM activity of the GPUs that report
	// it, on the same steps as UtilizationTimeline: the two side by side
	// show a GPU "busy" with kernels too small to fill it.
	SMActivityTimeline []*float64 `json:"sm_activity_timeline,omitempty"`
	// Activity summarises the GPUs' activity figures (see GPUActivity).
	Activity *GPUActivity `json:"activity,omitempty"`
}

// GPUActivity is what GPUs did over a job, beyond "some kernel ran":
// fractions 0–1 of the time (or, for the activity ratios, of the SMs'
// capacity), and link throughput in bytes per second. On a GPU entry each
// Stat is that GPU's time-weighted average, 95th percentile and peak; in
// the job's and node's GPU summary Avg is the mean of the GPUs' averages
// and P95 and Peak the largest of theirs. A figure no GPU could give is
// absent (and named in missing_metrics), never zero.
type GPUActivity struct {
	// SM is the fraction of SMs busy (NVML GPM SM activity; AMD has no
	// such figure); SMOccupancy the resident warps against the maximum.
	SM          *Stat `json:"sm,omitempty"`
	SMOccupancy *Stat `json:"sm_occupancy,omitempty"`
	// Tensor is the tensor cores' activity at any precision; TensorFP64
	// (DMMA), TensorFP16 (HMMA: FP16, BF16, TF32) and TensorINT8 (IMMA)
	// split it where the device offers it.
	Tensor     *Stat `json:"tensor,omitempty"`
	TensorFP64 *Stat `json:"tensor_fp64,omitempty"`
	TensorFP16 *Stat `json:"tensor_fp16,omitempty"`
	TensorINT8 *Stat `json:"tensor_int8,omitempty"`
	// FP64, FP32 and FP16 are the non-tensor floating-point pipes.
	FP64 *Stat `json:"fp64,omitempty"`
	FP32 *Stat `json:"fp32,omitempty"`
	FP16 *Stat `json:"fp16,omitempty"`
	// DRAM is the memory bandwidth used against the device's maximum
	// (AMD: the memory controller's activity).
	DRAM *Stat `json:"dram,omitempty"`
	// PCIe and GPU-to-GPU link (NVLink, XGMI) throughput, bytes/s.
	PCIeRxBytesPerSecond *Stat `json:"pcie_rx_bytes_per_second,omitempty"`
	PCIeTxBytesPerSecond *Stat `json:"pcie_tx_bytes_per_second,omitempty"`
	LinkRxBytesPerSecond *Stat `json:"link_rx_bytes_per_second,omitempty"`
	LinkTxBytesPerSecond *Stat `json:"link_tx_bytes_per_second,omitempty"`
}

// Stat is one figure's time-weighted average, 95th percentile and peak.
type Stat struct {
	Avg  *float64 `json:"avg,omitempty"`
	P95  *float64 `json:"p95,omitempty"`
	Peak *float64 `json:"peak,omitempty"`
}

// GPUDevice is one GPU (or MIG instance, or AMD compute partition) of a job
// and what the job did with it. Absent values could not be read.
type GPUDevice struct {
	// Node is the node the GPU is on (job documents).
	Node     string `json:"node,omitempty"`
	Index    int64  `json:"index"`
	UUID     string `json:"uuid,omitempty"`
	Model    string `json:"model,omitempty"`
	Vendor   string `json:"vendor,omitempty"`
	PCIBusID string `json:"pci_bus_id,omitempty"`
	// ParentIndex is the whole GPU of a MIG instance or partition.
	ParentIndex *int64 `json:"parent_index,omitempty"`
	// Partition is the MIG profile or AMD partition mode.
	Partition string `json:"partition,omitempty"`
	Simulated bool   `json:"simulated,omitempty"`
	// Held: the job's allocation names this GPU. HeldIdle: held, and no
	// process of the job was ever seen on it.
	Held     bool `json:"held"`
	HeldIdle bool `json:"held_idle"`
	// ProcessSeconds is how long the job's processes were on the GPU.
	ProcessSeconds *float64 `json:"process_seconds,omitempty"`

	UtilizationAvg  *float64 `json:"utilization_avg,omitempty"`
	UtilizationP95  *float64 `json:"utilization_p95,omitempty"`
	UtilizationPeak *float64 `json:"utilization_peak,omitempty"`
	// ActiveSeconds and IdleSeconds split the watched time at the active
	// threshold.
	ActiveSeconds *float64 `json:"active_seconds,omitempty"`
	IdleSeconds   *float64 `json:"idle_seconds,omitempty"`

	MemoryAvgBytes   *int64 `json:"memory_avg_bytes,omitempty"`
	MemoryPeakBytes  *int64 `json:"memory_peak_bytes,omitempty"`
	MemoryTotalBytes *int64 `json:"memory_total_bytes,omitempty"`
	// JobMemoryPeakBytes is the most device memory the job's own processes
	// held (others' processes excluded).
	JobMemoryPeakBytes *int64 `json:"job_memory_peak_bytes,omitempty"`

	PowerAvgWatts          *float64 `json:"power_avg_watts,omitempty"`
	PowerPeakWatts         *float64 `json:"power_peak_watts,omitempty"`
	EnergyJoules           *float64 `json:"energy_joules,omitempty"`
	TemperaturePeakCelsius *float64 `json:"temperature_peak_celsius,omitempty"`
	SMClockAvgHz           *float64 `json:"sm_clock_avg_hz,omitempty"`

	// Activity is what the GPU actually did, beyond utilisation (NVML GPM
	// on Hopper and later, AMD SMI GPU metrics); absent on a device that
	// cannot say, which MissingMetrics then names.
	Activity *GPUActivity `json:"activity,omitempty"`

	// MissingMetrics names what could not be read on this GPU.
	MissingMetrics []string `json:"missing_metrics,omitempty"`
}

// CPUUsage summarises CPU time. Cores are CPU-seconds per second.
type CPUUsage struct {
	CoreSeconds   *float64 `json:"core_seconds,omitempty"`
	AvgCores      *float64 `json:"avg_cores,omitempty"`
	P95Cores      *float64 `json:"p95_cores,omitempty"`
	PeakCores     *float64 `json:"peak_cores,omitempty"`
	ActiveSeconds *float64 `json:"active_seconds,omitempty"`
	// Efficiency is CoreSeconds / (allocated CPUs × elapsed seconds), 0–1.
	Efficiency *float64 `json:"efficiency,omitempty"`
}

// MemoryUsage summarises memory. "Used" is what the cgroup is charged
// (includes page cache; what the kernel compares with the limit); "RSS" is
// anonymous resident memory; "Shmem" is shared memory (tmpfs, /dev/shm,
// SysV/POSIX shm), charged to the cgroup but not part of RSS; "MappedFile"
// is file-backed memory mapped into the processes; the "working set" is
// Used less the inactive file cache the kernel reclaims first — what the
// job needs under its limit (docs/fields.md).
type MemoryUsage struct {
	AvgBytes            *int64 `json:"avg_bytes,omitempty"`
	P95Bytes            *int64 `json:"p95_bytes,omitempty"`
	PeakBytes           *int64 `json:"peak_bytes,omitempty"`
	RSSAvgBytes         *int64 `json:"rss_avg_bytes,omitempty"`
	RSSPeakBytes        *int64 `json:"rss_peak_bytes,omitempty"`
	ShmemAvgBytes       *int64 `json:"shmem_avg_bytes,omitempty"`
	ShmemPeakBytes      *int64 `json:"shmem_peak_bytes,omitempty"`
	MappedFileAvgBytes  *int64 `json:"mapped_file_avg_bytes,omitempty"`
	MappedFilePeakBytes *int64 `json:"mapped_file_peak_bytes,omitempty"`
	WorkingSetAvgBytes  *int64 `json:"working_set_avg_bytes,omitempty"`
	WorkingSetP95Bytes  *int64 `json:"working_set_p95_bytes,omitempty"`
	WorkingSetPeakBytes *int64 `json:"working_set_peak_bytes,omitempty"`
	LimitBytes          *int64 `json:"limit_bytes,omitempty"`
	// MaxNodePeakBytes is the largest PeakBytes of any one node.
	MaxNodePeakBytes *int64 `json:"max_node_peak_bytes,omitempty"`
	// MaxNodeWorkingSetPeakBytes is the largest WorkingSetPeakBytes of any
	// one node (job documents).
	MaxNodeWorkingSetPeakBytes *int64 `json:"max_node_working_set_peak_bytes,omitempty"`
	// Efficiency is the peak working set / limit on the fullest node, 0–1
	// (peak RSS / limit where the working set could not be read).
	Efficiency *float64 `json:"efficiency,omitempty"`
	// OOMKills is the number of the job's processes the kernel's OOM
	// killer killed (cgroup v2 memory.events oom_kill at the last sample;
	// job documents: the sum over nodes).
	OOMKills *int64 `json:"oom_kills,omitempty"`
	// PeakFromLimit is true when the job was killed for memory but the
	// sampled peak stayed below its limit (the kill came between two
	// samples and Slurm removed the cgroup with its high-water mark): the
	// limit, which the job reached, is then its peak.
	PeakFromLimit bool `json:"peak_from_limit,omitempty"`
}

// IOUsage is storage I/O by the job's processes.
type IOUsage struct {
	ReadBytes    *int64 `json:"read_bytes,omitempty"`
	WrittenBytes *int64 `json:"written_bytes,omitempty"`
}

// CountUsage summarises a count over the job's life.
type CountUsage struct {
	Avg  *float64 `json:"avg,omitempty"`
	Peak *int64   `json:"peak,omitempty"`
}

// Sampling says how the usage was measured.
type Sampling struct {
	IntervalSeconds float64 `json:"interval_seconds,omitempty"`
	Count           int64   `json:"count"`
	First           *Time   `json:"first,omitempty"`
	Last            *Time   `json:"last,omitempty"`
	// Gaps and GapSeconds: times no agent sampled the job between two
	// samples (the node agent died and a new one resumed the job).
	Gaps       int      `json:"gaps,omitempty"`
	GapSeconds *float64 `json:"gap_seconds,omitempty"`
}

// Ptr returns a pointer to v: documents use pointers for every value that
// may be absent.
func Ptr[T any](v T) *T { return &v }
