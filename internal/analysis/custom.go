package analysis

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// CustomRule is a site's own rule, added in configuration
// (analysis.custom_rules): when every condition holds on the job's
// figures, the job gets a cause with the rule's id, title, confidence,
// lesson and link. A condition on a figure the job lacks does not hold,
// so a custom rule never fires on guessed values.
type CustomRule struct {
	// ID names the cause; lowercase letters, digits and '_', not one of
	// the built-in rules' ids.
	ID    string `yaml:"id"`
	Title string `yaml:"title"`
	// Kind limits the rule to gpu or cpu jobs; empty for both.
	Kind string `yaml:"kind"`
	// Partitions limits the rule to partitions matching these names or
	// shell-style patterns; empty for every partition.
	Partitions []string    `yaml:"partitions"`
	When       []Condition `yaml:"when"`
	Confidence float64     `yaml:"confidence"`
	Lesson     string      `yaml:"lesson"`
	DocURL     string      `yaml:"doc_url"`
}

// Condition compares one of the job's figures (CustomFigures) with a value.
type Condition struct {
	Figure string  `yaml:"figure"`
	Op     string  `yaml:"op"` // <, <=, >, >=
	Value  float64 `yaml:"value"`
}

// CustomFigures are the figures custom rules can test, by name.
var CustomFigures = map[string]func(f *facts) (float64, bool){
	"gpu_utilization":     func(f *facts) (float64, bool) { return figF(f.fig.GPUUtilization) },
	"gpu_sm_activity":     func(f *facts) (float64, bool) { return figF(f.fig.GPUSMActivity) },
	"effective_gpu_ratio": func(f *facts) (float64, bool) { return figF(f.fig.EffectiveGPURatio) },
	"gpus":                func(f *facts) (float64, bool) { return figI(f.fig.GPUs) },
	"effective_gpus":      func(f *facts) (float64, bool) { return figI(f.fig.EffectiveGPUs) },
	"cpu_efficiency":      func(f *facts) (float64, bool) { return figF(f.fig.CPUEfficiency) },
	"memory_efficiency":   func(f *facts) (float64, bool) { return figF(f.fig.MemoryEfficiency) },
	"walltime_efficiency": func(f *facts) (float64, bool) { return figF(f.fig.WalltimeEfficiency) },
	"gpu_hours":           func(f *facts) (float64, bool) { return figF(f.fig.GPUHours) },
	"gpu_hours_wasted":    func(f *facts) (float64, bool) { return figF(f.fig.GPUHoursWasted) },
	"core_hours":          func(f *facts) (float64, bool) { return figF(f.fig.CoreHours) },
	"core_hours_wasted":   func(f *facts) (float64, bool) { return figF(f.fig.CoreHoursWasted) },
	"cpus":                func(f *facts) (float64, bool) { return float64(f.cpus), f.hasCPUs },
	"elapsed_hours":       func(f *facts) (float64, bool) { return f.elapsed / 3600, f.hasElapsed },
}

func figF(v *float64) (float64, bool) {
	if v == nil {
		return 0, false
	}
	return *v, true
}

func figI(v *int64) (float64, bool) {
	if v == nil {
		return 0, false
	}
	return float64(*v), true
}

var customID = regexp.MustCompile(`^[a-z][a-z0-9_]{1,47}$`)

// validateCustom checks the custom rules; errors name the option.
func validateCustom(rules []CustomRule, bad func(option, format string, args ...any)) {
	seen := map[string]bool{}
	for i, r := range rules {
		opt := fmt.Sprintf("custom_rules[%d]", i)
		switch {
		case !customID.MatchString(r.ID):
			bad(opt+".id", "%q: use 2-48 lowercase letters, digits or '_', starting with a letter", r.ID)
		case slices.Contains(CauseIDs(), r.ID):
			bad(opt+".id", "%q is a built-in rule: configure it under analysis.rules.%s", r.ID, r.ID)
		case seen[r.ID]:
			bad(opt+".id", "%q is used by another custom rule", r.ID)
		}
		seen[r.ID] = true
		if strings.TrimSpace(r.Title) == "" || len(r.Title) > 200 {
			bad(opt+".title", "must be 1-200 characters")
		}
		if r.Kind != "" && r.Kind != jobmodel.KindGPU && r.Kind != jobmodel.KindCPU {
			bad(opt+".kind", "%q: want gpu, cpu or nothing (both)", r.Kind)
		}
		if len(r.When) == 0 {
			bad(opt+".when", "needs at least one condition")
		}
		for j, c := range r.When {
			copt := fmt.Sprintf("%s.when[%d]", opt, j)
			if _, ok := CustomFigures[c.Figure]; !ok {
				bad(copt+".figure", "%q: want one of %s", c.Figure, strings.Join(customFigureNames(), ", "))
			}
			switch c.Op {
			case "<", "<=", ">", ">=":
			default:
				bad(copt+".op", "%q: want <, <=, > or >=", c.Op)
			}
			if math.IsNaN(c.Value) || math.IsInf(c.Value, 0) {
				bad(copt+".value", "must be a finite number")
			}
		}
		if !(r.Confidence > 0 && r.Confidence <= 1) {
			bad(opt+".confidence", "%v: want a number in (0, 1]", r.Confidence)
		}
		if len(r.Lesson) > 2000 {
			bad(opt+".lesson", "is longer than 2000 characters")
		}
		if r.DocURL != "" && !strings.HasPrefix(r.DocURL, "https://") && !strings.HasPrefix(r.DocURL, "http://") {
			bad(opt+".doc_url", "%q: want an http or https URL", r.DocURL)
		}
	}
}

func customFigureNames() []string {
	names := make([]string, 0, len(CustomFigures))
	for n := range CustomFigures {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// runCustom evaluates the site's rules.
func runCustom(f *facts) []jobmodel.Cause {
	var out []jobmodel.Cause
	for _, r := range f.cfg.CustomRules {
		if r.Kind != "" && r.Kind != f.kind {
			continue
		}
		if len(r.Partitions) > 0 && matchPartition(r.Partitions, f.job.Partition) == "" {
			continue
		}
		var evidence []string
		holds := true
		for _, c := range r.When {
			get, ok := CustomFigures[c.Figure]
			if !ok {
				holds = false
				break
			}
			v, ok := get(f)
			if !ok || !compare(v, c.Op, c.Value) {
				holds = false
				break
			}
			evidence = append(evidence, fmt.Sprintf("%s %s %s %s", c.Figure, strconv.FormatFloat(round2(v), 'f', -1, 64), c.Op,
				strconv.FormatFloat(c.Value, 'f', -1, 64)))
		}
		if holds {
			out = append(out, jobmodel.Cause{ID: r.ID, Title: r.Title, Confidence: r.Confidence,
				Evidence: strings.Join(evidence, "; "), Lesson: r.Lesson, DocURL: r.DocURL})
		}
	}
	return out
}

func compare(v float64, op string, ref float64) bool {
	switch op {
	case "<":
		return v < ref
	case "<=":
		return v <= ref
	case ">":
		return v > ref
	case ">=":
		return v >= ref
	}
	return false
}
