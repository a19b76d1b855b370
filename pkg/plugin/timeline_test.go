package plugin

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
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

// The job detail dashboard's "Pressure stalls" panel keeps exactly the
// stall series of the timeline (its filter on their display names), each
// a share of the time (percentunit) from the rate of the agent's stall
// counter; no other timeline panel picks them up.
func TestStallSeriesReachTheirPanelOnly(t *testing.T) {
	b, err := os.ReadFile("../../dashboards/job-detail.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				QueryType string `json:"queryType"`
			} `json:"targets"`
			Transformations []struct {
				ID      string `json:"id"`
				Options struct {
					Include struct {
						Pattern string `json:"pattern"`
					} `json:"include"`
				} `json:"options"`
			} `json:"transformations"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	filters := map[string]*regexp.Regexp{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 || p.Targets[0].QueryType != "jobTimeline" {
			continue
		}
		for _, tr := range p.Transformations {
			if tr.ID == "filterFieldsByName" {
				filters[p.Title] = regexp.MustCompile(tr.Options.Include.Pattern)
			}
		}
	}
	if filters["Pressure stalls"] == nil {
		t.Fatalf("no Pressure stalls timeline panel with a field filter (panels %v)", filters)
	}
	stalls := 0
	for _, m := range timelineMetrics {
		stall := strings.HasSuffix(m.tag, "_stall")
		for _, name := range []string{m.display, m.display + " node01"} {
			for title, re := range filters {
				if re.MatchString(name) != (stall && title == "Pressure stalls") && (stall || title == "Pressure stalls") {
					t.Errorf("%s (%s): panel %q filter %s matches %v", m.tag, name, title, re, re.MatchString(name))
				}
			}
		}
		if !stall {
			continue
		}
		stalls++
		expr := m.expr(`{cluster="c",job_id="1"}`, jobBy, "1m")
		if m.unit != "percentunit" || !strings.Contains(expr, "rate(jobsight_job_") || !strings.Contains(expr, "_pressure_stalled_seconds_total{") {
			t.Errorf("%s: unit %s, query %s; want the share of time, from a stall counter's rate", m.tag, m.unit, expr)
		}
	}
	if stalls != 3 {
		t.Errorf("%d stall series, want CPU, memory and I/O", stalls)
	}
}
