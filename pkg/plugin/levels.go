package plugin

// Usage over time from aggregations. A finished job holds and uses its
// mean amounts (totals.cores_reserved, totals.cores_used, ...) from its
// start to its end, so the amount in use at any moment is the sum of the
// amounts of the jobs started before it minus those of the jobs ended
// before it. Two date histograms of those sums, one on start_time and one
// on end_time, give the level at every bucket boundary whatever the number of
// jobs (the start histogram's buckets before the first one give the level
// it starts from); within a bucket, the sums of the amounts times their
// starts and runs place each one exactly (levels). Buckets follow the dashboard's time
// zone: day-long buckets start at local midnight, hours are local hours.

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/pkg/models"
)

// grid is a sequence of buckets: bucket k is [bounds[k], bounds[k+1]).
// A bucket's level is the mean over the whole bucket (the jobs of the
// scope are those overlapping the grid's bounds, not only the range),
// except that the part of a bucket after until (now: what is still to
// come) is not in its mean.
type grid struct {
	bounds []time.Time
	step   time.Duration
	days   int // > 0: the step is this many calendar days
	loc    *time.Location
	until  time.Time // zero: no bucket is cut
}

// maxBuckets bounds the buckets of one histogram (Elasticsearch refuses
// more than 65,536 in one answer; two histograms are asked for).
const maxBuckets = 20000

// newGrid covers [from, to) with buckets of step aligned in loc: a step
// of whole days starts at local midnight (of a day whose number since
// 1970-01-01 is a multiple of the step, as Elasticsearch aligns fixed
// intervals in a time zone), a shorter one at a multiple of the step
// from local midnight.
func newGrid(from, to time.Time, step time.Duration, loc *time.Location) grid {
	if step < time.Minute {
		step = time.Minute
	}
	if n := to.Sub(from) / step; n > maxBuckets {
		step = to.Sub(from)/maxBuckets + time.Second
	}
	g := grid{step: step, loc: loc}
	if step >= 24*time.Hour {
		g.days = int((step + 12*time.Hour) / (24 * time.Hour))
		g.step = time.Duration(g.days) * 24 * time.Hour
		l := from.In(loc)
		d0 := time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, loc)
		civil := time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, time.UTC).Unix() / 86400
		d0 = d0.AddDate(0, 0, -int(mod(civil, int64(g.days))))
		for t := d0; ; t = t.AddDate(0, 0, g.days) {
			g.bounds = append(g.bounds, t)
			if !t.Before(to) {
				break
			}
		}
		return g
	}
	s := int64(step / time.Second)
	g.step = time.Duration(s) * time.Second
	_, off := from.In(loc).Zone()
	wall := from.Unix() + int64(off)
	start := time.Unix(wall-mod(wall, s)-int64(off), 0).UTC()
	for t := start; ; t = t.Add(g.step) {
		g.bounds = append(g.bounds, t)
		if !t.Before(to) {
			break
		}
	}
	return g
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// n is the number of buckets.
func (g grid) n() int { return len(g.bounds) - 1 }

// first and last are the start of the first bucket and the end of the
// last: the finished jobs of a grid's scope are those overlapping them.
func (g grid) first() time.Time { return g.bounds[0] }
func (g grid) last() time.Time  { return g.bounds[g.n()] }

// span is the length of bucket k that its mean is over: up to until.
func (g grid) span(k int) time.Duration {
	end := g.bounds[k+1]
	if !g.until.IsZero() && g.until.Before(end) {
		end = g.until
	}
	return max(end.Sub(g.bounds[k]), 0)
}

// index is the bucket holding t, or -1.
func (g grid) index(t time.Time) int {
	i := sort.Search(len(g.bounds), func(i int) bool { return g.bounds[i].After(t) }) - 1
	if i < 0 || i >= g.n() {
		return -1
	}
	return i
}

// interval is the histogram's fixed_interval.
func (g grid) interval() string {
	if g.days > 0 {
		return strconv.Itoa(g.days) + "d"
	}
	if g.step%time.Hour == 0 {
		return strconv.Itoa(int(g.step/time.Hour)) + "h"
	}
	if g.step%time.Minute == 0 {
		return strconv.Itoa(int(g.step/time.Minute)) + "m"
	}
	return strconv.Itoa(int(g.step/time.Second)) + "s"
}

// levelAggs are the aggregations that give the levels of the mean
// amounts fields (totals.<field>) over the grid: per bucket of starts and
// of ends, each field's sum and the sum of the amounts times their
// starts (totals.start_weighted.<field>), and per bucket of ends the sum
// of their hours (amount × run), which place the amounts exactly inside
// the bucket.
func levelAggs(g grid, fields []string) map[string]any {
	sum := func(field string) map[string]any { return map[string]any{"sum": map[string]any{"field": field}} }
	hist := func(field string, ends bool) map[string]any {
		aggs := map[string]any{}
		for i, f := range fields {
			aggs[levelName("v", i)] = sum("totals." + f)
			aggs[levelName("s", i)] = sum("totals.start_weighted." + f)
			if ends {
				aggs[levelName("h", i)] = sum("totals." + hoursOf[f])
			}
		}
		return map[string]any{"date_histogram": map[string]any{"field": field, "fixed_interval": g.interval(),
			"time_zone": g.zone(), "format": "epoch_millis", "min_doc_count": 1}, "aggs": aggs}
	}
	return map[string]any{
		"starts": hist("start_time", false),
		"ends":   hist("end_time", true),
	}
}

