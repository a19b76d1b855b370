package analysis

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// The fixtures in testdata are hand-written job documents shaped like the
// agent's (see testdata/README.md). Each test pins the class, the causes
// (in order), the #SBATCH changes and the causes that must not appear.
func TestFixtures(t *testing.T) {
	t.Parallel()
	type chg struct{ from, to string }
	for _, tc := range []struct {
		file     string
		timeline []float64
		class    string
		kind     string
		vendor   string
		causes   []string
		changes  []chg
		absent   []string
		check    func(t *testing.T, a jobmodel.Analysis)
	}{
		{
			file: "cpu_serial_overrequest.json", class: jobmodel.ClassInefficient, kind: jobmodel.KindCPU,
			causes:  []string{CauseMemoryOverrequest, CauseSerialJobManyCores},
			changes: []chg{{"--cpus-per-task=4", "--cpus-per-task=1"}, {"--mem=8G", "--mem=1G"}},
			// 15 minutes of a 1-hour limit: too little to gain to be worth a note.
			absent: []string{CauseWalltimeOverrequest, CauseCPUOverrequest},
			check: func(t *testing.T, a jobmodel.Analysis) {
				if a.Recommendation.CPUs == nil || *a.Recommendation.CPUs != 1 || *a.Recommendation.MemoryBytes != giB {
					t.Errorf("recommendation %+v", a.Recommendation)
				}
				if s := a.Savings.CoreHours; s == nil || math.Abs(*s-3*902.0/3600) > 1e-9 {
					t.Errorf("core-hours saved %v", s)
				}
				if s := a.Savings.MemoryGiBHours; s == nil || math.Abs(*s-7*902.0/3600) > 1e-9 {
					t.Errorf("GiB-hours saved %v", s)
				}
			},
		},
		{
			file: "gpu_four_held_one_used.json", class: jobmodel.ClassInefficient, kind: jobmodel.KindGPU, vendor: VendorNVIDIA,
			causes:  []string{CauseGPUsHeldIdle, CauseParallelismMismatch},
			changes: []chg{{"--gpus=4", "--gpus=1"}},
			absent:  []string{CauseOverScaled, CauseGPUUnused, CauseCPUBottleneck, CauseTooManyCoresPerGPU},
			check: func(t *testing.T, a jobmodel.Analysis) {
				if s := a.Savings.GPUHours; s == nil || math.Abs(*s-3*3.2) > 1e-9 {
					t.Errorf("GPU-hours saved %v, want 9.6", s)
				}
				if f := a.Figures; *f.EffectiveGPUs != 1 || *f.GPUs != 4 || *f.EffectiveGPURatio != 0.25 {
					t.Errorf("figures %+v", f)
				}
			},
		},
		{
			file: "gpu_eight_efficient_training.json", class: jobmodel.ClassEfficient, kind: jobmodel.KindGPU, vendor: VendorNVIDIA,
			check: func(t *testing.T, a jobmodel.Analysis) {
				if *a.Savings.GPUHours != 0 || *a.Savings.CoreHours != 0 || *a.Savings.MemoryGiBHours != 0 {
					t.Errorf("savings %+v", a.Savings)
				}
			},
		},
		{
			file: "gpu_dataloader_bound.json", class: jobmodel.ClassInefficient, kind: jobmodel.KindGPU, vendor: VendorNVIDIA,
			causes: []string{CauseCPUBottleneck},
			absent: []string{CauseOverScaled, CauseSmallJobLargeGPU, CauseMemoryResidentLowUtil},
		},
		{
			// The same job with its utilisation timeline: busy early, then
			// waiting on I/O.
			file:     "gpu_dataloader_bound.json",
			timeline: []float64{0.82, 0.8, 0.85, 0.81, 0.3, 0.2, 0.15, 0.2, 0.18, 0.16, 0.2, 0.19},
			class:    jobmodel.ClassInefficient, kind: jobmodel.KindGPU, vendor: VendorNVIDIA,
			causes: []string{CauseCPUBottleneck, CauseUtilizationDrop},
		},
		{
			// Memory held, GPU waiting for requests: not "idle", not
			// over-scaled; cancelled after 5 of 24 hours, so no time note.
			file: "gpu_memory_heavy_inference.json", class: jobmodel.ClassWasted, kind: jobmodel.KindGPU, vendor: VendorNVIDIA,
			causes: []string{CauseMemoryResidentLowUtil},
			absent: []string{CauseGPUsHeldIdle, CauseGPUUnused, CauseOverScaled, CauseSmallJobLargeGPU, CauseWalltimeOverrequest},
		},
		{
			// Recorded figures of a cgroup v2 job: its tasks waited on the
			// shared file system 45 % of the time (two nodes, 52 % and
			// 38 %), and one process was killed for memory while the job
			// went on. Neither is a resource left unused: no change.
			file: "cpu_io_stalled_two_nodes.json", class: jobmodel.ClassAcceptable, kind: jobmodel.KindCPU,
			causes: []string{CauseOOMKilledChild, CauseIOStall},
			absent: []string{CauseMemoryStall, CauseCPUStall, CauseCPUOverrequest, CauseMemoryOverrequest, CauseWalltimeOverrequest},
			check: func(t *testing.T, a jobmodel.Analysis) {
				io := causeOf(a, CauseIOStall)
				for _, e := range []string{"waited for I/O during 45% of the 5h59m they were watched (summed over its nodes): 2h41m stalled;",
					"52% on the worst node", "97% in the worst sampling interval", "all of its tasks at once during 9.5%",
					"read 3584.0 GiB and wrote 384.0 GiB"} {
					if !strings.Contains(io.Evidence, e) {
						t.Errorf("io_stall evidence %q lacks %q", io.Evidence, e)
					}
				}
				if io.Confidence != 0.69 {
					t.Errorf("io_stall confidence %v, want 0.69", io.Confidence)
				}
				if oom := causeOf(a, CauseOOMKilledChild); !strings.Contains(oom.Evidence, "killed 1 process of the job") {
					t.Errorf("oom_killed_child evidence %q", oom.Evidence)
				}
			},
		},
		{
			// Recorded figures of an H100 kept "busy" by small kernels:
			// utilisation 95 %, SM activity 12 %. The score rests on the
			// SM activity, so the job is not called efficient.
			file: "gpu_h100_launch_bound.json", class: jobmodel.ClassWasted, kind: jobmodel.KindGPU, vendor: VendorNVIDIA,
			causes: []string{CauseGPULaunchBound},
			absent: []string{CauseGPUTensorUnused, CauseSmallJobLargeGPU, CauseOverScaled, CauseGPUMemoryBandwidthBound, CauseGPUInputPipelineBound},
			check: func(t *testing.T, a jobmodel.Analysis) {
				c := causeOf(a, CauseGPULaunchBound)
				if c.Confidence != 0.78 || !strings.Contains(c.Evidence, "(gpu031 GPU 3) averaged 95% utilisation but 12% SM activity") ||
					!strings.Contains(c.Evidence, "SM occupancy 5.0%") {
					t.Errorf("gpu_launch_bound %+v", c)
				}
				if *a.Score != 0.12 || *a.Figures.GPUSMActivity != 0.12 || *a.Figures.GPUUtilization != 0.95 {
					t.Errorf("score %v, figures %+v", *a.Score, a.Figures)
				}
			},
		},
		{
			// bf16 pretraining on 4 H100s: SMs 86–90 % active, tensor
			// cores 58–62 %: efficient, nothing to say.
			file: "gpu_h100_matmul_efficient.json", class: jobmodel.ClassEfficient, kind: jobmodel.KindGPU, vendor: VendorNVIDIA,
			absent: activityCauses,
			check: func(t *testing.T, a jobmodel.Analysis) {
				if math.Abs(*a.Score-0.8825) > 1e-9 || math.Abs(*a.Figures.GPUSMActivity-0.8825) > 1e-9 {
					t.Errorf("score %v, SM activity %v", *a.Score, *a.Figures.GPUSMActivity)
				}
			},
		},
		{
			// Two H100 PCIe cards receiving 10.6–11.4 GB/s from the host at
			// 36–40 % utilisation, CPUs not saturated: the copies, not a
			// too-large GPU (over_scaled defers) nor the CPUs.
			file: "gpu_h100_copy_bound.json", class: jobmodel.ClassInefficient, kind: jobmodel.KindGPU, vendor: VendorNVIDIA,
			causes: []string{CauseGPUInputPipelineBound},
			absent: []string{CauseOverScaled, CauseCPUBottleneck, CauseSmallJobLargeGPU, CauseGPULaunchBound},
			check: func(t *testing.T, a jobmodel.Analysis) {
				c := causeOf(a, CauseGPUInputPipelineBound)
				for _, e := range []string{"Both GPUs in use received 10.6–11.4 GB/s from the host over PCIe", "36–40% utilisation and 18–22% SM activity",
					"gpu207 GPU 0: PCIe in 11.4 GB/s", "the job's CPUs were 55% busy"} {
					if !strings.Contains(c.Evidence, e) {
						t.Errorf("evidence %q lacks %q", c.Evidence, e)
					}
				}
				if c.Confidence != 0.83 || *a.Score != 0.2 {
					t.Errorf("confidence %v, score %v", c.Confidence, *a.Score)
				}
			},
		},
		{
			// FP32 training without mixed precision or TF32: SMs busy,
			// FP32 pipes 56–58 %, tensor cores measured at 0.
			file: "gpu_h100_fp32_no_tensor.json", class: jobmodel.ClassEfficient, kind: jobmodel.KindGPU, vendor: VendorNVIDIA,
			causes: []string{CauseGPUTensorUnused},
			absent: []string{CauseGPUMemoryBandwidthBound, CauseGPULaunchBound},
			check: func(t *testing.T, a jobmodel.Analysis) {
				c := causeOf(a, CauseGPUTensorUnused)
				if c.Confidence != 0.72 || !strings.Contains(c.Evidence, "78–80% SM activity with their FP32 pipes 56–58% busy, while their tensor cores (measured) averaged 0%") ||
					!strings.Contains(c.Lesson, "allow_tf32") {
					t.Errorf("gpu_tensor_unused %+v", c)
				}
			},
		},
		{
			// A stencil code at 84 % of the H100's memory bandwidth with
			// idle tensor cores: memory-bound; the tensor rule, whose
			// pattern it also shows (FP32 24 %), defers.
			file: "gpu_h100_bandwidth_bound.json", class: jobmodel.ClassEfficient, kind: jobmodel.KindGPU, vendor: VendorNVIDIA,
			causes: []string{CauseGPUMemoryBandwidthBound},
			absent: []string{CauseGPUTensorUnused, CauseGPULaunchBound},
			check: func(t *testing.T, a jobmodel.Analysis) {
				c := causeOf(a, CauseGPUMemoryBandwidthBound)
				if c.Confidence != 0.78 || !strings.Contains(c.Evidence, "used 84% of its memory bandwidth on average while its tensor cores averaged 3.0% and its FP32 pipes 24%") {
					t.Errorf("gpu_memory_bandwidth_bound %+v", c)
				}
			},
		},
		{
			// Two A100s without GPM: PCIe traffic only, the rest named in
			// missing_metrics. No activity rule fires; the class rests on
			// utilisation (92 %), as before.
			file: "gpu_a100_no_activity.json", class: jobmodel.ClassEfficient, kind: jobmodel.KindGPU, vendor: VendorNVIDIA,
			absent: activityCauses,
			check: func(t *testing.T, a jobmodel.Analysis) {
				if a.Figures.GPUSMActivity != nil || math.Abs(*a.Score-0.92) > 1e-9 {
					t.Errorf("score %v, SM activity %v", *a.Score, a.Figures.GPUSMActivity)
				}
			},
		},
		{
			file: "amd_mi250x_two_of_eight.json", class: jobmodel.ClassInefficient, kind: jobmodel.KindGPU, vendor: VendorAMD,
			causes:  []string{CauseGPUsHeldIdle, CauseWalltimeOverrequest, CauseParallelismMismatch},
			changes: []chg{{"--gpus=8", "--gpus=2"}, {"--time=12:00:00", "--time=03:45:00"}},
			absent:  []string{CauseOverScaled, CauseSmallJobLargeGPU},
			check: func(t *testing.T, a jobmodel.Analysis) {
				for _, c := range a.Causes {
					if strings.Contains(c.Lesson, "CUDA") || strings.Contains(c.Lesson, "NCCL") {
						t.Errorf("AMD job lesson in CUDA terms: %q", c.Lesson)
					}
				}
			},
		},
	} {
		j := loadFixture(t, tc.file)
		a := Analyze(Input{Job: j, At: testNow, GPUTimeline: tc.timeline}, Default())
		checkInvariants(t, a)
		name := tc.file
		if tc.timeline != nil {
			name += " (with timeline)"
		}
		if a.Class != tc.class || a.Kind != tc.kind || a.Vendor != tc.vendor {
			t.Errorf("%s: class %s kind %s vendor %q, want %s %s %q", name, a.Class, a.Kind, a.Vendor, tc.class, tc.kind, tc.vendor)
		}
		if !slices.Equal(ids(a), tc.causes) {
			t.Errorf("%s: causes %v, want %v", name, ids(a), tc.causes)
		}
		var got []chg
		for _, c := range a.Recommendation.Changes {
			got = append(got, chg{c.From, c.To})
		}
		if !slices.Equal(got, tc.changes) {
			t.Errorf("%s: changes %v, want %v", name, got, tc.changes)
		}
		for _, id := range tc.absent {
			if causeOf(a, id) != nil {
				t.Errorf("%s: false positive %s", name, id)
			}
		}
		if len(a.MissingMetrics) != 0 {
			t.Errorf("%s: missing %v", name, a.MissingMetrics)
		}
		if tc.check != nil {
			tc.check(t, a)
		}
	}
}

// Every fixture is tested above and described in the README.
func TestFixturesDocumented(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("testdata/README.md")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) < 6 {
		t.Fatalf("%d fixtures", len(files))
	}
	for _, f := range files {
		if !strings.Contains(string(readme), filepath.Base(f)) {
			t.Errorf("testdata/README.md does not describe %s", filepath.Base(f))
		}
	}
}
