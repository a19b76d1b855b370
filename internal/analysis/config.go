package analysis

import (
	"errors"
	"fmt"
	"math"
	"path"
	"strings"
	"time"
)

// Config is the analysis configuration: the "analysis" section of a site's
// configuration file. Every option has a default (Default); Validate names
// each wrong option by its full key ("analysis.classes.gpu_efficient").
// Ratios are 0–1; sizes are GiB (2^30 bytes); durations are Go durations
// ("10m", "1h30m").
type Config struct {
	// ShortJob is the shortest run that is judged: a job that ran less is
	// classed short, its figures are computed, and no rule fires.
	ShortJob time.Duration `yaml:"short_job"`
	// EffectiveGPUThreshold is the average utilisation a GPU must exceed
	// to count as one of the job's effective GPUs.
	EffectiveGPUThreshold float64 `yaml:"effective_gpu_threshold"`
	// Classes are the class boundaries.
	Classes ClassConfig `yaml:"classes"`
	// Recommend says how the right-sized request is computed.
	Recommend RecommendConfig `yaml:"recommend"`
	// Rules are the root-cause rules: each can be switched off, has its
	// thresholds, and its lesson and documentation link.
	Rules RulesConfig `yaml:"rules"`
	// CustomRules are the site's own rules (custom.go).
	CustomRules []CustomRule `yaml:"custom_rules"`
}

// ClassConfig holds the lower bounds of the efficient, acceptable and
// inefficient classes; a score below the inefficient bound is wasted. A
// score equal to a bound is in the higher class.
type ClassConfig struct {
	// GPUEfficient, GPUAcceptable and GPUInefficient bound GPU jobs' score,
	// their job-wide average GPU utilisation (see GPUScoreSMActivity).
	GPUEfficient   float64 `yaml:"gpu_efficient"`
	GPUAcceptable  float64 `yaml:"gpu_acceptable"`
	GPUInefficient float64 `yaml:"gpu_inefficient"`
	// GPUScoreSMActivity: where every GPU in use measured its SM activity
	// (NVML GPM: Hopper and later), the GPU score is the lower of the
	// average utilisation and the mean SM activity, so that a GPU kept
	// "busy" by kernels that fill few of its SMs is not called efficient.
	// Documents without SM activity keep the utilisation score.
	GPUScoreSMActivity bool `yaml:"gpu_score_sm_activity"`
	// CPUEfficient, CPUAcceptable and CPUInefficient bound CPU jobs'
	// score: (1 − CPUMemoryWeight) × CPU efficiency + CPUMemoryWeight ×
	// memory efficiency (CPU efficiency alone when memory efficiency is
	// unknown or the weight is 0).
	CPUEfficient    float64 `yaml:"cpu_efficient"`
	CPUAcceptable   float64 `yaml:"cpu_acceptable"`
	CPUInefficient  float64 `yaml:"cpu_inefficient"`
	CPUMemoryWeight float64 `yaml:"cpu_memory_weight"`
}

// RecommendConfig says how the right-sized request is computed.
type RecommendConfig struct {
	// CPUHeadroom multiplies the CPUs the job used (95th percentile of
	// sampled cores); CPUSlack is then subtracted before rounding up, so
	// that sampling noise (1.05 cores for a serial program) does not round
	// up to a whole extra CPU.
	CPUHeadroom float64 `yaml:"cpu_headroom"`
	CPUSlack    float64 `yaml:"cpu_slack"`
	// MemoryHeadroom multiplies the memory peak per node, rounded up to a
	// size of the form 2^k or 1.5 × 2^k MiB, and never below MinMemoryGiB
	// per node.
	MemoryHeadroom float64 `yaml:"memory_headroom"`
	MinMemoryGiB   float64 `yaml:"min_memory_gib"`
	// TimeHeadroom multiplies the elapsed time, rounded up to a multiple
	// of TimeStep, and never below MinTime.
	TimeHeadroom float64       `yaml:"time_headroom"`
	TimeStep     time.Duration `yaml:"time_step"`
	MinTime      time.Duration `yaml:"min_time"`
}

// RuleText is what every rule has besides its thresholds: a switch, and
// the lesson and documentation link shown with its cause. Empty text keeps
// the built-in default; the *AMD variants are used on jobs whose GPUs are
// AMD's (the plain ones when the AMD variant is empty).
type RuleText struct {
	// Enabled switches the rule on (the default) or off.
	Enabled bool `yaml:"enabled"`
	// Lesson replaces the built-in lesson; LessonAMD replaces it for AMD
	// GPU jobs.
	Lesson    string `yaml:"lesson"`
	LessonAMD string `yaml:"lesson_amd"`
	// DocURL replaces the built-in documentation link; DocURLAMD replaces
	// it for AMD GPU jobs.
	DocURL    string `yaml:"doc_url"`
	DocURLAMD string `yaml:"doc_url_amd"`
}