// levelName names the sums of the i-th field in a level bucket: v (the
// amounts), s (amount × start), h (amount × run; ends only). Short fixed
// names decode into levelBucket's fields (a year of hourly buckets is
// tens of thousands of them).
func levelName(kind string, i int) string { return kind + strconv.Itoa(i) }

// maxLevelFields is how many fields one level aggregation sums.
const maxLevelFields = 2

// hoursOf names the resource-hours of each mean amount: the amount times
// the job's run.
var hoursOf = map[string]string{
	"cores_used": "core_hours_used", "cores_reserved": "core_hours_reserved",
	"gpus_used": "gpu_hours_used", "gpus_reserved": "gpu_hours_reserved",
	"memory_gib_used": "memory_gib_hours_used", "memory_gib_reserved": "memory_gib_hours_reserved",
}

// zone is the histogram's time_zone: the zone's name for day-long buckets
// (local midnights, whatever the offset that day), and for shorter ones
// the offset at the grid's start, which is how newGrid aligned them (in
// the zone's name, Elasticsearch would shift them by an hour after a
// daylight-saving change).
func (g grid) zone() string {
	if g.days > 0 || len(g.bounds) == 0 {
		return g.loc.String()
	}
	_, off := g.bounds[0].In(g.loc).Zone()
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	return fmt.Sprintf("%s%02d:%02d", sign, off/3600, off%3600/60)
}

// levelBucket is one bucket of the level aggregations: its key and the
// sums of each field (levelName).
type levelBucket struct {
	Key any      `json:"key"`
	V0  valueAgg `json:"v0"`
	S0  valueAgg `json:"s0"`
	H0  valueAgg `json:"h0"`
	V1  valueAgg `json:"v1"`
	S1  valueAgg `json:"s1"`
	H1  valueAgg `json:"h1"`
}

// sums are the i-th field's amounts, amount × start and amount × run.
func (b *levelBucket) sums(i int) (c, cs, ch float64) {
	v, s, h := b.V0, b.S0, b.H0
	if i == 1 {
		v, s, h = b.V1, b.S1, b.H1
	}
	val := func(a valueAgg) float64 {
		if a.Value == nil {
			return 0
		}
		return *a.Value
	}
	return val(v), val(s), val(h)
}

// levelAnswer is the answer to levelAggs.
type levelAnswer struct {
	Starts struct {
		Buckets []levelBucket `json:"buckets"`
	} `json:"starts"`
	Ends struct {
		Buckets []levelBucket `json:"buckets"`
	} `json:"ends"`
}

// levels turns a level answer into the mean level of each field in each
// bucket of the grid (over its span). A bucket's resource-hours are the level at its
// start over the whole bucket, plus each amount c that starts in it at s
// from s to the bucket's end b, minus each that ends in it at e from e
// to b: L·B + Σ c(b − s) − Σ c(b − e), with Σ c·s and Σ c·e = Σ c·s +
// Σ c·(e − s) from the stored sums. Exact, whatever the jobs' lengths: a
// job that starts and ends inside one bucket counts for its run.
func (a *levelAnswer) levels(g grid, fields []string) (map[string][]float64, error) {
	n := g.n()
	out := map[string][]float64{}
	if len(fields) > maxLevelFields {
		return nil, fmt.Errorf("a level aggregation sums at most %d fields", maxLevelFields)
	}
	for fi, f := range fields {
		delta := make([]float64, n) // starts − ends in each bucket
		hours := make([]float64, n) // their resource-hours in the bucket beyond the level at its start
		level := 0.0                // at the first bucket's start
		for _, h := range []struct {
			buckets []levelBucket
			ends    bool
		}{{a.Starts.Buckets, false}, {a.Ends.Buckets, true}} {
			for _, b := range h.buckets {
				t, ok := bucketTime(b.Key)
				if !ok {
					return nil, fmt.Errorf("a histogram key %v is not a time", b.Key)
				}
				c, cs, ch := b.sums(fi)
				sign := 1.0
				if h.ends {
					// Σ c·e: the amounts' starts plus their runs.
					cs += ch
					sign = -1
				}
				switch i := g.index(t); {
				case i >= 0:
					delta[i] += sign * c
					bh := g.bounds[i+1].Sub(jobmodel.TotalsEpoch).Hours()
					hours[i] += sign * (c*bh - cs)
				case t.Before(g.bounds[0]):
					level += sign * c
				}
			}
		}
		vals := make([]float64, n)
		for i := range vals {
			// The resource-hours over the whole bucket less those of the
			// jobs still held at the span's end over the rest of it (no
			// finished job starts or ends after until, now), over the
			// span.
			if sp := g.span(i); sp > 0 {
				b, s := g.bounds[i+1].Sub(g.bounds[i]).Hours(), sp.Hours()
				vals[i] = max((level*b+hours[i]-(level+delta[i])*(b-s))/s, 0)
			}
			level += delta[i]
		}
		out[f] = vals
	}
	return out, nil
}

// rateFields are the totals fields of a resource's mean used and
// reserved amounts.
func rateFields(resource string) (used, reserved string) {
	switch resource {
	case models.ResourceGPU:
		return "gpus_used", "gpus_reserved"
	case models.ResourceMemory:
		return "memory_gib_used", "memory_gib_reserved"
	}
	return "cores_used", "cores_reserved"
}
