package aggregate

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// sample is one Add: value v held for dt seconds.
type sample struct{ v, dt float64 }

// exact holds the exact answers a Series approximates.
type exact struct {
	avg, max, min float64
	sorted        []float64
}

func exactOf(samples []sample) exact {
	var sum, secs float64
	e := exact{min: math.Inf(1), max: math.Inf(-1)}
	for _, s := range samples {
		sum += s.v * s.dt
		secs += s.dt
		e.min, e.max = math.Min(e.min, s.v), math.Max(e.max, s.v)
		e.sorted = append(e.sorted, s.v)
	}
	slices.Sort(e.sorted)
	e.avg = sum / secs
	return e
}

// quantile is the lower quantile: the sample of rank floor(q·(n-1)).
func (e exact) quantile(q float64) float64 {
	return e.sorted[int(math.Floor(q*float64(len(e.sorted)-1)))]
}

func seriesOf(threshold float64, samples []sample) Series {
	s := NewSeries(threshold)
	for _, x := range samples {
		s.Add(x.v, x.dt)
	}
	return s
}

// relErr returns |got-want|/want, or |got| when want is 0.
func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

// quantileTolerance allows the documented bound plus floating-point rounding
// at bucket boundaries.
const quantileTolerance = RelativeAccuracy * (1 + 1e-9)

// datasets returns named random data sets of n samples with dt in [1, 5) s.
func datasets(n int) map[string][]sample {
	r := rand.New(rand.NewPCG(1, 2))
	gen := func(f func() float64) []sample {
		out := make([]sample, n)
		for i := range out {
			out[i] = sample{v: f(), dt: 1 + 4*r.Float64()}
		}
		return out
	}
	return map[string][]sample{
		"uniform cores": gen(func() float64 { return 64 * r.Float64() }),
		"exponential bytes": gen(func() float64 {
			return 8e9 * r.ExpFloat64()
		}),
		"bimodal idle and busy": gen(func() float64 {
			if r.IntN(2) == 0 {
				return 1e-3 * (1 + r.Float64())
			}
			return 32 + r.NormFloat64()
		}),
		"constant": gen(func() float64 { return 3.7 }),
		"forty percent zeros": gen(func() float64 {
			if r.IntN(10) < 4 {
				return 0
			}
			return 100 * r.Float64()
		}),
		"ninety-nine percent zeros": gen(func() float64 {
			if r.IntN(100) < 99 {
				return 0
			}
			return 1 + r.Float64()
		}),
		"log-uniform 1e-4 to 1e14": gen(func() float64 {
			return math.Pow(10, -4+18*r.Float64())
		}),
	}
}

func TestSeriesAgainstExact(t *testing.T) {
	t.Parallel()
	for name, data := range datasets(20000) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, want := seriesOf(0, data), exactOf(data)
			if got := s.Count(); got != int64(len(data)) {
				t.Errorf("Count() = %d, want %d", got, len(data))
			}
			if avg, ok := s.Avg(); !ok || relErr(avg, want.avg) > 1e-9 {
				t.Errorf("Avg() = %v, %v; want %v", avg, ok, want.avg)
			}
			if max, ok := s.Max(); !ok || max != want.max {
				t.Errorf("Max() = %v, %v; want %v", max, ok, want.max)
			}
			if min, ok := s.Min(); !ok || min != want.min {
				t.Errorf("Min() = %v, %v; want %v", min, ok, want.min)
			}
			for _, q := range []float64{0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1} {
				got, ok := s.Quantile(q)
				w := want.quantile(q)
				if !ok || relErr(got, w) > quantileTolerance {
					t.Errorf("Quantile(%v) = %v, %v; want %v within %v (relative error %.3g)",
						q, got, ok, w, RelativeAccuracy, relErr(got, w))
				}
			}
			if got, _ := s.Quantile(1); got != want.max {
				t.Errorf("Quantile(1) = %v, want exact max %v", got, want.max)
			}
			if err := s.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}
		})
	}
}

