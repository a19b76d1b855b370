package analysis

import (
	"bytes"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestDefaultIsValid(t *testing.T) {
	t.Parallel()
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ShortJob != 10*time.Minute || c.EffectiveGPUThreshold != 0.10 || c.Classes.GPUEfficient != 0.70 ||
		c.Classes.GPUAcceptable != 0.40 || c.Classes.GPUInefficient != 0.15 || c.Rules.MemoryOverrequest.MinRequestGiB != 2 {
		t.Errorf("defaults changed: %+v", c)
	}
	for _, rt := range c.ruleTexts() {
		if !rt.t.Enabled {
			t.Errorf("%s is off by default", rt.id)
		}
	}
}

func TestValidateNamesTheOption(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		edit   func(*Config)
		option string
	}{
		{func(c *Config) { c.ShortJob = -time.Second }, "analysis.short_job: "},
		{func(c *Config) { c.ShortJob = 48 * time.Hour }, "analysis.short_job: "},
		{func(c *Config) { c.EffectiveGPUThreshold = 0 }, "analysis.effective_gpu_threshold: "},
		{func(c *Config) { c.EffectiveGPUThreshold = 10 }, "analysis.effective_gpu_threshold: "},
		{func(c *Config) { c.Classes.GPUEfficient = 1.2 }, "analysis.classes.gpu_efficient: "},
		{func(c *Config) { c.Classes.GPUEfficient = 0.3 }, "analysis.classes.gpu_efficient: 0.3 must be above gpu_acceptable"},
		{func(c *Config) { c.Classes.GPUAcceptable = 0.1 }, "analysis.classes.gpu_acceptable: 0.1 must be above gpu_inefficient"},
		{func(c *Config) { c.Classes.GPUInefficient = -0.1 }, "analysis.classes.gpu_inefficient: "},
		{func(c *Config) { c.Classes.CPUEfficient = 0 }, "analysis.classes.cpu_efficient: "},
		{func(c *Config) { c.Classes.CPUAcceptable = 0.9 }, "analysis.classes.cpu_efficient: "},
		{func(c *Config) { c.Classes.CPUInefficient = 0.5 }, "analysis.classes.cpu_acceptable: "},
		{func(c *Config) { c.Classes.CPUMemoryWeight = 0.6 }, "analysis.classes.cpu_memory_weight: "},
		{func(c *Config) { c.Classes.CPUMemoryWeight = -1 }, "analysis.classes.cpu_memory_weight: "},
		{func(c *Config) { c.Recommend.CPUHeadroom = 0.5 }, "analysis.recommend.cpu_headroom: "},
		{func(c *Config) { c.Recommend.CPUSlack = 1 }, "analysis.recommend.cpu_slack: "},
		{func(c *Config) { c.Recommend.MemoryHeadroom = 0.9 }, "analysis.recommend.memory_headroom: "},
		{func(c *Config) { c.Recommend.MinMemoryGiB = 0 }, "analysis.recommend.min_memory_gib: "},
		{func(c *Config) { c.Recommend.MinMemoryGiB = 1e9 }, "analysis.recommend.min_memory_gib: "},
		{func(c *Config) { c.Recommend.TimeHeadroom = 0 }, "analysis.recommend.time_headroom: "},
		{func(c *Config) { c.Recommend.TimeStep = time.Second }, "analysis.recommend.time_step: "},
		{func(c *Config) { c.Recommend.MinTime = 0 }, "analysis.recommend.min_time: "},
		{func(c *Config) { c.Rules.GPUsHeldIdle.MinGPUs = 0 }, "analysis.rules.gpus_held_idle.min_gpus: "},
		{func(c *Config) { c.Rules.GPUUnused.MaxGPUUtilization = 2 }, "analysis.rules.gpu_unused.max_gpu_utilization: "},
		{func(c *Config) { c.Rules.GPUUnused.MaxGPUMemory = 0 }, "analysis.rules.gpu_unused.max_gpu_memory: "},
		{func(c *Config) { c.Rules.ParallelismMismatch.MinGPUs = 1 }, "analysis.rules.parallelism_mismatch.min_gpus: "},
		{func(c *Config) { c.Rules.ParallelismMismatch.MaxEffectiveRatio = 1 }, "analysis.rules.parallelism_mismatch.max_effective_ratio: "},
		{func(c *Config) { c.Rules.CPUBottleneck.MinGPUUtilization = 0.6 }, "analysis.rules.cpu_bottleneck.min_gpu_utilization: "},
		{func(c *Config) { c.Rules.CPUBottleneck.MaxGPUUtilization = 0 }, "analysis.rules.cpu_bottleneck.max_gpu_utilization: "},
		{func(c *Config) { c.Rules.CPUBottleneck.MinCPUEfficiency = 1.5 }, "analysis.rules.cpu_bottleneck.min_cpu_efficiency: "},
		{func(c *Config) { c.Rules.UtilizationDrop.MinPoints = 1 }, "analysis.rules.utilization_drop.min_points: "},
		{func(c *Config) { c.Rules.UtilizationDrop.HeadFraction = 0 }, "analysis.rules.utilization_drop.head_fraction: "},
		{func(c *Config) { c.Rules.UtilizationDrop.TailFraction = 0.9 }, "analysis.rules.utilization_drop.tail_fraction: "},
		{func(c *Config) { c.Rules.UtilizationDrop.MinHeadUtilization = 0 }, "analysis.rules.utilization_drop.min_head_utilization: "},
		{func(c *Config) { c.Rules.UtilizationDrop.MaxTailRatio = 1 }, "analysis.rules.utilization_drop.max_tail_ratio: "},
		{func(c *Config) { c.Rules.SmallJobLargeGPU.MaxGPUs = 0 }, "analysis.rules.small_job_large_gpu.max_gpus: "},
		{func(c *Config) { c.Rules.SmallJobLargeGPU.MinGPUMemoryGiB = 0 }, "analysis.rules.small_job_large_gpu.min_gpu_memory_gib: "},
		{func(c *Config) { c.Rules.SmallJobLargeGPU.MaxMemoryFraction = 0 }, "analysis.rules.small_job_large_gpu.max_memory_fraction: "},
		{func(c *Config) { c.Rules.SmallJobLargeGPU.MaxGPUUtilization = 3 }, "analysis.rules.small_job_large_gpu.max_gpu_utilization: "},
		{func(c *Config) { c.Rules.MemoryResidentLowUtil.MaxGPUUtilization = 0 }, "analysis.rules.memory_resident_low_util.max_gpu_utilization: "},
		{func(c *Config) { c.Rules.MemoryResidentLowUtil.MinGPUMemory = 2 }, "analysis.rules.memory_resident_low_util.min_gpu_memory: "},
		{func(c *Config) { c.Rules.OverScaled.MaxGPUUtilization = -1 }, "analysis.rules.over_scaled.max_gpu_utilization: "},
		{func(c *Config) { c.Rules.OverScaled.MaxGPUMemory = 0 }, "analysis.rules.over_scaled.max_gpu_memory: "},
		{func(c *Config) { c.Rules.TooManyCoresPerGPU.MaxCoresPerGPU = 0.5 }, "analysis.rules.too_many_cores_per_gpu.max_cores_per_gpu: "},
		{func(c *Config) { c.Rules.TooManyCoresPerGPU.MaxCPUEfficiency = 0 }, "analysis.rules.too_many_cores_per_gpu.max_cpu_efficiency: "},
		{func(c *Config) { c.Rules.TooMuchMemoryPerGPU.MaxMemoryPerGPUGiB = 0 }, "analysis.rules.too_much_memory_per_gpu.max_memory_per_gpu_gib: "},
		{func(c *Config) { c.Rules.TooMuchMemoryPerGPU.MaxMemoryEfficiency = 1.5 }, "analysis.rules.too_much_memory_per_gpu.max_memory_efficiency: "},
		{func(c *Config) { c.Rules.CPUJobOnGPUPartition.Partitions = []string{"gpu", "[gpu"} }, "analysis.rules.cpu_job_on_gpu_partition.partitions[1]: "},
		{func(c *Config) { c.Rules.CPUJobOnGPUPartition.Partitions = []string{" "} }, "analysis.rules.cpu_job_on_gpu_partition.partitions[0]: must not be empty"},
		{func(c *Config) { c.Rules.SerialJobManyCores.MinCPUs = 1 }, "analysis.rules.serial_job_many_cores.min_cpus: "},
		{func(c *Config) { c.Rules.SerialJobManyCores.MaxPeakCores = 3 }, "analysis.rules.serial_job_many_cores.max_peak_cores: "},
		{func(c *Config) { c.Rules.SerialJobManyCores.MinAvgCores = 2 }, "analysis.rules.serial_job_many_cores.min_avg_cores: "},
		{func(c *Config) { c.Rules.CPUOverrequest.MinCPUs = 0 }, "analysis.rules.cpu_overrequest.min_cpus: "},
		{func(c *Config) { c.Rules.CPUOverrequest.MaxCPUEfficiency = 0 }, "analysis.rules.cpu_overrequest.max_cpu_efficiency: "},
		{func(c *Config) { c.Rules.MemoryOverrequest.MaxMemoryEfficiency = 0 }, "analysis.rules.memory_overrequest.max_memory_efficiency: "},
		{func(c *Config) { c.Rules.MemoryOverrequest.MinRequestGiB = -2 }, "analysis.rules.memory_overrequest.min_request_gib: "},
		{func(c *Config) { c.Rules.WalltimeOverrequest.MaxWalltimeEfficiency = 0 }, "analysis.rules.walltime_overrequest.max_walltime_efficiency: "},
		{func(c *Config) { c.Rules.WalltimeOverrequest.MinUnused = -time.Minute }, "analysis.rules.walltime_overrequest.min_unused: "},
		{func(c *Config) { c.Rules.ParallelismMismatch.MinSMActivity = 0 }, "analysis.rules.parallelism_mismatch.min_sm_activity: "},
		{func(c *Config) { c.Rules.ParallelismMismatch.MinSMActivity = 1 }, "analysis.rules.parallelism_mismatch.min_sm_activity: 1 must be below 1"},
		{func(c *Config) { c.Rules.GPUInputPipelineBound.MinPCIeRxGBPerSecond = 0 }, "analysis.rules.gpu_input_pipeline_bound.min_pcie_rx_gb_per_second: "},
		{func(c *Config) { c.Rules.GPUInputPipelineBound.MinPCIeRxGBPerSecond = math.Inf(1) }, "analysis.rules.gpu_input_pipeline_bound.min_pcie_rx_gb_per_second: "},
		{func(c *Config) { c.Rules.GPUInputPipelineBound.PCIeLinkGBPerSecond = -1 }, "analysis.rules.gpu_input_pipeline_bound.pcie_link_gb_per_second: "},
		{func(c *Config) { c.Rules.GPUInputPipelineBound.MinPCIeLinkShare = 0 }, "analysis.rules.gpu_input_pipeline_bound.min_pcie_link_share: "},
		{func(c *Config) { c.Rules.GPUInputPipelineBound.MaxGPUUtilization = 2 }, "analysis.rules.gpu_input_pipeline_bound.max_gpu_utilization: "},
		{func(c *Config) { c.Rules.GPUInputPipelineBound.MaxSMActivity = math.NaN() }, "analysis.rules.gpu_input_pipeline_bound.max_sm_activity: "},
		{func(c *Config) { c.Rules.GPULaunchBound.MinGPUUtilization = 0 }, "analysis.rules.gpu_launch_bound.min_gpu_utilization: "},
		{func(c *Config) { c.Rules.GPULaunchBound.MaxSMActivity = 0.8 }, "analysis.rules.gpu_launch_bound.max_sm_activity: 0.8 must be below min_gpu_utilization"},
		{func(c *Config) { c.Rules.GPUMemoryBandwidthBound.MinDRAMActivity = 0 }, "analysis.rules.gpu_memory_bandwidth_bound.min_dram_activity: "},
		{func(c *Config) { c.Rules.GPUMemoryBandwidthBound.MaxPipeActivity = 1.5 }, "analysis.rules.gpu_memory_bandwidth_bound.max_pipe_activity: "},
		{func(c *Config) { c.Rules.GPUTensorUnused.MinSMActivity = 0 }, "analysis.rules.gpu_tensor_unused.min_sm_activity: "},
		{func(c *Config) { c.Rules.GPUTensorUnused.MinFP32Activity = -0.2 }, "analysis.rules.gpu_tensor_unused.min_fp32_activity: "},
		{func(c *Config) { c.Rules.GPUTensorUnused.MaxTensorActivity = 0.3 }, "analysis.rules.gpu_tensor_unused.max_tensor_activity: 0.3 must be below min_fp32_activity"},
		{func(c *Config) { c.Rules.GPUTensorUnused.DocURLAMD = "javascript:alert(1)" }, "analysis.rules.gpu_tensor_unused.doc_url_amd: "},
		{func(c *Config) { c.Rules.OverScaled.DocURL = "ftp://x" }, "analysis.rules.over_scaled.doc_url: "},
		{func(c *Config) { c.Rules.OverScaled.DocURLAMD = "https:///nohost" }, "analysis.rules.over_scaled.doc_url_amd: "},
		{func(c *Config) { c.Rules.MemoryOverrequest.Lesson = strings.Repeat("x", 3000) }, "analysis.rules.memory_overrequest.lesson: "},
		{func(c *Config) { c.Rules.MemoryOverrequest.LessonAMD = strings.Repeat("x", 3000) }, "analysis.rules.memory_overrequest.lesson_amd: "},
	} {
		c := Default()
		tc.edit(&c)
		err := c.Validate()
		if err == nil {
			t.Errorf("%s: no error", tc.option)
			continue
		}
		if !strings.Contains(err.Error(), tc.option) {
			t.Errorf("error %q does not name %q", err, tc.option)
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.HasPrefix(line, "analysis.") {
				t.Errorf("error line %q does not start with the option", line)
			}
		}
	}

	// Several problems are all reported.
	c := Default()
	c.ShortJob, c.EffectiveGPUThreshold = -1, 2
	if err := c.Validate(); err == nil || strings.Count(err.Error(), "\n") != 1 {
		t.Errorf("two problems: %v", err)
	}
}