// RulesConfig holds every rule's configuration, by cause id.
type RulesConfig struct {
	GPUsHeldIdle            GPUsHeldIdleRule            `yaml:"gpus_held_idle"`
	GPUUnused               GPUUnusedRule               `yaml:"gpu_unused"`
	ParallelismMismatch     ParallelismMismatchRule     `yaml:"parallelism_mismatch"`
	CPUBottleneck           CPUBottleneckRule           `yaml:"cpu_bottleneck"`
	UtilizationDrop         UtilizationDropRule         `yaml:"utilization_drop"`
	GPUInputPipelineBound   GPUInputPipelineBoundRule   `yaml:"gpu_input_pipeline_bound"`
	SmallJobLargeGPU        SmallJobLargeGPURule        `yaml:"small_job_large_gpu"`
	MemoryResidentLowUtil   MemoryResidentLowUtilRule   `yaml:"memory_resident_low_util"`
	OverScaled              OverScaledRule              `yaml:"over_scaled"`
	GPULaunchBound          GPULaunchBoundRule          `yaml:"gpu_launch_bound"`
	GPUMemoryBandwidthBound GPUMemoryBandwidthBoundRule `yaml:"gpu_memory_bandwidth_bound"`
	GPUTensorUnused         GPUTensorUnusedRule         `yaml:"gpu_tensor_unused"`
	TooManyCoresPerGPU      TooManyCoresPerGPURule      `yaml:"too_many_cores_per_gpu"`
	TooMuchMemoryPerGPU     TooMuchMemoryPerGPURule     `yaml:"too_much_memory_per_gpu"`
	CPUJobOnGPUPartition    CPUJobOnGPUPartitionRule    `yaml:"cpu_job_on_gpu_partition"`
	SerialJobManyCores      SerialJobManyCoresRule      `yaml:"serial_job_many_cores"`
	CPUOverrequest          CPUOverrequestRule          `yaml:"cpu_overrequest"`
	IOStall                 IOStallRule                 `yaml:"io_stall"`
	MemoryStall             MemoryStallRule             `yaml:"memory_stall"`
	CPUStall                CPUStallRule                `yaml:"cpu_stall"`
	OOMKilledChild          OOMKilledChildRule          `yaml:"oom_killed_child"`
	MemoryOverrequest       MemoryOverrequestRule       `yaml:"memory_overrequest"`
	WalltimeOverrequest     WalltimeOverrequestRule     `yaml:"walltime_overrequest"`
}

// GPUsHeldIdleRule (gpus_held_idle): at least MinGPUs of the GPUs the job
// held never had a process of the job on them (and were not busy).
type GPUsHeldIdleRule struct {
	RuleText `yaml:",inline"`
	MinGPUs  int64 `yaml:"min_gpus"`
}

// GPUUnusedRule (gpu_unused): every GPU the job's processes ran on stayed
// at or below MaxGPUUtilization on average, with at most MaxGPUMemory of
// its memory used.
type GPUUnusedRule struct {
	RuleText          `yaml:",inline"`
	MaxGPUUtilization float64 `yaml:"max_gpu_utilization"`
	MaxGPUMemory      float64 `yaml:"max_gpu_memory"`
}

// ParallelismMismatchRule (parallelism_mismatch): a job with at least
// MinGPUs GPUs of which at least one, and at most MaxEffectiveRatio of
// them, did the work. Where every GPU in use measured its SM activity, a
// GPU did the work when its SMs averaged above MinSMActivity (a kernel
// that waits, such as a collective, keeps utilisation up with idle SMs);
// otherwise, or when no GPU reached it, when its utilisation was above
// the effective threshold.
type ParallelismMismatchRule struct {
	RuleText          `yaml:",inline"`
	MinGPUs           int64   `yaml:"min_gpus"`
	MaxEffectiveRatio float64 `yaml:"max_effective_ratio"`
	MinSMActivity     float64 `yaml:"min_sm_activity"`
}

// CPUBottleneckRule (cpu_bottleneck): the GPUs in use averaged more than
// MinGPUUtilization and less than MaxGPUUtilization while the job's CPUs
// were at least MinCPUEfficiency busy.
type CPUBottleneckRule struct {
	RuleText          `yaml:",inline"`
	MinGPUUtilization float64 `yaml:"min_gpu_utilization"`
	MaxGPUUtilization float64 `yaml:"max_gpu_utilization"`
	MinCPUEfficiency  float64 `yaml:"min_cpu_efficiency"`
}

// UtilizationDropRule (utilization_drop): from a GPU timeline of at least
// MinPoints points, the first HeadFraction of the run averaged at least
// MinHeadUtilization and the last TailFraction at most MaxTailRatio of
// that.
type UtilizationDropRule struct {
	RuleText           `yaml:",inline"`
	MinPoints          int     `yaml:"min_points"`
	HeadFraction       float64 `yaml:"head_fraction"`
	TailFraction       float64 `yaml:"tail_fraction"`
	MinHeadUtilization float64 `yaml:"min_head_utilization"`
	MaxTailRatio       float64 `yaml:"max_tail_ratio"`
}

// SmallJobLargeGPURule (small_job_large_gpu): a job using at most MaxGPUs
// whole GPUs of at least MinGPUMemoryGiB each, with at most
// MaxMemoryFraction of their memory used and at most MaxGPUUtilization
// average utilisation.
type SmallJobLargeGPURule struct {
	RuleText          `yaml:",inline"`
	MaxGPUs           int64   `yaml:"max_gpus"`
	MinGPUMemoryGiB   float64 `yaml:"min_gpu_memory_gib"`
	MaxMemoryFraction float64 `yaml:"max_memory_fraction"`
	MaxGPUUtilization float64 `yaml:"max_gpu_utilization"`
}

