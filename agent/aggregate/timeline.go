package aggregate

import (
	"encoding/json"
	"errors"
	"fmt"
)

// TimelineBuckets is the most buckets a Timeline keeps.
const TimelineBuckets = 64

// Timeline is a coarse, evenly spaced record of a gauge over a job's life
// in bounded memory: at most TimelineBuckets buckets of Step seconds each,
// starting at the first Add. When the buckets fill up, neighbours are
// merged and Step doubles, so a 10-minute job and a 3-day job both end with
// a timeline of 32 to 64 points. Plain data, so it round-trips through a
// JSON checkpoint.
type Timeline struct {
	// Start is the time of the first Add, in Unix seconds.
	Start float64 `json:"start"`
	// Step is each bucket's length in seconds (0 before the first Add).
	Step float64 `json:"step"`
	// Sum and Count hold each bucket's total and number of values.
	Sum   []float64 `json:"sum"`
	Count []int64   `json:"count"`
}

// NewTimeline returns an empty timeline whose buckets start step seconds
// long (the sampling interval is a good start).
func NewTimeline(step float64) Timeline {
	if !(step > 0) {
		step = 1
	}
	return Timeline{Step: step}
}

// Add records value v at time t (Unix seconds). Values before Start and
// non-finite times or values are ignored.
func (tl *Timeline) Add(t, v float64) {
	if !finite(v) || !finite(t) {
		return
	}
	if tl.Step <= 0 {
		tl.Step = 1
	}
	if len(tl.Count) == 0 && tl.Start == 0 {
		tl.Start = t
	}
	if t < tl.Start {
		return
	}
	i := int((t - tl.Start) / tl.Step)
	for i >= TimelineBuckets {
		tl.halve()
		i = int((t - tl.Start) / tl.Step)
	}
	for len(tl.Count) <= i {
		tl.Sum = append(tl.Sum, 0)
		tl.Count = append(tl.Count, 0)
	}
	tl.Sum[i] += v
	tl.Count[i]++
}

func finite(x float64) bool { return x == x && x <= 1e300 && x >= -1e300 }

// halve merges neighbouring buckets and doubles Step.
func (tl *Timeline) halve() {
	n := (len(tl.Count) + 1) / 2
	for i := 0; i < n; i++ {
		s, c := tl.Sum[2*i], tl.Count[2*i]
		if 2*i+1 < len(tl.Count) {
			s += tl.Sum[2*i+1]
			c += tl.Count[2*i+1]
		}
		tl.Sum[i], tl.Count[i] = s, c
	}
	tl.Sum, tl.Count = tl.Sum[:n], tl.Count[:n]
	tl.Step *= 2
}

// CoarsenTo merges buckets until Step is at least step (a timeline that
// shares another's start and started with its step, but halved less often,
// is brought to the other's buckets).
func (tl *Timeline) CoarsenTo(step float64) {
	for tl.Step > 0 && tl.Step < step && len(tl.Count) > 0 {
		tl.halve()
	}
	for tl.Step > 0 && tl.Step < step {
		tl.Step *= 2
	}
}

// Means returns each bucket's mean; nil for a bucket without values (a
// gap in sampling, e.g. while the agent was down): never an invented value.
func (tl *Timeline) Means() []*float64 {
	out := make([]*float64, len(tl.Count))
	for i := range tl.Count {
		if tl.Count[i] > 0 {
			m := tl.Sum[i] / float64(tl.Count[i])
			out[i] = &m
		}
	}
	return out
}

// Validate checks a Timeline read back from a checkpoint: a finite,
// non-negative step and start, as many sums as counts and no more than
// TimelineBuckets, no negative count, finite sums. A Timeline that fails
// would make Add or Means index out of range.
func (tl *Timeline) Validate() error {
	var errs []error
	if !finite(tl.Step) || tl.Step < 0 {
		errs = append(errs, fmt.Errorf("step %v is not a non-negative number", tl.Step))
	}
	if !finite(tl.Start) {
		errs = append(errs, fmt.Errorf("start %v is not a number", tl.Start))
	}
	if len(tl.Sum) != len(tl.Count) {
		errs = append(errs, fmt.Errorf("%d sums but %d counts", len(tl.Sum), len(tl.Count)))
	}
	if len(tl.Count) > TimelineBuckets {
		errs = append(errs, fmt.Errorf("%d buckets, more than %d", len(tl.Count), TimelineBuckets))
	}
	for i, c := range tl.Count {
		if c < 0 {
			errs = append(errs, fmt.Errorf("bucket %d: count %d", i, c))
			break
		}
	}
	for i, v := range tl.Sum {
		if !finite(v) {
			errs = append(errs, fmt.Errorf("bucket %d: sum %v", i, v))
			break
		}
	}
	return errors.Join(errs...)
}

// UnmarshalJSON decodes a Timeline and checks it with Validate.
func (tl *Timeline) UnmarshalJSON(data []byte) error {
	type plain Timeline // no methods: avoids recursing into UnmarshalJSON
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("decoding timeline: %w", err)
	}
	dec := Timeline(p)
	if err := dec.Validate(); err != nil {
		return fmt.Errorf("decoding timeline: %w", err)
	}
	*tl = dec
	return nil
}
