package analysis

import (
	"regexp"
	"strings"
	"testing"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// gpuVendorCauses have vendor-specific wording.
var gpuVendorCauses = []string{CauseGPUsHeldIdle, CauseGPUUnused, CauseParallelismMismatch, CauseCPUBottleneck,
	CauseUtilizationDrop, CauseSmallJobLargeGPU, CauseGPUInputPipelineBound, CauseGPULaunchBound,
	CauseGPUMemoryBandwidthBound, CauseGPUTensorUnused}

var (
	nvidiaTerms = regexp.MustCompile(`CUDA_VISIBLE_DEVICES|NCCL|Nsight|MIG|CUDA support|A100|H100`)
	amdTerms    = regexp.MustCompile(`ROCR_VISIBLE_DEVICES|HIP_VISIBLE_DEVICES|RCCL|ROCm|rocprof|Instinct|HIP`)
	judgmental  = regexp.MustCompile(`(?i)\bwaste|\bbad\b|please|\bmust\b|lazy|abuse|you should|violat|penal|careless|fault`)
)

func sentences(s string) int {
	return strings.Count(strings.TrimSpace(s)+" ", ". ")
}

func TestLessonsAreShortNeutralAndLinked(t *testing.T) {
	t.Parallel()
	for _, id := range CauseIDs() {
		tx, ok := texts[id]
		if !ok || tx.title == "" {
			t.Errorf("%s: no title", id)
			continue
		}
		for _, vendor := range []string{VendorNVIDIA, VendorAMD, ""} {
			cfg := Default()
			l, u := lesson(&cfg, id, vendor)
			if n := sentences(l); n < 2 || n > 3 {
				t.Errorf("%s (%s): %d sentences: %q", id, vendor, n, l)
			}
			if judgmental.MatchString(l) || judgmental.MatchString(tx.title) {
				t.Errorf("%s (%s): judgmental wording: %q", id, vendor, l)
			}
			if !validURL(u) {
				t.Errorf("%s (%s): doc URL %q", id, vendor, u)
			}
		}
	}
}

func TestVendorWording(t *testing.T) {
	t.Parallel()
	cfg := Default()
	for _, id := range gpuVendorCauses {
		nv, _ := lesson(&cfg, id, VendorNVIDIA)
		amd, _ := lesson(&cfg, id, VendorAMD)
		if !nvidiaTerms.MatchString(nv) || amdTerms.MatchString(nv) {
			t.Errorf("%s: NVIDIA lesson is not in CUDA terms: %q", id, nv)
		}
		if !amdTerms.MatchString(amd) || nvidiaTerms.MatchString(amd) {
			t.Errorf("%s: AMD lesson is not in ROCm/HIP terms: %q", id, amd)
		}
	}
	for _, id := range CauseIDs() {
		for _, vendor := range []string{VendorNVIDIA, VendorAMD} {
			if l, _ := lesson(&cfg, id, vendor); vendor == VendorNVIDIA && amdTerms.MatchString(l) || vendor == VendorAMD && nvidiaTerms.MatchString(l) {
				t.Errorf("%s: %s lesson names the other vendor: %q", id, vendor, l)
			}
		}
	}

	// Through Analyze: the vendor comes from the job's GPUs.
	amd := analyze(loadFixture(t, "amd_mi250x_two_of_eight.json"), cfg)
	nv := analyze(loadFixture(t, "gpu_four_held_one_used.json"), cfg)
	if amd.Vendor != VendorAMD || nv.Vendor != VendorNVIDIA {
		t.Fatalf("vendors %q %q", amd.Vendor, nv.Vendor)
	}
	if c := causeOf(amd, CauseGPUsHeldIdle); c == nil || !strings.Contains(c.Lesson, "ROCR_VISIBLE_DEVICES") || strings.Contains(c.Lesson, "CUDA") {
		t.Errorf("AMD job lesson: %+v", c)
	}
	if c := causeOf(amd, CauseParallelismMismatch); c == nil || !strings.Contains(c.Lesson, "RCCL") || strings.Contains(c.Lesson, "NCCL") {
		t.Errorf("AMD job lesson: %+v", c)
	}
	if c := causeOf(nv, CauseGPUsHeldIdle); c == nil || !strings.Contains(c.Lesson, "CUDA_VISIBLE_DEVICES") || strings.Contains(c.Lesson, "ROC") {
		t.Errorf("NVIDIA job lesson: %+v", c)
	}
	if c := causeOf(nv, CauseParallelismMismatch); c == nil || !strings.Contains(c.Lesson, "NCCL") || strings.Contains(c.Lesson, "RCCL") {
		t.Errorf("NVIDIA job lesson: %+v", c)
	}

	// Links differ where the vendors' documentation does.
	j := baseGPU(1)
	setGPU(&j, 0, 0.01, 0.02)
	if c := causeOf(analyze(j, cfg), CauseGPUUnused); c == nil || c.DocURL != docCUDA {
		t.Errorf("NVIDIA gpu_unused link: %+v", c)
	}
	j.GPUs[0].Vendor = "amd"
	if c := causeOf(analyze(j, cfg), CauseGPUUnused); c == nil || c.DocURL != docHIP || !strings.Contains(c.Lesson, "ROCm/HIP") {
		t.Errorf("AMD gpu_unused: %+v", c)
	}
}

func TestLessonOverrides(t *testing.T) {
	t.Parallel()
	cfg := Default()
	cfg.Rules.GPUsHeldIdle.Lesson = "Site text one. Site text two."
	cfg.Rules.GPUsHeldIdle.DocURL = "https://hpc.example.edu/gpus"
	job := func(vendor string) jobmodel.Job {
		j := baseGPU(2)
		holdIdle(&j, 1)
		for i := range j.GPUs {
			j.GPUs[i].Vendor = vendor
		}
		return j
	}
	for _, vendor := range []string{"nvidia", "amd"} {
		c := causeOf(analyze(job(vendor), cfg), CauseGPUsHeldIdle)
		if c == nil || c.Lesson != "Site text one. Site text two." || c.DocURL != "https://hpc.example.edu/gpus" {
			t.Errorf("%s: %+v", vendor, c)
		}
	}
	cfg.Rules.GPUsHeldIdle.LessonAMD = "AMD text one. AMD text two."
	cfg.Rules.GPUsHeldIdle.DocURLAMD = "https://hpc.example.edu/amd"
	if c := causeOf(analyze(job("amd"), cfg), CauseGPUsHeldIdle); c == nil || c.Lesson != "AMD text one. AMD text two." || c.DocURL != "https://hpc.example.edu/amd" {
		t.Errorf("AMD override: %+v", c)
	}
	if c := causeOf(analyze(job("nvidia"), cfg), CauseGPUsHeldIdle); c == nil || c.Lesson != "Site text one. Site text two." {
		t.Errorf("NVIDIA with an AMD override: %+v", c)
	}
	// Only the AMD variant set: NVIDIA jobs keep the built-in text.
	cfg = Default()
	cfg.Rules.GPUsHeldIdle.LessonAMD = "AMD text one. AMD text two."
	if c := causeOf(analyze(job("nvidia"), cfg), CauseGPUsHeldIdle); c == nil || c.Lesson != texts[CauseGPUsHeldIdle].lesson {
		t.Errorf("NVIDIA keeps the default: %+v", c)
	}
}