// The configuration decodes from YAML (the "analysis" section of a site
// file), strictly, over the defaults.
func TestYAML(t *testing.T) {
	t.Parallel()
	src := `
short_job: 15m
effective_gpu_threshold: 0.05
classes:
  gpu_efficient: 0.8
  gpu_score_sm_activity: false
recommend:
  memory_headroom: 1.5
  time_step: 1h
rules:
  over_scaled:
    enabled: false
  cpu_job_on_gpu_partition:
    partitions: [gpu, "a100*"]
  gpu_input_pipeline_bound:
    pcie_link_gb_per_second: 25
  walltime_overrequest:
    min_unused: 2h
    doc_url: https://hpc.example.edu/time
    lesson_amd: Text one. Text two.
`
	c := Default()
	dec := yaml.NewDecoder(bytes.NewBufferString(src))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ShortJob != 15*time.Minute || c.EffectiveGPUThreshold != 0.05 || c.Classes.GPUEfficient != 0.8 ||
		c.Classes.GPUAcceptable != 0.4 || c.Recommend.MemoryHeadroom != 1.5 || c.Recommend.TimeStep != time.Hour ||
		c.Rules.OverScaled.Enabled || !c.Rules.UtilizationDrop.Enabled || len(c.Rules.CPUJobOnGPUPartition.Partitions) != 2 ||
		c.Rules.WalltimeOverrequest.MinUnused != 2*time.Hour || c.Rules.WalltimeOverrequest.DocURL != "https://hpc.example.edu/time" ||
		c.Rules.WalltimeOverrequest.LessonAMD != "Text one. Text two." || c.Rules.OverScaled.MaxGPUMemory != 0.25 ||
		c.Classes.GPUScoreSMActivity || c.Rules.GPUInputPipelineBound.PCIeLinkGBPerSecond != 25 ||
		c.Rules.GPUInputPipelineBound.MinPCIeRxGBPerSecond != 4 || !c.Rules.GPULaunchBound.Enabled {
		t.Errorf("decoded %+v", c)
	}
	c = Default()
	dec = yaml.NewDecoder(bytes.NewBufferString("rules:\n  over_scaled:\n    max_gpu_util: 0.2\n"))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err == nil || !strings.Contains(err.Error(), "max_gpu_util") {
		t.Errorf("unknown key: %v", err)
	}
}

