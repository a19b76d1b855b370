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