// MemoryResidentLowUtilRule (memory_resident_low_util): the GPUs in use
// averaged less than MaxGPUUtilization while at least MinGPUMemory of one
// GPU's memory was in use.
type MemoryResidentLowUtilRule struct {
	RuleText          `yaml:",inline"`
	MaxGPUUtilization float64 `yaml:"max_gpu_utilization"`
	MinGPUMemory      float64 `yaml:"min_gpu_memory"`
}

// OverScaledRule (over_scaled): the GPUs in use averaged less than
// MaxGPUUtilization with no GPU using more than MaxGPUMemory of its memory.
type OverScaledRule struct {
	RuleText          `yaml:",inline"`
	MaxGPUUtilization float64 `yaml:"max_gpu_utilization"`
	MaxGPUMemory      float64 `yaml:"max_gpu_memory"`
}

// TooManyCoresPerGPURule (too_many_cores_per_gpu): more than
// MaxCoresPerGPU CPUs per GPU, with CPU efficiency below MaxCPUEfficiency.
type TooManyCoresPerGPURule struct {
	RuleText         `yaml:",inline"`
	MaxCoresPerGPU   float64 `yaml:"max_cores_per_gpu"`
	MaxCPUEfficiency float64 `yaml:"max_cpu_efficiency"`
}

// TooMuchMemoryPerGPURule (too_much_memory_per_gpu): more than
// MaxMemoryPerGPUGiB of memory requested per GPU, with memory efficiency
// below MaxMemoryEfficiency.
type TooMuchMemoryPerGPURule struct {
	RuleText            `yaml:",inline"`
	MaxMemoryPerGPUGiB  float64 `yaml:"max_memory_per_gpu_gib"`
	MaxMemoryEfficiency float64 `yaml:"max_memory_efficiency"`
}

// CPUJobOnGPUPartitionRule (cpu_job_on_gpu_partition): a job that held no
// GPU ran in a partition matching one of Partitions (exact names or
// path.Match patterns such as "gpu*"). With no partitions the rule never
// fires.
type CPUJobOnGPUPartitionRule struct {
	RuleText   `yaml:",inline"`
	Partitions []string `yaml:"partitions"`
}

// SerialJobManyCoresRule (serial_job_many_cores): a CPU job holding at
// least MinCPUs CPUs whose sampled peak was at most MaxPeakCores cores
// while averaging at least MinAvgCores.
type SerialJobManyCoresRule struct {
	RuleText     `yaml:",inline"`
	MinCPUs      int64   `yaml:"min_cpus"`
	MaxPeakCores float64 `yaml:"max_peak_cores"`
	MinAvgCores  float64 `yaml:"min_avg_cores"`
}

// CPUOverrequestRule (cpu_overrequest): a CPU job holding at least MinCPUs
// CPUs with CPU efficiency below MaxCPUEfficiency.
type CPUOverrequestRule struct {
	RuleText         `yaml:",inline"`
	MinCPUs          int64   `yaml:"min_cpus"`
	MaxCPUEfficiency float64 `yaml:"max_cpu_efficiency"`
}

// The pressure stall rules fire when the job's tasks stalled at least
// MinRatio of the time they were watched (pressure.*_ratio), judged only on
// at least MinWatched of watched time (pressure.watched_seconds, summed
// over nodes).

// IOStallRule (io_stall): the job's tasks waited for I/O
// (pressure.io_some_ratio) at least MinRatio of the watched time.
type IOStallRule struct {
	RuleText   `yaml:",inline"`
	MinRatio   float64       `yaml:"min_ratio"`
	MinWatched time.Duration `yaml:"min_watched"`
}

// MemoryStallRule (memory_stall): the job's tasks waited for memory
// (pressure.memory_some_ratio) at least MinRatio of the watched time, and
// its memory peak reached at least MinMemoryEfficiency of its request
// where that is known: below it the stalls do not come from the job's
// limit, and more memory would not help.
type MemoryStallRule struct {
	RuleText            `yaml:",inline"`
	MinRatio            float64       `yaml:"min_ratio"`
	MinWatched          time.Duration `yaml:"min_watched"`
	MinMemoryEfficiency float64       `yaml:"min_memory_efficiency"`
}

// CPUStallRule (cpu_stall): the job's runnable tasks waited for a CPU
// (pressure.cpu_some_ratio) at least MinRatio of the watched time.
type CPUStallRule struct {
	RuleText   `yaml:",inline"`
	MinRatio   float64       `yaml:"min_ratio"`
	MinWatched time.Duration `yaml:"min_watched"`
}

// OOMKilledChildRule (oom_killed_child): the kernel killed at least
// MinKills of the job's processes for memory (memory.oom_kills) and the
// job did not end OUT_OF_MEMORY: it went on without them.
type OOMKilledChildRule struct {
	RuleText `yaml:",inline"`
	MinKills int64 `yaml:"min_kills"`
}

// MemoryOverrequestRule (memory_overrequest): memory efficiency below
// MaxMemoryEfficiency on a request of at least MinRequestGiB (per node
// where the request is per node).
type MemoryOverrequestRule struct {
	RuleText            `yaml:",inline"`
	MaxMemoryEfficiency float64 `yaml:"max_memory_efficiency"`
	MinRequestGiB       float64 `yaml:"min_request_gib"`
}

