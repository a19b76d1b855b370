package aggregate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
)

// RelativeAccuracy is the bound on the relative error of Series.Quantile for
// quantiles that fall outside collapsed buckets (see the package doc).
const RelativeAccuracy = 0.01

// MaxBuckets is the most non-empty histogram buckets a Series keeps; beyond
// it the lowest buckets are collapsed into the next one up.
const MaxBuckets = 4096

// Derived histogram constants: γ = (1+α)/(1-α).
var (
	gamma      = (1 + RelativeAccuracy) / (1 - RelativeAccuracy)
	lnGamma    = math.Log(gamma)
	invLnGamma = 1 / lnGamma
	// lnCentre is ln(2/(γ+1)): a bucket's centre is γ^i·2/(γ+1).
	lnCentre = math.Log(2 / (gamma + 1))
)

// Bucket is one non-empty bucket of a Series histogram: Count samples with
// values in (γ^(Index-1), γ^Index].
type Bucket struct {
	// Index is the bucket's index i = ceil(log_γ v).
	Index int32 `json:"i"`
	// Count is the number of samples in the bucket; never 0 in a Series.
	Count uint64 `json:"n"`
}

// Series summarises a sampled gauge over a job's life: time-weighted average,
// quantiles, minimum, peak, and time spent above a threshold, in bounded
// memory and without allocating per Add once its buckets exist.
//
// The zero Series is empty with the active threshold disabled; NewSeries sets
// a threshold. All fields are exported so that a Series can be written to and
// read back from a JSON checkpoint; they are not meant to be set by hand.
// A Series is not safe for concurrent use.
type Series struct {
	// ActiveThreshold: Adds with a value above it count towards Active. A
	// threshold <= 0 disables the active time.
	ActiveThreshold float64 `json:"active_threshold"`
	// Samples is the number of accepted Adds.
	Samples int64 `json:"samples"`
	// Rejected is the number of Adds ignored for a NaN, infinite or negative
	// value, a dt that is not a positive finite number, or sums that would
	// overflow.
	Rejected int64 `json:"rejected"`
	// Seconds is the total dt of accepted Adds.
	Seconds float64 `json:"seconds"`
	// WeightedSum is the sum of v·dt over accepted Adds.
	WeightedSum float64 `json:"weighted_sum"`
	// Active is the total dt of accepted Adds with v > ActiveThreshold (0
	// when the threshold is disabled).
	Active float64 `json:"active_seconds"`
	// MinValue and MaxValue are the smallest and largest accepted values;
	// meaningless while Samples is 0.
	MinValue float64 `json:"min"`
	MaxValue float64 `json:"max"`
	// Zeros is the number of accepted values exactly 0.
	Zeros uint64 `json:"zeros"`
	// Buckets are the non-empty buckets of positive values in strictly
	// increasing Index order, at most MaxBuckets of them.
	Buckets []Bucket `json:"buckets"`
}

// NewSeries returns an empty Series whose ActiveSeconds counts the time
// spent with values above activeThreshold; activeThreshold <= 0 (or NaN)
// disables it.
func NewSeries(activeThreshold float64) Series {
	if !(activeThreshold > 0) || math.IsInf(activeThreshold, 1) {
		activeThreshold = 0
	}
	return Series{ActiveThreshold: activeThreshold}
}

// Add records value v held for dt seconds, the sample interval actually
// elapsed. It ignores, and counts in Rejected, a NaN, infinite or negative v,
// a dt that is not positive and finite, and a sample whose v·dt would
// overflow the sums.
func (s *Series) Add(v, dt float64) {
	if !(v >= 0) || math.IsInf(v, 1) || !(dt > 0) || math.IsInf(dt, 1) {
		s.Rejected++
		return
	}
	seconds, sum := s.Seconds+dt, s.WeightedSum+v*dt
	if math.IsInf(seconds, 1) || math.IsInf(sum, 1) {
		s.Rejected++
		return
	}
	s.Seconds, s.WeightedSum = seconds, sum
	if s.ActiveThreshold > 0 && v > s.ActiveThreshold {
		s.Active += dt
	}
	if s.Samples == 0 || v < s.MinValue {
		s.MinValue = v
	}
	if s.Samples == 0 || v > s.MaxValue {
		s.MaxValue = v
	}
	s.Samples++
	if v == 0 {
		s.Zeros++
		return
	}
	s.addToBucket(bucketIndex(v), 1)
}