func TestSeriesZerosAreExact(t *testing.T) {
	t.Parallel()
	s := NewSeries(0)
	for range 90 {
		s.Add(0, 1)
	}
	for range 10 {
		s.Add(5, 1)
	}
	for _, q := range []float64{0, 0.5, 0.89} {
		if got, _ := s.Quantile(q); got != 0 {
			t.Errorf("Quantile(%v) = %v, want exactly 0", q, got)
		}
	}
	if got, _ := s.Quantile(0.95); got != 5 {
		t.Errorf("Quantile(0.95) = %v, want 5 (clamped to the only positive value)", got)
	}
}

func TestSeriesTimeWeighting(t *testing.T) {
	t.Parallel()
	s := NewSeries(0)
	s.Add(10, 9)
	s.Add(0, 1)
	if avg, ok := s.Avg(); !ok || avg != 9 {
		t.Errorf("10 held 9 s and 0 held 1 s: Avg() = %v, %v; want 9", avg, ok)
	}
	s.Add(100, 0.5)
	if avg, _ := s.Avg(); relErr(avg, 140.0/10.5) > 1e-15 {
		t.Errorf("after 100 held 0.5 s: Avg() = %v, want %v", avg, 140.0/10.5)
	}
	// Quantiles count samples, not seconds: the median of {0, 10, 100} is 10.
	if p50, _ := s.Quantile(0.5); relErr(p50, 10) > quantileTolerance {
		t.Errorf("Quantile(0.5) = %v, want 10", p50)
	}
}

func TestSeriesActiveSeconds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		threshold float64
		samples   []sample
		want      float64
	}{
		{"above and below", 0.5, []sample{{1, 5}, {0.2, 3}, {0.8, 2}, {0.5, 7}}, 7},
		{"equal to threshold is not active", 2, []sample{{2, 10}}, 0},
		{"disabled by zero", 0, []sample{{1, 5}, {3, 5}}, 0},
		{"disabled by negative", -1, []sample{{1, 5}}, 0},
		{"disabled by NaN", math.NaN(), []sample{{1, 5}}, 0},
		{"rejected samples do not count", 0.5, []sample{{1, 5}, {math.NaN(), 5}, {1, -1}}, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := seriesOf(tc.threshold, tc.samples)
			if got := s.ActiveSeconds(); got != tc.want {
				t.Errorf("ActiveSeconds() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSeriesRejectsBadInput(t *testing.T) {
	t.Parallel()
	s := NewSeries(1)
	for _, x := range []sample{
		{math.NaN(), 1}, {math.Inf(1), 1}, {math.Inf(-1), 1}, {-1, 1}, {-1e-300, 1},
		{1, 0}, {1, -1}, {1, math.NaN()}, {1, math.Inf(1)},
		{math.MaxFloat64, 2}, // v·dt overflows
	} {
		s.Add(x.v, x.dt)
	}
	if s.Count() != 0 || s.Rejected != 10 {
		t.Errorf("after 10 bad Adds: Count() = %d, Rejected = %d; want 0 and 10", s.Count(), s.Rejected)
	}
	if _, ok := s.Avg(); ok {
		t.Error("Avg() reports a value for a series with no accepted samples")
	}
	if _, ok := s.Max(); ok {
		t.Error("Max() reports a value for a series with no accepted samples")
	}
	if _, ok := s.Quantile(0.5); ok {
		t.Error("Quantile(0.5) reports a value for a series with no accepted samples")
	}
	s.Add(2, 1)
	for _, q := range []float64{-0.1, 1.1, math.NaN()} {
		if v, ok := s.Quantile(q); ok {
			t.Errorf("Quantile(%v) = %v, true; want false for q outside [0, 1]", q, v)
		}
	}
	if err := s.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
}

func TestSeriesMergeEqualsAddingAll(t *testing.T) {
	t.Parallel()
	for name, data := range datasets(5000) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cut := len(data) / 3
			whole := seriesOf(1, data)
			a, b := seriesOf(1, data[:cut]), seriesOf(1, data[cut:])
			a.Add(math.NaN(), 1)
			b.Add(-1, 1)
			whole.Rejected += 2
			a.Merge(&b)
			if !reflect.DeepEqual(a.Buckets, whole.Buckets) || a.Zeros != whole.Zeros ||
				a.Samples != whole.Samples || a.Rejected != whole.Rejected ||
				a.MinValue != whole.MinValue || a.MaxValue != whole.MaxValue {
				t.Fatalf("merged series differs from one fed everything:\nmerged %+v\nwhole  %+v", a, whole)
			}
			for _, q := range []float64{0.5, 0.95, 0.99} {
				got, _ := a.Quantile(q)
				want, _ := whole.Quantile(q)
				if got != want {
					t.Errorf("Quantile(%v): merged %v, whole %v", q, got, want)
				}
			}
			gotAvg, _ := a.Avg()
			wantAvg, _ := whole.Avg()
			if relErr(gotAvg, wantAvg) > 1e-12 {
				t.Errorf("Avg(): merged %v, whole %v", gotAvg, wantAvg)
			}
			if relErr(a.ActiveSeconds(), whole.ActiveSeconds()) > 1e-12 {
				t.Errorf("ActiveSeconds(): merged %v, whole %v", a.ActiveSeconds(), whole.ActiveSeconds())
			}
		})
	}
}