// WalltimeOverrequestRule (walltime_overrequest): a completed job that
// used less than MaxWalltimeEfficiency of its time limit, where the
// right-sized limit would be at least MinUnused shorter.
type WalltimeOverrequestRule struct {
	RuleText              `yaml:",inline"`
	MaxWalltimeEfficiency float64       `yaml:"max_walltime_efficiency"`
	MinUnused             time.Duration `yaml:"min_unused"`
}

// The GPU activity rules read what the GPUs did beyond utilisation
// (gpus[].activity: NVML GPM on NVIDIA Hopper and later, AMD SMI's GPU
// metrics), per GPU in use; a GPU without the figures a rule needs is not
// judged by it (absent is never taken as zero), and a rule fires when at
// least one GPU shows its pattern.

// GPULaunchBoundRule (gpu_launch_bound): a GPU whose utilisation averaged
// at least MinGPUUtilization while its SM activity averaged at most
// MaxSMActivity: kernels ran most of the time but filled few SMs (too
// small, or launched one by one from the host).
type GPULaunchBoundRule struct {
	RuleText          `yaml:",inline"`
	MinGPUUtilization float64 `yaml:"min_gpu_utilization"`
	MaxSMActivity     float64 `yaml:"max_sm_activity"`
}

// GPUInputPipelineBoundRule (gpu_input_pipeline_bound): a GPU that
// received from the host over PCIe at least MinPCIeRxGBPerSecond on
// average, or at least MinPCIeLinkShare of PCIeLinkGBPerSecond where that
// is configured (0: not), while its utilisation stayed below
// MaxGPUUtilization and its SM activity, where measured, at most
// MaxSMActivity: host-to-device copies kept it waiting. Rates are GB/s
// (10^9 bytes per second, as PCIe bandwidth is quoted).
type GPUInputPipelineBoundRule struct {
	RuleText             `yaml:",inline"`
	MinPCIeRxGBPerSecond float64 `yaml:"min_pcie_rx_gb_per_second"`
	PCIeLinkGBPerSecond  float64 `yaml:"pcie_link_gb_per_second"`
	MinPCIeLinkShare     float64 `yaml:"min_pcie_link_share"`
	MaxGPUUtilization    float64 `yaml:"max_gpu_utilization"`
	MaxSMActivity        float64 `yaml:"max_sm_activity"`
}

// GPUMemoryBandwidthBoundRule (gpu_memory_bandwidth_bound): a GPU whose
// memory bandwidth use (DRAM activity) averaged at least MinDRAMActivity
// while its tensor cores and its FP32 pipes (and FP64 and FP16 pipes,
// where measured) each averaged at most MaxPipeActivity.
type GPUMemoryBandwidthBoundRule struct {
	RuleText        `yaml:",inline"`
	MinDRAMActivity float64 `yaml:"min_dram_activity"`
	MaxPipeActivity float64 `yaml:"max_pipe_activity"`
}

// GPUTensorUnusedRule (gpu_tensor_unused): a GPU whose SM activity
// averaged at least MinSMActivity and whose FP32 pipes at least
// MinFP32Activity (more than its FP64 pipes: not a double-precision code)
// while its tensor cores, measured, averaged at most MaxTensorActivity.
type GPUTensorUnusedRule struct {
	RuleText          `yaml:",inline"`
	MinSMActivity     float64 `yaml:"min_sm_activity"`
	MinFP32Activity   float64 `yaml:"min_fp32_activity"`
	MaxTensorActivity float64 `yaml:"max_tensor_activity"`
}

