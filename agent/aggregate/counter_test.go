package aggregate

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

func TestCounter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		readings     []uint64
		wantTotal    uint64
		wantIncrease uint64
		wantDelta    uint64
		wantDeltaOK  bool
		wantResets   int64
	}{
		{"single reading counts from zero", []uint64{500}, 500, 0, 0, false, 0},
		{"steady increase", []uint64{100, 150, 180}, 180, 80, 30, true, 0},
		{"unchanged reading", []uint64{100, 100}, 100, 0, 0, true, 0},
		{"reset keeps what came before", []uint64{100, 150, 20}, 170, 70, 0, false, 1},
		{"increase after a reset", []uint64{100, 150, 20, 50}, 200, 100, 30, true, 1},
		{"reset to zero", []uint64{100, 0, 0}, 100, 0, 0, true, 1},
		{"two resets", []uint64{10, 40, 5, 25, 3}, 68, 58, 0, false, 2},
		{"saturates at max uint64", []uint64{math.MaxUint64, 1, 2}, math.MaxUint64, 0, 1, true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var c Counter
			for _, r := range tc.readings {
				c.Observe(r)
			}
			if got, ok := c.Total(); !ok || got != tc.wantTotal {
				t.Errorf("Total() = %d, %v; want %d", got, ok, tc.wantTotal)
			}
			if got, ok := c.Increase(); !ok || got != tc.wantIncrease {
				t.Errorf("Increase() = %d, %v; want %d", got, ok, tc.wantIncrease)
			}
			if got, ok := c.Delta(); ok != tc.wantDeltaOK || got != tc.wantDelta {
				t.Errorf("Delta() = %d, %v; want %d, %v", got, ok, tc.wantDelta, tc.wantDeltaOK)
			}
			if c.Resets != tc.wantResets {
				t.Errorf("Resets = %d, want %d", c.Resets, tc.wantResets)
			}
		})
	}
}

func TestCounterBeforeFirstObserve(t *testing.T) {
	t.Parallel()
	var c Counter
	if v, ok := c.Total(); ok {
		t.Errorf("Total() = %d, true before any reading", v)
	}
	if v, ok := c.Increase(); ok {
		t.Errorf("Increase() = %d, true before any reading", v)
	}
	if v, ok := c.Delta(); ok {
		t.Errorf("Delta() = %d, true before any reading", v)
	}
}

func TestCounterJSONRoundTrip(t *testing.T) {
	t.Parallel()
	var c Counter
	for _, r := range []uint64{100, 150, 20, 50} {
		c.Observe(r)
	}
	blob, err := json.Marshal(&c)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	var back Counter
	if err := json.Unmarshal(blob, &back); err != nil {
		t.Fatalf("json.Unmarshal(%s): %v", blob, err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("round trip: got %+v, want %+v", back, c)
	}
	// The restored counter carries on: the cgroup kept counting meanwhile.
	back.Observe(90)
	if got, _ := back.Total(); got != 240 {
		t.Errorf("Total() after restore and a reading of 90 = %d, want 240", got)
	}
	if got, ok := back.Delta(); !ok || got != 40 {
		t.Errorf("Delta() after restore = %d, %v; want 40", got, ok)
	}
}