func TestSeriesMergeWithEmpty(t *testing.T) {
	t.Parallel()
	data := datasets(100)["uniform cores"]
	full := seriesOf(0, data)
	var empty Series

	a := full
	a.Buckets = slices.Clone(full.Buckets)
	a.Merge(&empty)
	a.Merge(nil)
	if !reflect.DeepEqual(a, full) {
		t.Errorf("merging an empty series changed it:\n got %+v\nwant %+v", a, full)
	}
	var b Series
	b.Merge(&full)
	if !reflect.DeepEqual(b, full) {
		t.Errorf("merging into an empty series:\n got %+v\nwant %+v", b, full)
	}
}

func TestSeriesJSONRoundTrip(t *testing.T) {
	t.Parallel()
	data := datasets(3000)
	for _, name := range []string{"log-uniform 1e-4 to 1e14", "forty percent zeros", "constant"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := seriesOf(0.3, data[name])
			s.Add(math.NaN(), 1)
			blob, err := json.Marshal(&s)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			var back Series
			if err := json.Unmarshal(blob, &back); err != nil {
				t.Fatalf("json.Unmarshal: %v", err)
			}
			if !reflect.DeepEqual(back, s) {
				t.Fatalf("round trip changed the series:\n got %+v\nwant %+v", back, s)
			}
			for q := 0.0; q <= 1; q += 0.01 {
				got, _ := back.Quantile(q)
				want, _ := s.Quantile(q)
				if got != want {
					t.Errorf("Quantile(%v) after round trip = %v, want %v", q, got, want)
				}
			}
			// A restored series keeps working as a checkpoint continues.
			back.Add(7, 1)
			s.Add(7, 1)
			if !reflect.DeepEqual(back, s) {
				t.Errorf("Add after round trip diverged")
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		s := NewSeries(2)
		blob, err := json.Marshal(&s)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		var back Series
		if err := json.Unmarshal(blob, &back); err != nil {
			t.Fatalf("json.Unmarshal(%s): %v", blob, err)
		}
		if !reflect.DeepEqual(back, s) {
			t.Errorf("round trip of %s: got %+v, want %+v", blob, back, s)
		}
	})
}

