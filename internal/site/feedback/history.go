// Package feedback is what the site command `jobsight` does with analysed
// jobs: it re-analyses jobs, renders reports, mails digests, rolls up
// per-user and per-account history and exports efficiency figures. The
// analysis itself is internal/analysis; the renderers internal/report; delivery
// internal/site/notify.
package feedback

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// AdvisoryRule says when a user or account is flagged for repeated
// inefficiency: in this period and the one before, at least MinJudged jobs
// were judged and at least MinBadShare of them were inefficient or wasted.
type AdvisoryRule struct {
	MinJudged   int64   `yaml:"min_judged"`
	MinBadShare float64 `yaml:"min_bad_share"`
}

// DefaultAdvisory is the default rule: 5 judged jobs, half of them
// inefficient or wasted, two periods running.
var DefaultAdvisory = AdvisoryRule{MinJudged: 5, MinBadShare: 0.5}

// Validate names the option that is wrong.
func (r AdvisoryRule) Validate() error {
	if r.MinJudged < 1 {
		return fmt.Errorf("history.advisory.min_judged: %d must be at least 1", r.MinJudged)
	}
	if !(r.MinBadShare > 0 && r.MinBadShare <= 1) {
		return fmt.Errorf("history.advisory.min_bad_share: %v must be in (0, 1]", r.MinBadShare)
	}
	return nil
}

// Rollup computes the history entries of one period [start, end) from the
// results of that period (cur) and of the period of the same length before
// it (prev), for every user and account in cur.
func Rollup(cluster string, start, end time.Time, cur, prev []jobmodel.Result, rule AdvisoryRule, now time.Time) []jobmodel.History {
	before := group(prev)
	var out []jobmodel.History
	for key, rs := range group(cur) {
		h := summarise(rs)
		h.Cluster, h.Kind, h.Name = cluster, key.kind, key.name
		h.DocID = fmt.Sprintf("%s:%s:%s:%s", cluster, key.kind, key.name, end.UTC().Format("2006-01-02T15:04Z"))
		h.SchemaVersion = jobmodel.SchemaVersion
		h.PeriodStart, h.PeriodEnd, h.UpdatedAt = jobmodel.At(start.UTC()), jobmodel.At(end.UTC()), jobmodel.At(now.UTC())
		p, hadPrev := before[key]
		var ph jobmodel.History
		if hadPrev {
			ph = summarise(p)
			if h.MedianScore != nil && ph.MedianScore != nil {
				h.Trend = jobmodel.Ptr(*h.MedianScore - *ph.MedianScore)
			}
		}
		if bad(h, rule) && hadPrev && bad(ph, rule) {
			h.Advisory = true
			h.AdvisoryReason = fmt.Sprintf("%.0f%% of %d judged jobs inefficient or wasted, after %.0f%% of %d in the period before",
				100*(h.Shares.Inefficient+h.Shares.Wasted), h.Judged, 100*(ph.Shares.Inefficient+ph.Shares.Wasted), ph.Judged)
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DocID < out[j].DocID })
	return out
}

func bad(h jobmodel.History, r AdvisoryRule) bool {
	return h.Judged >= r.MinJudged && h.Shares.Inefficient+h.Shares.Wasted >= r.MinBadShare
}

type groupKey struct{ kind, name string }

// group sorts results by user and by account (a job counts for both).
func group(rs []jobmodel.Result) map[groupKey][]jobmodel.Result {
	g := map[groupKey][]jobmodel.Result{}
	for _, r := range rs {
		if r.User != "" {
			k := groupKey{"user", r.User}
			g[k] = append(g[k], r)
		}
		if r.Account != "" {
			k := groupKey{"account", r.Account}
			g[k] = append(g[k], r)
		}
	}
	return g
}

// summarise counts classes, medians and hours over results.
func summarise(rs []jobmodel.Result) jobmodel.History {
	var h jobmodel.History
	var gpuUtil, cpuEff, scores []float64
	for _, r := range rs {
		a := r.Analysis
		h.Jobs++
		switch a.Class {
		case jobmodel.ClassEfficient:
			h.Classes.Efficient++
		case jobmodel.ClassAcceptable:
			h.Classes.Acceptable++
		case jobmodel.ClassInefficient:
			h.Classes.Inefficient++
		case jobmodel.ClassWasted:
			h.Classes.Wasted++
		case jobmodel.ClassShort:
			h.Classes.Short++
		default:
			h.Classes.Unknown++
		}
		h.GPUHours = addF(h.GPUHours, a.Figures.GPUHours)
		h.GPUHoursWasted = addF(h.GPUHoursWasted, a.Figures.GPUHoursWasted)
		h.CoreHours = addF(h.CoreHours, a.Figures.CoreHours)
		h.CoreHoursWasted = addF(h.CoreHoursWasted, a.Figures.CoreHoursWasted)
		if !judged(a.Class) {
			continue
		}
		if a.Score != nil {
			scores = append(scores, *a.Score)
		}
		if a.Kind == jobmodel.KindGPU && a.Figures.GPUUtilization != nil {
			gpuUtil = append(gpuUtil, *a.Figures.GPUUtilization)
		}
		if a.Kind == jobmodel.KindCPU && a.Figures.CPUEfficiency != nil {
			cpuEff = append(cpuEff, *a.Figures.CPUEfficiency)
		}
	}
	c := h.Classes
	h.Judged = c.Efficient + c.Acceptable + c.Inefficient + c.Wasted
	if h.Judged > 0 {
		n := float64(h.Judged)
		h.Shares = jobmodel.ClassShares{Efficient: float64(c.Efficient) / n, Acceptable: float64(c.Acceptable) / n,
			Inefficient: float64(c.Inefficient) / n, Wasted: float64(c.Wasted) / n}
	}
	h.MedianGPUUtilization, h.MedianCPUEfficiency, h.MedianScore = median(gpuUtil), median(cpuEff), median(scores)
	return h
}

func judged(class string) bool {
	switch class {
	case jobmodel.ClassEfficient, jobmodel.ClassAcceptable, jobmodel.ClassInefficient, jobmodel.ClassWasted:
		return true
	}
	return false
}

func median(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	v = slices.Clone(v)
	slices.Sort(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + m) / 2
	}
	return &m
}

func addF(acc, v *float64) *float64 {
	if v == nil {
		return acc
	}
	if acc == nil {
		return jobmodel.Ptr(*v)
	}
	return jobmodel.Ptr(*acc + *v)
}
