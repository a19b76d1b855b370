package aggregate

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestTimelineStaysBoundedAndKeepsShape(t *testing.T) {
	t.Parallel()
	tl := NewTimeline(1)
	// Three days sampled every 5 s: busy for the first quarter, then idle.
	const total = 3 * 24 * 3600
	for s := 0; s < total; s += 5 {
		v := 0.9
		if s > total/4 {
			v = 0.05
		}
		tl.Add(1e9+float64(s), v)
	}
	m := tl.Means()
	if len(m) < TimelineBuckets/2 || len(m) > TimelineBuckets {
		t.Fatalf("%d buckets, want %d..%d", len(m), TimelineBuckets/2, TimelineBuckets)
	}
	for i, v := range m {
		if v == nil {
			t.Fatalf("bucket %d empty in a job sampled throughout", i)
		}
	}
	if math.Abs(*m[0]-0.9) > 1e-9 || math.Abs(*m[len(m)-1]-0.05) > 1e-9 {
		t.Errorf("first %v last %v, want 0.9 and 0.05", *m[0], *m[len(m)-1])
	}
	if covered := tl.Step * float64(len(m)); covered < total || covered > 2*total+tl.Step {
		t.Errorf("step %v × %d buckets = %v s for a %d s job", tl.Step, len(m), covered, total)
	}
	b, _ := json.Marshal(tl)
	var back Timeline
	if err := json.Unmarshal(b, &back); err != nil || len(back.Means()) != len(m) {
		t.Errorf("checkpoint round trip: %v", err)
	}
	back.Add(math.NaN(), 1)
	back.Add(1e9+total, math.Inf(1))
	if len(back.Means()) != len(m) {
		t.Error("non-finite values changed the timeline")
	}
}

func TestTimelineGapsStayEmpty(t *testing.T) {
	t.Parallel()
	tl := NewTimeline(10)
	tl.Add(100, 0.5)
	tl.Add(135, 0.7)
	m := tl.Means()
	if len(m) != 4 || *m[0] != 0.5 || m[1] != nil || m[2] != nil || *m[3] != 0.7 {
		t.Errorf("means %v, want [0.5 nil nil 0.7]", m)
	}
}

// TestTimelineFromDamagedCheckpoint: a timeline whose parts disagree is
// refused with an error naming the problem, never a panic later.
func TestTimelineFromDamagedCheckpoint(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"start":1,"step":1,"sum":[1,2],"count":[1]}`: "2 sums but 1 counts",
		`{"start":1,"step":-1,"sum":[],"count":[]}`:    "step -1",
		`{"start":1,"step":1,"sum":[1],"count":[-3]}`:  "count -3",
		`{"start":1,"step":1,"sum":"x","count":[]}`:    "decoding timeline",
	} {
		var tl Timeline
		if err := json.Unmarshal([]byte(in), &tl); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming %q", in, err, want)
		}
	}
	var tl Timeline
	if err := json.Unmarshal([]byte(`{"start":1,"step":2,"sum":[1,2],"count":[1,2]}`), &tl); err != nil || len(tl.Means()) != 2 {
		t.Errorf("a sound timeline: %v", err)
	}
}