func TestSeriesRejectsCorruptCheckpoint(t *testing.T) {
	t.Parallel()
	good := `"active_threshold":0,"samples":3,"rejected":0,"seconds":3,"weighted_sum":6,` +
		`"active_seconds":0,"min":1,"max":3,"zeros":0`
	tests := []struct {
		name, json, wantErr string
	}{
		{"wrong type", `{"samples":"three"}`, "decoding series"},
		{"unsorted buckets", `{` + good + `,"buckets":[{"i":50,"n":1},{"i":10,"n":2}]}`, "buckets[1]"},
		{"duplicate bucket", `{` + good + `,"buckets":[{"i":10,"n":1},{"i":10,"n":2}]}`, "buckets[1]"},
		{"empty bucket", `{` + good + `,"buckets":[{"i":10,"n":0},{"i":11,"n":3}]}`, "count 0"},
		{"counts disagree with samples", `{` + good + `,"buckets":[{"i":10,"n":1}]}`, "samples is 3"},
		{"negative seconds", `{"samples":0,"seconds":-1}`, "seconds is -1"},
		{"negative samples", `{"samples":-2}`, "samples is -2"},
		// 2^63 + (2^63+3) wraps to 3, which the samples field matches.
		{"counts wrap past 2^64", `{"active_threshold":0,"samples":3,"rejected":0,"seconds":3,"weighted_sum":6,` +
			`"active_seconds":0,"min":1,"max":3,"zeros":9223372036854775808,"buckets":[{"i":10,"n":9223372036854775811}]}`,
			"exceed 2^64-1"},
		{"min above max", `{"samples":1,"seconds":1,"weighted_sum":1,"min":5,"max":1,"buckets":[{"i":1,"n":1}]}`, "min 5 is above max 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var s Series
			err := json.Unmarshal([]byte(tc.json), &s)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("json.Unmarshal(%s) error = %v, want one mentioning %q", tc.json, err, tc.wantErr)
			}
		})
	}
}

// spreadSamples returns one sample in each of n consecutive buckets
// starting at bucket first.
func spreadSamples(first, n int) []sample {
	out := make([]sample, n)
	for k := range out {
		// The centre of bucket first+k sits safely inside it.
		out[k] = sample{v: bucketCentre(int32(first + k)), dt: 1}
	}
	return out
}