// optionKeys lists every option's key, "analysis.<path>", from the yaml
// tags; inline (common rule) keys are listed once under "analysis.rules.<id>".
func optionKeys(prefix string, typ reflect.Type, out *[]string) {
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if opts == "inline" {
			continue
		}
		key := prefix + "." + name
		if f.Type.Kind() == reflect.Struct {
			optionKeys(key, f.Type, out)
			continue
		}
		*out = append(*out, key)
	}
}

// docs/analysis.md documents every option, every cause and the common
// rule keys.
func TestDocsCoverEveryOptionAndCause(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/analysis.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var keys []string
	optionKeys("analysis", reflect.TypeOf(Config{}), &keys)
	if len(keys) < 40 {
		t.Fatalf("only %d keys found", len(keys))
	}
	for _, k := range keys {
		if !strings.Contains(doc, "`"+k+"`") {
			t.Errorf("docs/analysis.md does not mention `%s`", k)
		}
	}
	for _, id := range CauseIDs() {
		if !strings.Contains(doc, "`"+id+"`") || !strings.Contains(doc, "`analysis.rules."+id+".enabled`") {
			t.Errorf("docs/analysis.md does not document cause %s and its switch", id)
		}
	}
	for _, k := range []string{"lesson", "lesson_amd", "doc_url", "doc_url_amd"} {
		if !strings.Contains(doc, "`"+k+"`") {
			t.Errorf("docs/analysis.md does not mention `%s`", k)
		}
	}
}
