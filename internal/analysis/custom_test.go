package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

func TestCustomRules(t *testing.T) {
	t.Parallel()
	job := loadFixture(t, "gpu_four_held_one_used.json")
	cfg := Default()
	cfg.CustomRules = []CustomRule{
		{ID: "big_gpu_waste", Title: "Many GPU-hours wasted", Kind: jobmodel.KindGPU, Confidence: 0.8,
			When:   []Condition{{Figure: "gpus", Op: ">=", Value: 4}, {Figure: "gpu_utilization", Op: "<", Value: 0.3}},
			Lesson: "Ask for the GPUs your program uses.", DocURL: "https://hpc.example.org/gpus"},
		{ID: "cpu_only", Title: "never for GPU jobs", Kind: jobmodel.KindCPU, Confidence: 0.5,
			When: []Condition{{Figure: "cpus", Op: ">", Value: 0}}},
		{ID: "other_partition", Title: "only on debug", Partitions: []string{"debug*"}, Confidence: 0.5,
			When: []Condition{{Figure: "gpus", Op: ">", Value: 0}}},
		{ID: "needs_memory_eff", Title: "figure absent", Confidence: 0.5,
			When: []Condition{{Figure: "memory_efficiency", Op: "<", Value: 2}}},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	job.Memory = nil // memory_efficiency becomes absent: the last rule must not fire
	a := Analyze(Input{Job: job, At: time.Unix(1_700_000_000, 0)}, cfg)
	var got *jobmodel.Cause
	for i, c := range a.Causes {
		switch c.ID {
		case "big_gpu_waste":
			got = &a.Causes[i]
		case "cpu_only", "other_partition", "needs_memory_eff":
			t.Errorf("custom rule %s fired: %+v", c.ID, c)
		}
	}
	if got == nil {
		t.Fatalf("big_gpu_waste did not fire: %+v", a.Causes)
	}
	if got.Title != "Many GPU-hours wasted" || got.Confidence != 0.8 || !strings.Contains(got.Evidence, "gpus 4 >= 4") ||
		!strings.Contains(got.Evidence, "gpu_utilization") || got.DocURL != "https://hpc.example.org/gpus" {
		t.Errorf("cause %+v", got)
	}
}

func TestCustomRuleValidation(t *testing.T) {
	t.Parallel()
	ok := CustomRule{ID: "x_rule", Title: "t", Confidence: 0.5, When: []Condition{{Figure: "gpus", Op: ">", Value: 1}}}
	for _, tc := range []struct {
		mut  func(*CustomRule)
		want string
	}{
		{func(r *CustomRule) { r.ID = "Bad-ID" }, "custom_rules[0].id"},
		{func(r *CustomRule) { r.ID = CauseOverScaled }, "built-in"},
		{func(r *CustomRule) { r.Title = "" }, "custom_rules[0].title"},
		{func(r *CustomRule) { r.Kind = "tpu" }, "custom_rules[0].kind"},
		{func(r *CustomRule) { r.When = nil }, "custom_rules[0].when"},
		{func(r *CustomRule) { r.When[0].Figure = "gpu_util" }, "custom_rules[0].when[0].figure"},
		{func(r *CustomRule) { r.When[0].Op = "==" }, "custom_rules[0].when[0].op"},
		{func(r *CustomRule) { r.Confidence = 0 }, "custom_rules[0].confidence"},
		{func(r *CustomRule) { r.DocURL = "javascript:alert(1)" }, "custom_rules[0].doc_url"},
	} {
		r := ok
		r.When = append([]Condition(nil), ok.When...)
		tc.mut(&r)
		cfg := Default()
		cfg.CustomRules = []CustomRule{r}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", r, err, tc.want)
		}
	}
	cfg := Default()
	cfg.CustomRules = []CustomRule{ok, ok}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "custom_rules[1].id") {
		t.Errorf("duplicate id: %v", err)
	}
}