// bucketIndex returns ceil(log_γ v) for a positive finite v.
func bucketIndex(v float64) int32 {
	return int32(math.Ceil(math.Log(v) * invLnGamma))
}

// bucketCentre returns the value a quantile in bucket i is answered with.
func bucketCentre(i int32) float64 {
	return math.Exp(float64(i)*lnGamma + lnCentre)
}

// addToBucket adds n to bucket i, creating it if needed and collapsing the
// lowest buckets to stay within MaxBuckets.
func (s *Series) addToBucket(i int32, n uint64) {
	b := s.Buckets
	// Fast path: the top bucket (gauges often sit near their latest value).
	if k := len(b) - 1; k >= 0 && b[k].Index == i {
		b[k].Count += n
		return
	}
	// Binary search for the first bucket with Index >= i.
	pos, hi := 0, len(b)
	for pos < hi {
		mid := int(uint(pos+hi) >> 1)
		if b[mid].Index < i {
			pos = mid + 1
		} else {
			hi = mid
		}
	}
	found := pos < len(b) && b[pos].Index == i
	if found {
		b[pos].Count += n
		return
	}
	if len(b) >= MaxBuckets {
		if pos == 0 {
			// Below every kept bucket: it joins the lowest one.
			b[0].Count += n
			return
		}
		// Collapse the lowest bucket into the next to make room.
		b[1].Count += b[0].Count
		copy(b, b[1:pos])
		b[pos-1] = Bucket{Index: i, Count: n}
		return
	}
	s.Buckets = slices.Insert(b, pos, Bucket{Index: i, Count: n})
}

// Count returns the number of accepted samples.
func (s *Series) Count() int64 { return s.Samples }

// Avg returns the time-weighted average of the accepted samples, or false
// when there are none.
func (s *Series) Avg() (float64, bool) {
	if s.Samples == 0 || !(s.Seconds > 0) {
		return 0, false
	}
	avg := s.WeightedSum / s.Seconds
	// Rounding may push the average a hair outside the range of the values.
	return math.Min(math.Max(avg, s.MinValue), s.MaxValue), true
}

// Max returns the largest accepted value, or false when there is none.
func (s *Series) Max() (float64, bool) {
	if s.Samples == 0 {
		return 0, false
	}
	return s.MaxValue, true
}

// Min returns the smallest accepted value, or false when there is none.
func (s *Series) Min() (float64, bool) {
	if s.Samples == 0 {
		return 0, false
	}
	return s.MinValue, true
}

// ActiveSeconds returns the total dt of accepted Adds whose value was above
// the series' active threshold, or 0 when the threshold is disabled.
func (s *Series) ActiveSeconds() float64 { return s.Active }

// Quantile returns the q-quantile (0 <= q <= 1) of the accepted samples,
// weighted by sample: the sample of rank floor(q·(n-1)) in ascending order,
// within RelativeAccuracy, exact for q = 0 (Min), q = 1 (Max) and zeros. It
// returns false when the series is empty or q is outside [0, 1].
func (s *Series) Quantile(q float64) (float64, bool) {
	if s.Samples == 0 || !(q >= 0 && q <= 1) {
		return 0, false
	}
	switch q {
	case 0:
		return s.MinValue, true
	case 1:
		return s.MaxValue, true
	}
	// Samples equals Zeros plus the bucket counts (Validate checks it).
	rank := uint64(q * float64(s.Samples-1))
	if rank < s.Zeros {
		return 0, true
	}
	seen := s.Zeros
	for _, b := range s.Buckets {
		seen += b.Count
		if rank < seen {
			return math.Min(math.Max(bucketCentre(b.Index), s.MinValue), s.MaxValue), true
		}
	}
	return s.MaxValue, true
}

