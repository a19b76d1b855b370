package plugin

// Usage over time from aggregations. A finished job holds and uses its
// mean amounts (totals.cores_reserved, totals.cores_used, ...) from its
// start to its end, so the amount in use at any moment is the sum of the
// amounts of the jobs started before it minus those of the jobs ended
// before it. Two date histograms of those sums, one on start_time and one
// on end_time, give the level at every bucket boundary whatever the number of
// jobs (the start histogram's buckets before the first one give the level
// it starts from); within a bucket a job that starts or ends there counts for half
// of it (the midpoint rule: exact for the bucket's total when starts and
// ends are spread evenly over it). Buckets follow the dashboard's time
// zone: day-long buckets start at local midnight, hours are local hours.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/jobsight/jobsight/pkg/models"
)

// grid is a sequence of buckets: bucket k is [bounds[k], bounds[k+1]).
type grid struct {
	bounds []time.Time
	step   time.Duration
	days   int // > 0: the step is this many calendar days
	loc    *time.Location
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
// amounts fields (totals.<field>) over the grid.
func levelAggs(g grid, fields []string) map[string]any {
	sums := map[string]any{}
	for _, f := range fields {
		sums[f] = map[string]any{"sum": map[string]any{"field": "totals." + f}}
	}
	hist := func(field string) map[string]any {
		return map[string]any{"date_histogram": map[string]any{"field": field, "fixed_interval": g.interval(),
			"time_zone": g.loc.String(), "format": "epoch_millis", "min_doc_count": 1}, "aggs": sums}
	}
	return map[string]any{
		"starts": hist("start_time"),
		"ends":   hist("end_time"),
	}
}

// levelBucket is one bucket of the level aggregations: its key and the
// sums by field.
type levelBucket struct {
	Key  any `json:"key"`
	sums map[string]float64
}

func (b *levelBucket) UnmarshalJSON(raw []byte) error {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return err
	}
	b.sums = map[string]float64{}
	for k, v := range all {
		switch k {
		case "key":
			if err := json.Unmarshal(v, &b.Key); err != nil {
				return err
			}
		case "doc_count", "key_as_string", "from", "to", "from_as_string", "to_as_string":
		default:
			var m valueAgg
			if json.Unmarshal(v, &m) == nil && m.Value != nil {
				b.sums[k] = *m.Value
			}
		}
	}
	return nil
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
// bucket of the grid.
func (a *levelAnswer) levels(g grid, fields []string) (map[string][]float64, error) {
	n := g.n()
	out := map[string][]float64{}
	for _, f := range fields {
		delta := make([]float64, n) // starts − ends in each bucket
		level := 0.0                // at the first bucket's start
		for _, h := range []struct {
			buckets []levelBucket
			sign    float64
		}{{a.Starts.Buckets, 1}, {a.Ends.Buckets, -1}} {
			for _, b := range h.buckets {
				t, ok := bucketTime(b.Key)
				if !ok {
					return nil, fmt.Errorf("a histogram key %v is not a time", b.Key)
				}
				switch i := g.index(t); {
				case i >= 0:
					delta[i] += h.sign * b.sums[f]
				case t.Before(g.bounds[0]):
					level += h.sign * b.sums[f]
				}
			}
		}
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = max(level+delta[i]/2, 0)
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