// Default returns the configuration with every default filled in.
func Default() Config {
	on := RuleText{Enabled: true}
	return Config{
		ShortJob:              10 * time.Minute,
		EffectiveGPUThreshold: 0.10,
		Classes: ClassConfig{
			GPUEfficient: 0.70, GPUAcceptable: 0.40, GPUInefficient: 0.15,
			CPUEfficient: 0.70, CPUAcceptable: 0.40, CPUInefficient: 0.15,
			CPUMemoryWeight:    0.25,
			GPUScoreSMActivity: true,
		},
		Recommend: RecommendConfig{
			CPUHeadroom: 1.10, CPUSlack: 0.25,
			MemoryHeadroom: 1.25, MinMemoryGiB: 1,
			TimeHeadroom: 1.5, TimeStep: 15 * time.Minute, MinTime: 30 * time.Minute,
		},
		Rules: RulesConfig{
			GPUsHeldIdle:          GPUsHeldIdleRule{RuleText: on, MinGPUs: 1},
			GPUUnused:             GPUUnusedRule{RuleText: on, MaxGPUUtilization: 0.02, MaxGPUMemory: 0.25},
			ParallelismMismatch:   ParallelismMismatchRule{RuleText: on, MinGPUs: 2, MaxEffectiveRatio: 0.5, MinSMActivity: 0.05},
			CPUBottleneck:         CPUBottleneckRule{RuleText: on, MinGPUUtilization: 0.02, MaxGPUUtilization: 0.50, MinCPUEfficiency: 0.80},
			UtilizationDrop:       UtilizationDropRule{RuleText: on, MinPoints: 8, HeadFraction: 0.25, TailFraction: 0.5, MinHeadUtilization: 0.5, MaxTailRatio: 0.5},
			SmallJobLargeGPU:      SmallJobLargeGPURule{RuleText: on, MaxGPUs: 1, MinGPUMemoryGiB: 40, MaxMemoryFraction: 0.125, MaxGPUUtilization: 0.15},
			MemoryResidentLowUtil: MemoryResidentLowUtilRule{RuleText: on, MaxGPUUtilization: 0.15, MinGPUMemory: 0.5},
			OverScaled:            OverScaledRule{RuleText: on, MaxGPUUtilization: 0.40, MaxGPUMemory: 0.25},
			TooManyCoresPerGPU:    TooManyCoresPerGPURule{RuleText: on, MaxCoresPerGPU: 16, MaxCPUEfficiency: 0.5},
			TooMuchMemoryPerGPU:   TooMuchMemoryPerGPURule{RuleText: on, MaxMemoryPerGPUGiB: 128, MaxMemoryEfficiency: 0.5},
			CPUJobOnGPUPartition:  CPUJobOnGPUPartitionRule{RuleText: on},
			SerialJobManyCores:    SerialJobManyCoresRule{RuleText: on, MinCPUs: 2, MaxPeakCores: 1.25, MinAvgCores: 0.5},
			CPUOverrequest:        CPUOverrequestRule{RuleText: on, MinCPUs: 2, MaxCPUEfficiency: 0.5},
			IOStall:               IOStallRule{RuleText: on, MinRatio: 0.2, MinWatched: 10 * time.Minute},
			MemoryStall:           MemoryStallRule{RuleText: on, MinRatio: 0.1, MinWatched: 10 * time.Minute, MinMemoryEfficiency: 0.8},
			CPUStall:              CPUStallRule{RuleText: on, MinRatio: 0.25, MinWatched: 10 * time.Minute},
			OOMKilledChild:        OOMKilledChildRule{RuleText: on, MinKills: 1},
			MemoryOverrequest:     MemoryOverrequestRule{RuleText: on, MaxMemoryEfficiency: 0.25, MinRequestGiB: 2},
			WalltimeOverrequest:   WalltimeOverrequestRule{RuleText: on, MaxWalltimeEfficiency: 0.30, MinUnused: time.Hour},

			GPUInputPipelineBound: GPUInputPipelineBoundRule{RuleText: on, MinPCIeRxGBPerSecond: 4, MinPCIeLinkShare: 0.4,
				MaxGPUUtilization: 0.7, MaxSMActivity: 0.5},
			GPULaunchBound:          GPULaunchBoundRule{RuleText: on, MinGPUUtilization: 0.7, MaxSMActivity: 0.3},
			GPUMemoryBandwidthBound: GPUMemoryBandwidthBoundRule{RuleText: on, MinDRAMActivity: 0.6, MaxPipeActivity: 0.3},
			GPUTensorUnused:         GPUTensorUnusedRule{RuleText: on, MinSMActivity: 0.4, MinFP32Activity: 0.2, MaxTensorActivity: 0.05},
		},
	}
}

// ruleTexts lists every rule's common configuration with its cause id, in
// a fixed order (used by Validate and for lesson overrides).
func (c *Config) ruleTexts() []struct {
	id string
	t  *RuleText
} {
	r := &c.Rules
	return []struct {
		id string
		t  *RuleText
	}{
		{CauseGPUsHeldIdle, &r.GPUsHeldIdle.RuleText},
		{CauseGPUUnused, &r.GPUUnused.RuleText},
		{CauseParallelismMismatch, &r.ParallelismMismatch.RuleText},
		{CauseCPUBottleneck, &r.CPUBottleneck.RuleText},
		{CauseUtilizationDrop, &r.UtilizationDrop.RuleText},
		{CauseGPUInputPipelineBound, &r.GPUInputPipelineBound.RuleText},
		{CauseSmallJobLargeGPU, &r.SmallJobLargeGPU.RuleText},
		{CauseMemoryResidentLowUtil, &r.MemoryResidentLowUtil.RuleText},
		{CauseOverScaled, &r.OverScaled.RuleText},
		{CauseGPULaunchBound, &r.GPULaunchBound.RuleText},
		{CauseGPUMemoryBandwidthBound, &r.GPUMemoryBandwidthBound.RuleText},
		{CauseGPUTensorUnused, &r.GPUTensorUnused.RuleText},
		{CauseTooManyCoresPerGPU, &r.TooManyCoresPerGPU.RuleText},
		{CauseTooMuchMemoryPerGPU, &r.TooMuchMemoryPerGPU.RuleText},
		{CauseCPUJobOnGPUPartition, &r.CPUJobOnGPUPartition.RuleText},
		{CauseSerialJobManyCores, &r.SerialJobManyCores.RuleText},
		{CauseCPUOverrequest, &r.CPUOverrequest.RuleText},
		{CauseIOStall, &r.IOStall.RuleText},
		{CauseMemoryStall, &r.MemoryStall.RuleText},
		{CauseCPUStall, &r.CPUStall.RuleText},
		{CauseOOMKilledChild, &r.OOMKilledChild.RuleText},
		{CauseMemoryOverrequest, &r.MemoryOverrequest.RuleText},
		{CauseWalltimeOverrequest, &r.WalltimeOverrequest.RuleText},
	}
}

// ruleText returns the common configuration of the rule with cause id.
func (c *Config) ruleText(id string) RuleText {
	for _, rt := range c.ruleTexts() {
		if rt.id == id {
			return *rt.t
		}
	}
	return RuleText{}
}

