package report

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/analysis"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// TestRecordedH200Page renders the job page of a job the agent recorded on
// a real H200 (internal/analysis/testdata/h200_recorded_tiny.json: tiny
// kernels from a CUDA graph, utilisation 83 %, SM activity 0.3 %): the
// page must show the GPU's activity, the cause and the chart of
// utilisation against SM activity, as a user would read them.
func TestRecordedH200Page(t *testing.T) {
	b, err := os.ReadFile("../analysis/testdata/h200_recorded_tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	var j jobmodel.Job
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	cfg := analysis.Default()
	cfg.ShortJob = 10 * time.Second
	a := analysis.AnalyzeJob(j, j.EndTime.Time, cfg)
	j.Analysis = &a
	page, err := HTML(Input{Job: j, Analysis: &a})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"GPU activity (average / 95th percentile / peak)",
		"SM activity 0.3%",
		"GPU busy with kernels too small to fill it",
		"83% utilisation but 0.3% SM activity",
		"GPU utilisation against SM activity",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if txt := Text(Input{Job: j, Analysis: &a}, false); !strings.Contains(txt, "SM activity") {
		t.Error("the text report lacks SM activity")
	}
}
