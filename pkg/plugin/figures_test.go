package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/pkg/models"
)

func TestPeriodStart(t *testing.T) {
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		a    models.Allocation
		want time.Time
	}{
		{models.Allocation{PeriodDays: 365}, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{models.Allocation{PeriodDays: 30, Start: "2026-01-01"}, time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC).Add(-30 * 24 * time.Hour)},
		{models.Allocation{PeriodDays: 1, Start: "2020-01-01"}, time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)},
		// A period shorter than a day (refused by the settings) cannot hang.
		{models.Allocation{PeriodDays: 1e-15, Start: "2026-01-01"}, time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)},
		{models.Allocation{PeriodDays: 365, Start: "2027-01-01"}, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		if got := periodStart(c.a, at); !got.Equal(c.want) {
			t.Errorf("%+v: period starts %s, want %s", c.a, got, c.want)
		}
	}
}

func job(id string, start, end time.Time, final bool, cpus int64, coreSeconds *float64) jobmodel.Job {
	j := jobmodel.Job{Cluster: "c", JobID: id, DocID: "c:" + id, User: "u", StartTime: jobmodel.At(start), Final: final}
	if final {
		j.EndTime = jobmodel.At(end)
		j.ElapsedSeconds = jobmodel.Ptr(end.Sub(start).Seconds())
	}
	j.Requested.CPUs = jobmodel.Ptr(cpus)
	if coreSeconds != nil {
		j.CPU = &jobmodel.CPUUsage{CoreSeconds: coreSeconds}
	}
	return j
}

// A job running now has its use in the last bucket of the history (the
// last bucket used to start at the range's end and stay 0).
func TestHistoryLastBucketHoldsRunningJobs(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	from := now.Add(-24 * time.Hour)
	g := newGrid(from, now, 24*time.Hour/100, time.UTC)
	lvl := make([]float64, g.n())
	addRunning(g, lvl, 2, now.Add(-3*time.Hour), now)
	if last := lvl[len(lvl)-1]; last < 1.99 || last > 2.01 {
		t.Errorf("last bucket %g cores, want 2", last)
	}
	if tl := g.bounds[g.n()-1]; !tl.Before(now) {
		t.Errorf("last bucket starts at %s, not before the range's end %s", tl, now)
	}
	if lvl[0] != 0 {
		t.Errorf("first bucket %g, want 0", lvl[0])
	}
}

// Unused hours are counted only over jobs whose use is known: a job whose
// CPU time could not be read adds to reserved, not to unused, and is
// counted as lacking its CPU use.
func TestReservationWasteOnlyOverKnownUse(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	a := job("1", now.Add(-5*time.Hour), now, true, 2, jobmodel.Ptr(10*3600.0)) // 10 of 10 CPU-hours used
	b := job("2", now.Add(-5*time.Hour), now, true, 2, nil)                     // use unknown
	r := &sums{}
	for _, j := range []jobmodel.Job{a, b} {
		one := &sums{}
		one.addFigures(jobFigures(&j, now))
		r.merge(one)
	}
	fr := reservationFrame(models.GroupUser, map[string]*sums{"u": r}, []string{"u"})
	get := func(name string) float64 {
		f, _ := fr.FieldByName(name)
		v, _ := f.NullableFloatAt(0)
		if v == nil {
			return -1
		}
		return *v
	}
	if got := get("cpu_hours_reserved"); got != 20 {
		t.Errorf("reserved %g, want 20", got)
	}
	if got := get("cpu_hours_wasted"); got != 0 {
		t.Errorf("unused %g, want 0 (the job without a reading is not waste)", got)
	}
	if r.missing[jobmodel.FigCoreUsed] != 1 || r.jobs != 2 {
		t.Errorf("jobs %d, lacking CPU use %d; want 2 and 1", r.jobs, r.missing[jobmodel.FigCoreUsed])
	}
}

// Allocation: a job that started before the range keeps its hours from the
// period's start, not only those inside the range.
func TestAllocationCountsHoursBeforeTheRange(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	j := job("1", now.Add(-20*24*time.Hour), now, false, 1, nil) // 480 CPU-hours so far
	a := models.Allocation{Cluster: "c", Resource: "cpu", Hours: 1000, PeriodDays: 365}
	times := []time.Time{now.Add(-7 * 24 * time.Hour), now}
	reserved, _ := accrue(a, models.ResourceCPU, periodStart(a, now), times, []jobmodel.Job{j}, []figures{jobFigures(&j, now)})
	if reserved[0] < 311 || reserved[0] > 313 {
		t.Errorf("a week before now: %g CPU-hours, want 312 (13 days before the range)", reserved[0])
	}
	if reserved[1] < 479 || reserved[1] > 481 {
		t.Errorf("now: %g CPU-hours, want 480", reserved[1])
	}
	other := models.Allocation{Cluster: "d", Resource: "cpu", Hours: 1, PeriodDays: 365}
	if r, _ := accrue(other, models.ResourceCPU, periodStart(other, now), times, []jobmodel.Job{j}, []figures{jobFigures(&j, now)}); r[1] != 0 {
		t.Errorf("another cluster's allocation counts the job: %v", r)
	}
}

// A search answer with failed shards is partial and says so; one without
// failures says nothing.
func TestShardsFailed(t *testing.T) {
	if n := shardsFailed([]byte(`{"took":3,"timed_out":false,"_shards":{"total":12,"successful":11,"skipped":0,"failed":1,"failures":[{"shard":0,"index":"jobsight-jobs","reason":{"type":"query_shard_exception","reason":"No mapped field found"}}]},"hits":{}}`)); !strings.Contains(n, "1 of 12") || !strings.Contains(n, "No mapped field") {
		t.Errorf("failed shards: %q", n)
	}
	for _, ok := range []string{`{"_shards":{"total":1,"successful":1,"skipped":0,"failed":0},"hits":{}}`, `{"hits":{}}`, `{"_shards":`} {
		if n := shardsFailed([]byte(ok)); n != "" {
			t.Errorf("%s: %q", ok, n)
		}
	}
}