// Merge adds everything o recorded to s, as if o's samples had been added to
// s; s keeps its own ActiveThreshold and o's active time is added as o
// counted it. Sums that would overflow saturate at the largest float64.
func (s *Series) Merge(o *Series) {
	if o == nil {
		return
	}
	s.Rejected += o.Rejected
	if o.Samples == 0 {
		return
	}
	if s.Samples == 0 || o.MinValue < s.MinValue {
		s.MinValue = o.MinValue
	}
	if s.Samples == 0 || o.MaxValue > s.MaxValue {
		s.MaxValue = o.MaxValue
	}
	s.Samples += o.Samples
	s.Seconds = saturatingSum(s.Seconds, o.Seconds)
	s.WeightedSum = saturatingSum(s.WeightedSum, o.WeightedSum)
	s.Active = saturatingSum(s.Active, o.Active)
	s.Zeros += o.Zeros
	s.Buckets = mergeBuckets(s.Buckets, o.Buckets)
}

// saturatingSum returns a+b, or the largest float64 where that overflows.
func saturatingSum(a, b float64) float64 {
	return math.Min(a+b, math.MaxFloat64)
}

// mergeBuckets merges two sorted bucket lists into a new one and collapses
// its lowest buckets down to MaxBuckets.
func mergeBuckets(a, b []Bucket) []Bucket {
	out := make([]Bucket, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0].Index < b[0].Index:
			out, a = append(out, a[0]), a[1:]
		case a[0].Index > b[0].Index:
			out, b = append(out, b[0]), b[1:]
		default:
			out = append(out, Bucket{Index: a[0].Index, Count: a[0].Count + b[0].Count})
			a, b = a[1:], b[1:]
		}
	}
	out = append(append(out, a...), b...)
	if extra := len(out) - MaxBuckets; extra > 0 {
		for _, x := range out[:extra] {
			out[extra].Count += x.Count
		}
		out = slices.Clip(out[extra:])
	}
	return out
}

// Validate reports the first way in which s breaks the invariants Add and
// Merge keep, naming the field; a Series read from a damaged checkpoint
// fails here instead of answering nonsense.
func (s *Series) Validate() error {
	finite := func(name string, v float64) error {
		if !(v >= 0) || math.IsInf(v, 1) {
			return fmt.Errorf("%s is %v, want a non-negative finite number", name, v)
		}
		return nil
	}
	var errs []error
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"active_threshold", s.ActiveThreshold}, {"seconds", s.Seconds},
		{"weighted_sum", s.WeightedSum}, {"active_seconds", s.Active},
	} {
		errs = append(errs, finite(f.name, f.v))
	}
	if s.Samples < 0 {
		errs = append(errs, fmt.Errorf("samples is %d, want >= 0", s.Samples))
	}
	if s.Rejected < 0 {
		errs = append(errs, fmt.Errorf("rejected is %d, want >= 0", s.Rejected))
	}
	if s.Samples > 0 {
		errs = append(errs, finite("min", s.MinValue), finite("max", s.MaxValue))
		if s.MinValue > s.MaxValue {
			errs = append(errs, fmt.Errorf("min %v is above max %v", s.MinValue, s.MaxValue))
		}
	}
	if len(s.Buckets) > MaxBuckets {
		errs = append(errs, fmt.Errorf("buckets has %d entries, want at most %d", len(s.Buckets), MaxBuckets))
	}
	total, wrapped := s.Zeros, false
	for k, b := range s.Buckets {
		if b.Count == 0 {
			errs = append(errs, fmt.Errorf("buckets[%d] (index %d) has count 0", k, b.Index))
		}
		if k > 0 && b.Index <= s.Buckets[k-1].Index {
			errs = append(errs, fmt.Errorf("buckets[%d] has index %d, not above the previous %d", k, b.Index, s.Buckets[k-1].Index))
		}
		wrapped = wrapped || b.Count > math.MaxUint64-total
		total += b.Count
	}
	switch {
	case wrapped: // a sum that wrapped past 2^64-1 could equal any samples
		errs = append(errs, fmt.Errorf("zeros plus bucket counts exceed 2^64-1, but samples is %d", s.Samples))
	case s.Samples >= 0 && total != uint64(s.Samples):
		errs = append(errs, fmt.Errorf("zeros plus bucket counts is %d, but samples is %d", total, s.Samples))
	}
	return errors.Join(errs...)
}

// UnmarshalJSON decodes a Series and checks it with Validate.
func (s *Series) UnmarshalJSON(data []byte) error {
	type plain Series // no methods: avoids recursing into UnmarshalJSON
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("decoding series: %w", err)
	}
	dec := Series(p)
	if err := dec.Validate(); err != nil {
		return fmt.Errorf("decoding series: %w", err)
	}
	*s = dec
	return nil
}
