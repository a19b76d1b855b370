package analysis

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// TestRecordedH200 analyses job documents the agent wrote on a real H200
// (driver 580.159.04, 2026-11-28; scripts/gpu-check, docs/performance.md):
// four 25 s PyTorch jobs that utilisation alone cannot tell apart, each
// with its GPM figures as recorded. The jobs are short, so the analysis
// judges from 10 s on, as the device check did.
func TestRecordedH200(t *testing.T) {
	t.Parallel()
	cfg := Default()
	cfg.ShortJob = 10 * time.Second
	for _, tc := range []struct {
		file   string
		class  string
		causes []string
		// evidence are figures the first cause's evidence must quote.
		evidence []string
	}{
		// bf16 8192² matrix products: SMs and tensor cores busy.
		{file: "h200_recorded_matmul.json", class: jobmodel.ClassEfficient},
		// One-block kernels replayed from a CUDA graph: utilisation 99 %
		// in nvidia-smi, SM activity 0.3 %.
		{file: "h200_recorded_tiny.json", class: jobmodel.ClassWasted, causes: []string{CauseGPULaunchBound},
			evidence: []string{"83% utilisation", "0.3% SM activity"}},
		// Pageable host-to-device copies, 6.4 GiB/s on average.
		{file: "h200_recorded_copy.json", class: jobmodel.ClassWasted, causes: []string{CauseGPUInputPipelineBound},
			evidence: []string{"6.7 GB/s", "13% utilisation"}},
		// The same tiny kernels launched one at a time from Python:
		// utilisation 22 %, the GPU far too big for the work.
		{file: "h200_recorded_launch.json", class: jobmodel.ClassWasted, causes: []string{CauseOverScaled}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			j := loadFixture(t, tc.file)
			if j.GPU == nil || j.GPU.Activity == nil || j.GPU.Activity.SM == nil || len(j.GPU.SMActivityTimeline) == 0 {
				t.Fatalf("the recorded document lost its activity figures: %+v", j.GPU)
			}
			a := AnalyzeJob(j, j.EndTime.Time, cfg)
			checkInvariants(t, a)
			var ids []string
			for _, c := range a.Causes {
				ids = append(ids, c.ID)
			}
			if a.Class != tc.class || !slices.Equal(ids, tc.causes) {
				t.Errorf("class %s causes %v, want %s %v", a.Class, ids, tc.class, tc.causes)
			}
			for _, want := range tc.evidence {
				if len(a.Causes) == 0 || !strings.Contains(a.Causes[0].Evidence, want) {
					t.Errorf("evidence lacks %q: %v", want, a.Causes)
				}
			}
			// The three diagnoses the issue asks for differ; utilisation
			// alone would class the graph job (83 %) with the matrix job.
			if a.Figures.GPUSMActivity == nil {
				t.Errorf("no SM activity figure")
			}
		})
	}
}
