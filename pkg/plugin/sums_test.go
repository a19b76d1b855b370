package plugin

import (
	"testing"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// TestUnusedIsNullWhenNoJobHasBoth: a group's unused core-hours are
// derived from each job's reserved and used ones; when every job lacks
// one of the two (some the reserved, the others the used), no job gives
// the unused amount and the column must be empty, not the 0 that
// Elasticsearch sums over no value. Before, the jobs lacking it were
// counted as the larger of the two missing counts, not the jobs lacking
// either.
func TestUnusedIsNullWhenNoJobHasBoth(t *testing.T) {
	zero, ten := 0.0, 10.0
	bucket := func(missing map[string]int64, jobs int64) *totalsBucket {
		b := &totalsBucket{DocCount: jobs, values: map[string]valueAgg{
			"core_hours_reserved": {Value: &ten}, "core_hours_used": {Value: &ten}, "core_hours_unused": {Value: &zero}}}
		b.With.Buckets = []termCount{{Key: float64(1), DocCount: jobs}}
		for k, n := range missing {
			b.Missing.Buckets = append(b.Missing.Buckets, termCount{Key: k, DocCount: n})
		}
		return b
	}
	// Three jobs: one lacks the reserved core-hours, two the used ones.
	s := sumsOf(bucket(map[string]int64{jobmodel.FigCoreReserved: 1, jobmodel.FigCoreUsed: 2}, 3))
	if s.cpuUnused != nil {
		t.Errorf("unused core-hours %v, want none: no job has both figures", *s.cpuUnused)
	}
	if s.cpuRes == nil || s.cpuUsed == nil {
		t.Errorf("reserved %v and used %v: each has jobs with the figure", s.cpuRes, s.cpuUsed)
	}
	// A fourth job with both: the unused amount is its.
	s = sumsOf(bucket(map[string]int64{jobmodel.FigCoreReserved: 1, jobmodel.FigCoreUsed: 2}, 4))
	if s.cpuUnused == nil {
		t.Error("unused core-hours empty, want the one job's with both figures")
	}
	// One job lacking both counts once.
	s = sumsOf(bucket(map[string]int64{jobmodel.FigCoreReserved + "," + jobmodel.FigCoreUsed: 1}, 2))
	if s.cpuUnused == nil {
		t.Error("unused core-hours empty, want the other job's")
	}
}
