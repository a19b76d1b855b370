package intconv

import (
	"math"
	"testing"
)

func TestInt64(t *testing.T) {
	for _, c := range []struct {
		in   uint64
		want int64
	}{{0, 0}, {42, 42}, {math.MaxInt64, math.MaxInt64}, {math.MaxInt64 + 1, math.MaxInt64}, {math.MaxUint64, math.MaxInt64}} {
		if got := Int64(c.in); got != c.want {
			t.Errorf("Int64(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestUint32(t *testing.T) {
	for _, c := range []struct {
		in   int
		want uint32
	}{{-1, 0}, {math.MinInt, 0}, {0, 0}, {7, 7}, {math.MaxUint32, math.MaxUint32}, {math.MaxUint32 + 1, math.MaxUint32}, {math.MaxInt, math.MaxUint32}} {
		if got := Uint32(c.in); got != c.want {
			t.Errorf("Uint32(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestFloatInt64(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want int64
	}{{0, 0}, {1.4, 1}, {1.5, 2}, {-2.5, -3}, {math.NaN(), 0}, {math.Inf(1), math.MaxInt64}, {math.Inf(-1), math.MinInt64},
		{float64(math.MaxUint64), math.MaxInt64}, {1 << 63, math.MaxInt64}, {-1 << 63, math.MinInt64}, {1 << 62, 1 << 62}} {
		if got := FloatInt64(c.in); got != c.want {
			t.Errorf("FloatInt64(%g) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestAddInt64Saturates(t *testing.T) {
	for _, c := range []struct{ a, b, want int64 }{
		{1, 2, 3},
		{math.MaxInt64, 1, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{math.MinInt64, -1, math.MinInt64},
		{math.MaxInt64, math.MinInt64, -1},
		{-5, 3, -2},
	} {
		if got := AddInt64(c.a, c.b); got != c.want {
			t.Errorf("AddInt64(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
