// Package intconv converts between integer types where the value comes
// from outside the program (a kernel file, a driver, a checkpoint file)
// and may not fit the target type. Each conversion saturates at the
// target's range instead of wrapping: a figure too large for a document's
// int64 field is written as the largest int64, never as a negative number.
package intconv

import "math"

// Int64 converts v, saturating at math.MaxInt64.
func Int64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// Uint32 converts v, saturating at 0 and math.MaxUint32.
func Uint32(v int) uint32 {
	if v < 0 {
		return 0
	}
	if uint64(v) > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(v)
}

// FloatInt64 rounds v to the nearest int64, saturating at the int64 range;
// NaN is 0. (Go leaves an out-of-range float-to-int conversion to the
// platform: on amd64 it yields math.MinInt64.)
func FloatInt64(v float64) int64 {
	switch {
	case math.IsNaN(v):
		return 0
	case v >= math.MaxInt64: // 2^63 as a float64
		return math.MaxInt64
	case v <= math.MinInt64:
		return math.MinInt64
	}
	return int64(math.Round(v))
}

// AddInt64 returns a+b, saturating at the int64 range: the sum of per-node
// figures that each saturated stays the largest int64, never negative.
func AddInt64(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}
