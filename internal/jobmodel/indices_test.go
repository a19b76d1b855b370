package jobmodel

import (
	"slices"
	"testing"
	"time"
)

func TestMonthlyIndexFollowsSubmitTime(t *testing.T) {
	submit := time.Date(2026, 10, 31, 23, 59, 0, 0, time.UTC)
	now := time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)
	job := Job{SubmitTime: At(submit), StartTime: At(submit.Add(2 * time.Minute))}
	// Every rewrite of a running job, in October or in November, goes to
	// the submit month's index.
	for _, at := range []time.Time{submit.Add(time.Minute), now, now.AddDate(0, 1, 0)} {
		if got := job.IndexOf("jobsight-jobs", at); got != "jobsight-jobs-2026.10" {
			t.Fatalf("job index at %v = %q, want jobsight-jobs-2026.10", at, got)
		}
	}
	node := Node{SubmitTime: At(submit), StartTime: At(now)}
	if got := node.IndexOf("jobsight-nodes", now); got != "jobsight-nodes-2026.10" {
		t.Fatalf("node index = %q, want its job's submit month", got)
	}
	res := NewResult(job, Analysis{}, Time{now})
	if got := res.IndexOf("jobsight-results", now); got != "jobsight-results-2026.10" {
		t.Fatalf("result index = %q", got)
	}
	// A submit time in another zone is placed by its UTC month.
	local := time.Date(2026, 11, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600))
	if got := MonthlyIndex("b", local); got != "b-2026.10" {
		t.Fatalf("MonthlyIndex(local) = %q, want the UTC month b-2026.10", got)
	}
	// Fallbacks: start, then now.
	if got := (Job{StartTime: At(now)}).IndexOf("b", submit); got != "b-2026.11" {
		t.Fatalf("no submit: %q", got)
	}
	if got := (Job{}).IndexOf("b", now); got != "b-2026.11" {
		t.Fatalf("no times: %q", got)
	}
}

func TestMonthOfIndex(t *testing.T) {
	for name, want := range map[string]bool{
		"jobsight-jobs-2026.11":         true,
		"jobsight-jobs-1999.01":         true,
		"jobsight-jobs":                 false,
		"jobsight-jobs-2026.13":         false,
		"jobsight-jobs-2026.00":         false,
		"jobsight-jobs-2026.1":          false,
		"jobsight-jobs-2026-11":         false,
		"jobsight-jobs-2026.11-restore": false,
		"jobsight-jobs-archive":         false,
		"jobsight-jobs-x-2026.11":       false,
		"jobsight-jobsx-2026.11":        false,
		"other-jobsight-jobs-2026.11":   false,
		"jobsight-jobs-+026.11":         false,
	} {
		if _, ok := MonthOfIndex("jobsight-jobs", name); ok != want {
			t.Errorf("MonthOfIndex(%q) = %v, want %v", name, ok, want)
		}
	}
}

func TestExpiredIndices(t *testing.T) {
	names := []string{
		"jobsight-jobs",             // the pre-0.2 single index: never
		"jobsight-jobs-2025.01",     // expired
		"jobsight-jobs-2026.02",     // expired: the newest one
		"jobsight-jobs-2026.03",     // kept: 12 months back
		"jobsight-jobs-2027.02",     // last month
		"jobsight-jobs-2027.03",     // current month
		"jobsight-jobs-2027.04",     // a future month (a clock ahead): kept
		"jobsight-jobs-archive",     // not a monthly index
		"jobsight-jobs-2020.01-old", // not a monthly index
		"jobsight-nodes-2020.01",    // another base
		"jobsight-jobs-2020.13",     // no such month
	}
	now := time.Date(2027, 3, 15, 12, 0, 0, 0, time.UTC)
	got := ExpiredIndices("jobsight-jobs", names, now, 12)
	want := []string{"jobsight-jobs-2025.01", "jobsight-jobs-2026.02"}
	if !slices.Equal(got, want) {
		t.Fatalf("ExpiredIndices(12) = %v, want %v", got, want)
	}
	if got := ExpiredIndices("jobsight-jobs", names, now, 0); got != nil {
		t.Fatalf("retention 0 must keep everything, got %v", got)
	}
	// The shortest retention still keeps the current and the last month.
	got = ExpiredIndices("jobsight-jobs", names, now, 1)
	for _, n := range got {
		if n == "jobsight-jobs-2027.02" || n == "jobsight-jobs-2027.03" {
			t.Fatalf("retention 1 deletes %s", n)
		}
	}
	if !slices.Contains(got, "jobsight-jobs-2026.03") {
		t.Fatalf("retention 1: %v lacks 2026.03", got)
	}
	// On the first of a month, at midnight UTC, the month just ended is kept.
	first := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)
	if got := ExpiredIndices("jobsight-jobs", []string{"jobsight-jobs-2027.02"}, first, 1); got != nil {
		t.Fatalf("on the first, last month expired: %v", got)
	}
}
