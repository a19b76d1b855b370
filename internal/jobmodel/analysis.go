package jobmodel

// Efficiency classes of an analysed job (Analysis.Class).
const (
	ClassEfficient   = "efficient"
	ClassAcceptable  = "acceptable"
	ClassInefficient = "inefficient"
	ClassWasted      = "wasted"
	// ClassShort: the job ran too briefly to be judged.
	ClassShort = "short"
	// ClassUnknown: the figures the class rests on are missing.
	ClassUnknown = "unknown"
)

// Kinds of analysed job (Analysis.Kind).
const (
	KindGPU = "gpu"
	KindCPU = "cpu"
)

// Analysis is the post-job analysis of a job, stored in its job document
// (field "analysis") and in the results index. It is advisory: nothing in
// it is applied to the job or to the user's next jobs.
type Analysis struct {
	// Version is the analysis rules' version; it changes when a class or
	// cause would be computed differently.
	Version int `json:"version"`
	// AnalyzedAt is when the analysis ran.
	AnalyzedAt *Time `json:"analyzed_at,omitempty"`
	// Kind is gpu for a job that held GPUs, cpu otherwise.
	Kind string `json:"kind"`
	// Class is efficient, acceptable, inefficient, wasted, short or unknown.
	Class string `json:"class"`
	// Score is the 0–1 figure the class rests on: average GPU utilisation
	// for GPU jobs (the lower of it and the mean SM activity where the
	// GPUs measured that), the CPU scheme's combined score for CPU jobs.
	Score *float64 `json:"score,omitempty"`
	// Vendor is the GPUs' maker (nvidia, amd) for the lessons' wording.
	Vendor string `json:"vendor,omitempty"`

	Figures        AnalysisFigures `json:"figures"`
	Causes         []Cause         `json:"causes,omitempty"`
	Recommendation Recommendation  `json:"recommendation"`
	Savings        Savings         `json:"savings"`
	// MissingMetrics names what the analysis needed and did not have
	// (a partial analysis says so rather than guessing).
	MissingMetrics []string `json:"missing_metrics,omitempty"`
}

// AnalysisFigures are the efficiency figures of a job. Ratios are 0–1.
type AnalysisFigures struct {
	GPUUtilization *float64 `json:"gpu_utilization,omitempty"`
	// GPUSMActivity is the mean SM activity of the job's GPUs (held-idle
	// ones included), where every GPU in use measured it (NVML GPM, or
	// the summary's figure without per-GPU entries); absent otherwise.
	// Where present the GPU score is the lower of it and GPUUtilization
	// (unless the site turned that off).
	GPUSMActivity      *float64 `json:"gpu_sm_activity,omitempty"`
	GPUs               *int64   `json:"gpus,omitempty"`
	EffectiveGPUs      *int64   `json:"effective_gpus,omitempty"`
	EffectiveGPURatio  *float64 `json:"effective_gpu_ratio,omitempty"`
	CPUEfficiency      *float64 `json:"cpu_efficiency,omitempty"`
	MemoryEfficiency   *float64 `json:"memory_efficiency,omitempty"`
	WalltimeEfficiency *float64 `json:"walltime_efficiency,omitempty"`
	GPUHours           *float64 `json:"gpu_hours,omitempty"`
	GPUHoursWasted     *float64 `json:"gpu_hours_wasted,omitempty"`
	CoreHours          *float64 `json:"core_hours,omitempty"`
	CoreHoursWasted    *float64 `json:"core_hours_wasted,omitempty"`
	// MemoryBasis says which document fields MemoryEfficiency was
	// computed from: per_node_working_set
	// (memory.max_node_working_set_peak_bytes over
	// requested.memory_per_node_bytes), total_working_set
	// (memory.working_set_peak_bytes over the total request), and for
	// documents without a working set per_node (memory.max_node_peak_bytes
	// over requested.memory_per_node_bytes), total (memory.peak_bytes over
	// the total request) or total_rss (memory.rss_peak_bytes over the total
	// request). Absent when MemoryEfficiency is.
	MemoryBasis string `json:"memory_basis,omitempty"`
}

// Cause is one likely reason a job used less than it asked for, found by a
// deterministic rule.
type Cause struct {
	// ID names the rule (over_scaled, cpu_bottleneck, ...).
	ID string `json:"id"`
	// Title is a short neutral sentence.
	Title string `json:"title"`
	// Confidence is the rule's confidence, 0–1.
	Confidence float64 `json:"confidence"`
	// Evidence states the figures that triggered the rule.
	Evidence string `json:"evidence"`
	// Lesson is 2–3 sentences on what to do about it; DocURL a page to
	// read (both configurable per site).
	Lesson string `json:"lesson,omitempty"`
	DocURL string `json:"doc_url,omitempty"`
}

// Recommendation is the right-sized request, advisory only.
type Recommendation struct {
	// GPUs, CPUs and MemoryBytes are totals over the job's nodes, like
	// requested.*; each is set only when it is below the request.
	GPUs        *int64 `json:"gpus,omitempty"`
	CPUs        *int64 `json:"cpus,omitempty"`
	MemoryBytes *int64 `json:"memory_bytes,omitempty"`
	// MemoryPerNodeBytes is MemoryBytes per node: what --mem asks for.
	MemoryPerNodeBytes *int64 `json:"memory_per_node_bytes,omitempty"`
	TimeLimitSeconds   *int64 `json:"time_limit_seconds,omitempty"`
	// Changes are the #SBATCH options to change, each with its reason.
	Changes []SbatchChange `json:"changes,omitempty"`
}

// SbatchChange is one #SBATCH option to change ("--gpus=8" -> "--gpus=2").
type SbatchChange struct {
	Option string `json:"option"`
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"`
}

// Savings are what the recommendation would have freed for others on this
// job.
type Savings struct {
	GPUHours       *float64 `json:"gpu_hours,omitempty"`
	CoreHours      *float64 `json:"core_hours,omitempty"`
	MemoryGiBHours *float64 `json:"memory_gib_hours,omitempty"`
}
