package plugin

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// A finished job's series end with a null one step after the last sample,
// so that a state timeline stops at the job's end; a running job's do not.
func TestTimelineSeriesEndWithTheJob(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	m := model.Matrix{{
		Metric: model.Metric{"jobsight_metric": model.LabelValue(timelineMetrics[0].tag), "gpu": "0"},
		Values: []model.SamplePair{{Timestamp: model.TimeFromUnixNano(t0.UnixNano()), Value: 0.9},
			{Timestamp: model.TimeFromUnixNano(t0.Add(15 * time.Second).UnixNano()), Value: 0.8}},
	}}
	fs := timelineFrames(m, 15*time.Second)
	tf, vf := fs[0].Fields[0], fs[0].Fields[1]
	if vf.Len() != 3 || tf.At(2).(time.Time) != t0.Add(30*time.Second) {
		t.Fatalf("finished job: %d points, last at %v; want a third, 15 s after the last sample", vf.Len(), tf.At(vf.Len()-1))
	}
	if v := vf.At(2).(*float64); v != nil {
		t.Errorf("the end point is %v, want null", *v)
	}
	if v := vf.At(1).(*float64); v == nil || *v != 0.8 {
		t.Errorf("second sample %v, want 0.8", v)
	}
	if running := timelineFrames(m, 0); running[0].Fields[1].Len() != 2 {
		t.Errorf("running job: %d points, want the 2 samples only", running[0].Fields[1].Len())
	}
}