func TestSeriesCollapsesLowestBuckets(t *testing.T) {
	t.Parallel()
	data := spreadSamples(-3000, MaxBuckets+1000)
	r := rand.New(rand.NewPCG(3, 4))
	r.Shuffle(len(data), func(i, j int) { data[i], data[j] = data[j], data[i] })
	s, want := seriesOf(0, data), exactOf(data)

	if len(s.Buckets) != MaxBuckets {
		t.Errorf("len(Buckets) = %d, want the cap %d", len(s.Buckets), MaxBuckets)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
	if s.Count() != int64(len(data)) {
		t.Errorf("Count() = %d, want %d", s.Count(), len(data))
	}
	// 1000 of 5096 buckets were collapsed: quantiles above the lowest ~20 %
	// keep the bound.
	for _, q := range []float64{0.3, 0.5, 0.95, 0.99} {
		got, _ := s.Quantile(q)
		if w := want.quantile(q); relErr(got, w) > quantileTolerance {
			t.Errorf("Quantile(%v) = %v, want %v within %v", q, got, w, RelativeAccuracy)
		}
	}
	if got, _ := s.Quantile(0); got != want.min {
		t.Errorf("Quantile(0) = %v, want exact min %v", got, want.min)
	}

	a := seriesOf(0, spreadSamples(-3000, 3000))
	b := seriesOf(0, spreadSamples(0, 3000))
	a.Merge(&b)
	if len(a.Buckets) != MaxBuckets || a.Validate() != nil {
		t.Errorf("merged: len(Buckets) = %d, Validate() = %v; want %d and nil", len(a.Buckets), a.Validate(), MaxBuckets)
	}
}

func TestSeriesAddDoesNotAllocate(t *testing.T) {
	// Not parallel: AllocsPerRun counts allocations of the whole process.
	values := make([]float64, 1024)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range values {
		values[i] = 1e9 * r.ExpFloat64()
	}
	s := NewSeries(1e9)
	for _, v := range values {
		s.Add(v, 1)
	}
	i := 0
	if n := testing.AllocsPerRun(10000, func() {
		s.Add(values[i%len(values)], 1)
		i++
	}); n != 0 {
		t.Errorf("Add over already seen buckets: %v allocations per call, want 0", n)
	}

	full := seriesOf(0, spreadSamples(0, MaxBuckets))
	k := MaxBuckets
	if n := testing.AllocsPerRun(1000, func() {
		full.Add(bucketCentre(int32(k)), 1) // a new bucket each time
		k++
	}); n != 0 {
		t.Errorf("Add of new buckets at the cap: %v allocations per call, want 0", n)
	}
}

func FuzzSeries(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 240, 63, 0, 0, 0, 0, 0, 0, 240, 63}, 0.95, 0.5)
	f.Add([]byte{}, 0.5, 0.0)
	f.Add([]byte(strings.Repeat("\xff\xef\x7f\x01\x00\x00\x00\x00", 8)), 1.0, 1e300)
	f.Add([]byte(strings.Repeat("\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0\x3f", 4)), 0.01, 1e-310)
	f.Fuzz(func(t *testing.T, raw []byte, q, threshold float64) {
		s := NewSeries(threshold)
		for len(raw) >= 16 {
			v := math.Float64frombits(le64(raw[:8]))
			dt := math.Float64frombits(le64(raw[8:16]))
			raw = raw[16:]
			s.Add(v, dt)
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Validate() after Adds = %v", err)
		}
		min, hasMin := s.Min()
		max, hasMax := s.Max()
		for _, qq := range []float64{q, 0, 0.5, 0.95, 0.99, 1} {
			v, ok := s.Quantile(qq)
			if ok != (s.Count() > 0 && qq >= 0 && qq <= 1) {
				t.Fatalf("Quantile(%v) ok = %v with Count() = %d", qq, ok, s.Count())
			}
			if ok && (!hasMin || !hasMax || v < min || v > max) {
				t.Fatalf("Quantile(%v) = %v, outside [%v, %v]", qq, v, min, max)
			}
		}
		if avg, ok := s.Avg(); ok && (avg < min || avg > max) {
			t.Fatalf("Avg() = %v, outside [%v, %v]", avg, min, max)
		}
		if s.ActiveSeconds() > s.Seconds {
			t.Fatalf("ActiveSeconds() = %v, above total %v", s.ActiveSeconds(), s.Seconds)
		}
		blob, err := json.Marshal(&s)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		var back Series
		if err := json.Unmarshal(blob, &back); err != nil {
			t.Fatalf("json.Unmarshal(%s): %v", blob, err)
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("JSON round trip changed the series")
		}
		s.Merge(&back)
		if err := s.Validate(); err != nil {
			t.Fatalf("Validate() after Merge = %v", err)
		}
	})
}

// le64 decodes 8 little-endian bytes.
func le64(b []byte) uint64 {
	var u uint64
	for i := 7; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	return u
}

func BenchmarkSeriesAdd(b *testing.B) {
	values := make([]float64, 4096)
	r := rand.New(rand.NewPCG(7, 8))
	for i := range values {
		values[i] = 4e9 * r.ExpFloat64()
	}
	s := NewSeries(1e9)
	for _, v := range values {
		s.Add(v, 1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		s.Add(values[i&4095], 1)
		i++
	}
}

func BenchmarkQuantile(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	s := NewSeries(0)
	for range 100000 {
		s.Add(math.Pow(10, -4+18*r.Float64()), 1) // the widest range this project meets
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := s.Quantile(0.95); !ok {
			b.Fatal("Quantile(0.95) = false")
		}
	}
	b.ReportMetric(float64(len(s.Buckets)), "buckets")
}
