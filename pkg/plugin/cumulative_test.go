package plugin

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestCumulative compares the one-pass running integral of a level with
// the resource-hours integrated bucket by bucket, for each time, on
// hourly and daily grids in a zone with a daylight-saving change, with
// period starts before, inside and after the grid and times on and
// between bucket bounds.
func TestCumulative(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// integrate is the reference: the overlap of [from, to) with each
	// bucket, one time at a time.
	integrate := func(g grid, lvl []float64, from, to time.Time) float64 {
		h := 0.0
		for k := 0; k < g.n(); k++ {
			if o := minT(g.bounds[k+1], to).Sub(maxT(g.bounds[k], from)); o > 0 {
				h += lvl[k] * o.Hours()
			}
		}
		return h
	}
	r := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 3, 20, 7, 30, 0, 0, time.UTC)
	for _, step := range []time.Duration{time.Hour, 3 * time.Hour, 24 * time.Hour} {
		g := newGrid(start, start.Add(30*24*time.Hour), step, berlin)
		lvl := make([]float64, g.n())
		for i := range lvl {
			lvl[i] = r.Float64() * 100
		}
		var times []time.Time
		for k := 0; k < len(g.bounds); k += 1 + r.IntN(5) {
			times = append(times, g.bounds[k])
			if k+1 < len(g.bounds) {
				times = append(times, g.bounds[k].Add(time.Duration(r.Int64N(int64(g.bounds[k+1].Sub(g.bounds[k]))))))
			}
		}
		for _, from := range []time.Time{start.Add(-48 * time.Hour), start.Add(100*time.Hour + 17*time.Minute), g.bounds[len(g.bounds)/2], start.Add(60 * 24 * time.Hour)} {
			got := cumulative(g, lvl, from, times)
			for i, at := range times {
				want := integrate(g, lvl, from, at)
				if math.Abs(got[i]-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Fatalf("step %v from %v: at %v %.9f, want %.9f", step, from, at, got[i], want)
				}
			}
		}
		if got := cumulative(g, nil, start, times); got[len(got)-1] != 0 {
			t.Errorf("no level: %v", got[len(got)-1])
		}
	}
}