// maxLessonLen bounds a configured lesson: lessons are 2–3 sentences.
const maxLessonLen = 2000

// Validate checks every option; each problem is reported with the
// option's full key, "analysis.<section>.<option>", and all problems are
// joined into one error.
func (c *Config) Validate() error {
	var errs []error
	bad := func(option, format string, args ...any) {
		errs = append(errs, fmt.Errorf("analysis.%s: "+format, append([]any{option}, args...)...))
	}
	// ratio checks a 0–1 option; open excludes 0.
	ratio := func(option string, v float64, open bool) {
		switch {
		case math.IsNaN(v) || v < 0 || v > 1:
			bad(option, "%v: want a ratio between 0 and 1", v)
		case open && v == 0:
			bad(option, "%v: must be above 0", v)
		}
	}
	positive := func(option string, v float64) {
		if !(v > 0) || math.IsInf(v, 1) {
			bad(option, "%v: must be a positive number", v)
		}
	}
	atLeastOne := func(option string, v float64) {
		if !(v >= 1) || math.IsInf(v, 1) {
			bad(option, "%v: must be a number of at least 1", v)
		}
	}

	if c.ShortJob < 0 || c.ShortJob > 24*time.Hour {
		bad("short_job", "%s is outside 0..24h", c.ShortJob)
	}
	validateCustom(c.CustomRules, bad)
	if !(c.EffectiveGPUThreshold > 0 && c.EffectiveGPUThreshold < 1) {
		bad("effective_gpu_threshold", "%v: want a utilisation ratio between 0 and 1 (e.g. 0.1)", c.EffectiveGPUThreshold)
	}

	cl := c.Classes
	for _, b := range []struct {
		kind                               string
		efficient, acceptable, inefficient float64
	}{{"gpu", cl.GPUEfficient, cl.GPUAcceptable, cl.GPUInefficient}, {"cpu", cl.CPUEfficient, cl.CPUAcceptable, cl.CPUInefficient}} {
		ratio("classes."+b.kind+"_efficient", b.efficient, true)
		ratio("classes."+b.kind+"_acceptable", b.acceptable, true)
		ratio("classes."+b.kind+"_inefficient", b.inefficient, true)
		if !(b.efficient > b.acceptable) {
			bad("classes."+b.kind+"_efficient", "%v must be above %s_acceptable (%v)", b.efficient, b.kind, b.acceptable)
		}
		if !(b.acceptable > b.inefficient) {
			bad("classes."+b.kind+"_acceptable", "%v must be above %s_inefficient (%v)", b.acceptable, b.kind, b.inefficient)
		}
	}
	ratio("classes.cpu_memory_weight", cl.CPUMemoryWeight, false)
	if cl.CPUMemoryWeight > 0.5 {
		bad("classes.cpu_memory_weight", "%v: at most 0.5, so that the class stays a CPU class", cl.CPUMemoryWeight)
	}

	rc := c.Recommend
	atLeastOne("recommend.cpu_headroom", rc.CPUHeadroom)
	if math.IsNaN(rc.CPUSlack) || rc.CPUSlack < 0 || rc.CPUSlack >= 1 {
		bad("recommend.cpu_slack", "%v is outside [0, 1)", rc.CPUSlack)
	}
	atLeastOne("recommend.memory_headroom", rc.MemoryHeadroom)
	positive("recommend.min_memory_gib", rc.MinMemoryGiB)
	if rc.MinMemoryGiB > 1<<20 {
		bad("recommend.min_memory_gib", "%v is above 1048576 (1 PiB)", rc.MinMemoryGiB)
	}
	atLeastOne("recommend.time_headroom", rc.TimeHeadroom)
	if rc.TimeStep < time.Minute || rc.TimeStep > 24*time.Hour {
		bad("recommend.time_step", "%s is outside 1m..24h", rc.TimeStep)
	}
	if rc.MinTime < time.Minute || rc.MinTime > 30*24*time.Hour {
		bad("recommend.min_time", "%s is outside 1m..720h", rc.MinTime)
	}

	r := c.Rules
	minCount := func(option string, v int64) {
		if v < 1 {
			bad(option, "%d must be at least 1", v)
		}
	}
	minCount("rules.gpus_held_idle.min_gpus", r.GPUsHeldIdle.MinGPUs)
	ratio("rules.gpu_unused.max_gpu_utilization", r.GPUUnused.MaxGPUUtilization, false)
	ratio("rules.gpu_unused.max_gpu_memory", r.GPUUnused.MaxGPUMemory, true)
	if r.ParallelismMismatch.MinGPUs < 2 {
		bad("rules.parallelism_mismatch.min_gpus", "%d must be at least 2", r.ParallelismMismatch.MinGPUs)
	}
	ratio("rules.parallelism_mismatch.max_effective_ratio", r.ParallelismMismatch.MaxEffectiveRatio, true)
	if r.ParallelismMismatch.MaxEffectiveRatio >= 1 {
		bad("rules.parallelism_mismatch.max_effective_ratio", "%v must be below 1", r.ParallelismMismatch.MaxEffectiveRatio)
	}
	ratio("rules.parallelism_mismatch.min_sm_activity", r.ParallelismMismatch.MinSMActivity, true)
	if r.ParallelismMismatch.MinSMActivity >= 1 {
		bad("rules.parallelism_mismatch.min_sm_activity", "%v must be below 1", r.ParallelismMismatch.MinSMActivity)
	}
	ratio("rules.cpu_bottleneck.min_gpu_utilization", r.CPUBottleneck.MinGPUUtilization, false)
	ratio("rules.cpu_bottleneck.max_gpu_utilization", r.CPUBottleneck.MaxGPUUtilization, true)
	if r.CPUBottleneck.MinGPUUtilization >= r.CPUBottleneck.MaxGPUUtilization {
		bad("rules.cpu_bottleneck.min_gpu_utilization", "%v must be below max_gpu_utilization (%v)", r.CPUBottleneck.MinGPUUtilization, r.CPUBottleneck.MaxGPUUtilization)
	}
	ratio("rules.cpu_bottleneck.min_cpu_efficiency", r.CPUBottleneck.MinCPUEfficiency, true)
	ud := r.UtilizationDrop
	if ud.MinPoints < 2 || ud.MinPoints > 100000 {
		bad("rules.utilization_drop.min_points", "%d is outside 2..100000", ud.MinPoints)
	}
	ratio("rules.utilization_drop.head_fraction", ud.HeadFraction, true)
	ratio("rules.utilization_drop.tail_fraction", ud.TailFraction, true)
	if ud.HeadFraction+ud.TailFraction > 1 {
		bad("rules.utilization_drop.tail_fraction", "%v plus head_fraction (%v) must not exceed 1", ud.TailFraction, ud.HeadFraction)
	}
	ratio("rules.utilization_drop.min_head_utilization", ud.MinHeadUtilization, true)
	ratio("rules.utilization_drop.max_tail_ratio", ud.MaxTailRatio, false)
	if ud.MaxTailRatio >= 1 {
		bad("rules.utilization_drop.max_tail_ratio", "%v must be below 1", ud.MaxTailRatio)
	}
	minCount("rules.small_job_large_gpu.max_gpus", r.SmallJobLargeGPU.MaxGPUs)
	positive("rules.small_job_large_gpu.min_gpu_memory_gib", r.SmallJobLargeGPU.MinGPUMemoryGiB)
	ratio("rules.small_job_large_gpu.max_memory_fraction", r.SmallJobLargeGPU.MaxMemoryFraction, true)
	ratio("rules.small_job_large_gpu.max_gpu_utilization", r.SmallJobLargeGPU.MaxGPUUtilization, true)
	ratio("rules.memory_resident_low_util.max_gpu_utilization", r.MemoryResidentLowUtil.MaxGPUUtilization, true)
	ratio("rules.memory_resident_low_util.min_gpu_memory", r.MemoryResidentLowUtil.MinGPUMemory, true)
	ratio("rules.over_scaled.max_gpu_utilization", r.OverScaled.MaxGPUUtilization, true)
	ratio("rules.over_scaled.max_gpu_memory", r.OverScaled.MaxGPUMemory, true)
	atLeastOne("rules.too_many_cores_per_gpu.max_cores_per_gpu", r.TooManyCoresPerGPU.MaxCoresPerGPU)
	ratio("rules.too_many_cores_per_gpu.max_cpu_efficiency", r.TooManyCoresPerGPU.MaxCPUEfficiency, true)
	positive("rules.too_much_memory_per_gpu.max_memory_per_gpu_gib", r.TooMuchMemoryPerGPU.MaxMemoryPerGPUGiB)
	ratio("rules.too_much_memory_per_gpu.max_memory_efficiency", r.TooMuchMemoryPerGPU.MaxMemoryEfficiency, true)
	for i, p := range r.CPUJobOnGPUPartition.Partitions {
		opt := fmt.Sprintf("rules.cpu_job_on_gpu_partition.partitions[%d]", i)
		if strings.TrimSpace(p) == "" {
			bad(opt, "must not be empty")
		} else if _, err := path.Match(p, ""); err != nil {
			bad(opt, "%q: not a valid pattern (use a name, or * ? [..] as in shell globs)", p)
		}
	}
	if r.SerialJobManyCores.MinCPUs < 2 {
		bad("rules.serial_job_many_cores.min_cpus", "%d must be at least 2", r.SerialJobManyCores.MinCPUs)
	}
	if !(r.SerialJobManyCores.MaxPeakCores >= 1 && r.SerialJobManyCores.MaxPeakCores < 2) {
		bad("rules.serial_job_many_cores.max_peak_cores", "%v is outside [1, 2)", r.SerialJobManyCores.MaxPeakCores)
	}
	if math.IsNaN(r.SerialJobManyCores.MinAvgCores) || r.SerialJobManyCores.MinAvgCores < 0 || r.SerialJobManyCores.MinAvgCores > 1 {
		bad("rules.serial_job_many_cores.min_avg_cores", "%v is outside 0..1", r.SerialJobManyCores.MinAvgCores)
	}
	if r.CPUOverrequest.MinCPUs < 2 {
		bad("rules.cpu_overrequest.min_cpus", "%d must be at least 2", r.CPUOverrequest.MinCPUs)
	}
	ratio("rules.cpu_overrequest.max_cpu_efficiency", r.CPUOverrequest.MaxCPUEfficiency, true)
	for _, s := range []struct {
		id       string
		minRatio float64
		watched  time.Duration
	}{
		{CauseIOStall, r.IOStall.MinRatio, r.IOStall.MinWatched},
		{CauseMemoryStall, r.MemoryStall.MinRatio, r.MemoryStall.MinWatched},
		{CauseCPUStall, r.CPUStall.MinRatio, r.CPUStall.MinWatched},
	} {
		ratio("rules."+s.id+".min_ratio", s.minRatio, true)
		if s.watched < 0 || s.watched > 30*24*time.Hour {
			bad("rules."+s.id+".min_watched", "%s is outside 0..720h", s.watched)
		}
	}
	ratio("rules.memory_stall.min_memory_efficiency", r.MemoryStall.MinMemoryEfficiency, false)
	minCount("rules.oom_killed_child.min_kills", r.OOMKilledChild.MinKills)
	ratio("rules.memory_overrequest.max_memory_efficiency", r.MemoryOverrequest.MaxMemoryEfficiency, true)
	if math.IsNaN(r.MemoryOverrequest.MinRequestGiB) || r.MemoryOverrequest.MinRequestGiB < 0 || math.IsInf(r.MemoryOverrequest.MinRequestGiB, 1) {
		bad("rules.memory_overrequest.min_request_gib", "%v must be 0 or more", r.MemoryOverrequest.MinRequestGiB)
	}
	ratio("rules.walltime_overrequest.max_walltime_efficiency", r.WalltimeOverrequest.MaxWalltimeEfficiency, true)
	if r.WalltimeOverrequest.MinUnused < 0 {
		bad("rules.walltime_overrequest.min_unused", "%s must not be negative", r.WalltimeOverrequest.MinUnused)
	}

	ip := r.GPUInputPipelineBound
	// rate checks a GB/s option: up to 10 TB/s, beyond any PCIe link.
	rate := func(option string, v float64, zeroOK bool) {
		switch {
		case zeroOK && v == 0:
		case !(v > 0) || v > 10000:
			bad(option, "%v: want GB/s (10^9 bytes per second) above 0 and at most 10000", v)
		}
	}
	rate("rules.gpu_input_pipeline_bound.min_pcie_rx_gb_per_second", ip.MinPCIeRxGBPerSecond, false)
	rate("rules.gpu_input_pipeline_bound.pcie_link_gb_per_second", ip.PCIeLinkGBPerSecond, true)
	ratio("rules.gpu_input_pipeline_bound.min_pcie_link_share", ip.MinPCIeLinkShare, true)
	ratio("rules.gpu_input_pipeline_bound.max_gpu_utilization", ip.MaxGPUUtilization, true)
	ratio("rules.gpu_input_pipeline_bound.max_sm_activity", ip.MaxSMActivity, true)
	lb := r.GPULaunchBound
	ratio("rules.gpu_launch_bound.min_gpu_utilization", lb.MinGPUUtilization, true)
	ratio("rules.gpu_launch_bound.max_sm_activity", lb.MaxSMActivity, true)
	if lb.MaxSMActivity >= lb.MinGPUUtilization {
		bad("rules.gpu_launch_bound.max_sm_activity", "%v must be below min_gpu_utilization (%v)", lb.MaxSMActivity, lb.MinGPUUtilization)
	}
	ratio("rules.gpu_memory_bandwidth_bound.min_dram_activity", r.GPUMemoryBandwidthBound.MinDRAMActivity, true)
	ratio("rules.gpu_memory_bandwidth_bound.max_pipe_activity", r.GPUMemoryBandwidthBound.MaxPipeActivity, true)
	tu := r.GPUTensorUnused
	ratio("rules.gpu_tensor_unused.min_sm_activity", tu.MinSMActivity, true)
	ratio("rules.gpu_tensor_unused.min_fp32_activity", tu.MinFP32Activity, true)
	ratio("rules.gpu_tensor_unused.max_tensor_activity", tu.MaxTensorActivity, false)
	if tu.MaxTensorActivity >= tu.MinFP32Activity {
		bad("rules.gpu_tensor_unused.max_tensor_activity", "%v must be below min_fp32_activity (%v)", tu.MaxTensorActivity, tu.MinFP32Activity)
	}

	for _, rt := range c.ruleTexts() {
		opt := "rules." + rt.id
		for _, l := range []struct{ key, v string }{{"lesson", rt.t.Lesson}, {"lesson_amd", rt.t.LessonAMD}} {
			if len(l.v) > maxLessonLen {
				bad(opt+"."+l.key, "%d characters: at most %d (2–3 sentences)", len(l.v), maxLessonLen)
			}
		}
		for _, u := range []struct{ key, v string }{{"doc_url", rt.t.DocURL}, {"doc_url_amd", rt.t.DocURLAMD}} {
			if u.v != "" && !validURL(u.v) {
				bad(opt+"."+u.key, "%q: want an http:// or https:// URL", u.v)
			}
		}
	}
	return errors.Join(errs...)
}

// validURL accepts an http or https URL with a host and no spaces.
func validURL(u string) bool {
	rest, ok := strings.CutPrefix(u, "https://")
	if !ok {
		rest, ok = strings.CutPrefix(u, "http://")
	}
	return ok && rest != "" && !strings.HasPrefix(rest, "/") && !strings.ContainsAny(u, " \t\r\n\"<>")
}
