package alerting_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/test/alerting"
)

func firingJobs(ins []alerting.Instance) string {
	var ids []string
	for _, in := range ins {
		if in.Firing {
			ids = append(ids, in.Labels["job_id"])
		}
	}
	return strings.Join(ids, ",")
}

func TestEvaluateFiresOnlyTheHoggingJob(t *testing.T) {
	rule := hoggingRule(t)
	f := hogFrame(
		hogRow{"101", "alice", "gpu", num(1.5)},
		hogRow{"102", "bob", "gpu", num(0)},
		hogRow{"103", "carol", "gpu", nil},
	)
	ins, err := alerting.Evaluate(rule, data.Frames{f})
	if err != nil {
		t.Fatal(err)
	}
	if got := firingJobs(ins); got != "101" {
		t.Errorf("firing %q, want 101", got)
	}
	// dropNN: the null row has no instance; the zero row is Normal.
	if len(ins) != 2 {
		t.Fatalf("%d instances, want 2 (101 Alerting, 102 Normal; 103's null dropped): %+v", len(ins), ins)
	}
	byJob := map[string]alerting.Instance{}
	for _, in := range ins {
		byJob[in.Labels["job_id"]] = in
	}
	hog, quiet := byJob["101"], byJob["102"]
	if hog.State != alerting.StateAlerting || quiet.State != alerting.StateNormal || quiet.Firing {
		t.Errorf("states: 101 %s, 102 %s", hog.State, quiet.State)
	}
	for ref, want := range map[string]float64{"A": 1.5, "B": 1.5, "C": 1} {
		if v, ok := hog.Value(ref); !ok || v != want {
			t.Errorf("101 $values.%s = %v (%v), want %v", ref, v, ok, want)
		}
	}
	if v, ok := quiet.Value("C"); !ok || v != 0 {
		t.Errorf("102 $values.C = %v (%v), want 0", v, ok)
	}
	if hog.AlertLabels["alertname"] != rule.Title || hog.AlertLabels["grafana_folder"] != "Jobsight" ||
		hog.AlertLabels["team"] != "jobsight-hogging" || hog.AlertLabels["job_id"] != "101" || hog.AlertLabels["user"] != "alice" {
		t.Errorf("alert labels %s", hog.AlertLabels)
	}
	if hog.Overridden != nil {
		t.Errorf("overridden %s", hog.Overridden)
	}
	// A row for another resource loses its resource label to the rule's.
	ins, err = alerting.Evaluate(rule, data.Frames{hogFrame(hogRow{"101", "alice", "cpu", num(3)})})
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 1 || ins[0].Overridden["resource"] != "cpu" || ins[0].AlertLabels["resource"] != "gpu" {
		t.Errorf("cpu row under the gpu rule: %+v", ins)
	}
}

// With the strict mode a null stays: the instance is NoData (not Normal,
// not firing).
func TestEvaluateStrictNullIsNoDataInstance(t *testing.T) {
	rule := hoggingRule(t)
	b, _ := rule.Query("B")
	b.Model["settings"] = map[string]any{"mode": "strict"}
	ins, err := alerting.Evaluate(rule, data.Frames{hogFrame(hogRow{"101", "alice", "gpu", num(1)}, hogRow{"103", "carol", "gpu", nil})})
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 2 || ins[1].Labels["job_id"] != "103" || ins[1].State != alerting.StateNoData || ins[1].Firing {
		t.Errorf("instances %+v, want 103 NoData", ins)
	}
	// replaceNN fills the null in.
	b.Model["settings"] = map[string]any{"mode": "replaceNN", "replaceWithValue": 5}
	ins, err = alerting.Evaluate(rule, data.Frames{hogFrame(hogRow{"103", "carol", "gpu", nil})})
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 1 || !ins[0].Firing {
		t.Errorf("replaceNN instances %+v", ins)
	}
	if v, _ := ins[0].Value("B"); v != 5 {
		t.Errorf("replaceNN B = %v, want 5", v)
	}
}

func TestEvaluateEmptyAnswerGivesNoInstances(t *testing.T) {
	rule := hoggingRule(t)
	for name, fs := range map[string]data.Frames{"plugin's empty frame": {hogFrame()}, "no frames": nil} {
		ins, err := alerting.Evaluate(rule, fs)
		if err != nil || len(ins) != 0 {
			t.Errorf("%s: %d instances, %v", name, len(ins), err)
		}
		ev, err := alerting.EvaluateRule(rule, map[string]data.Frames{"A": fs})
		if err != nil || !ev.NoData || ev.State != alerting.StateNormal {
			t.Errorf("%s: %+v %v, want NoData mapped to Normal by noDataState OK", name, ev, err)
		}
	}
	// Every row null and dropped by dropNN is also no data.
	ev, err := alerting.EvaluateRule(rule, map[string]data.Frames{"A": {hogFrame(hogRow{"103", "carol", "gpu", nil})}})
	if err != nil || !ev.NoData || len(ev.Instances) != 0 {
		t.Errorf("all null: %+v %v", ev, err)
	}
	rule.NoDataState = "NoData"
	ev, _ = alerting.EvaluateRule(rule, map[string]data.Frames{"A": nil})
	if ev.State != alerting.StateNoData {
		t.Errorf("noDataState NoData: state %q", ev.State)
	}
}

func TestEvaluateDuplicateLabelsFailTheRule(t *testing.T) {
	_, err := alerting.Evaluate(hoggingRule(t), data.Frames{hogFrame(hogRow{"101", "alice", "gpu", num(2)}, hogRow{"101", "alice", "gpu", num(0)})})
	if err == nil || !strings.Contains(err.Error(), "duplicate results") {
		t.Errorf("error %v, want duplicate results", err)
	}
}

func TestEvaluateRefusesUnknownExpressions(t *testing.T) {
	for _, typ := range []string{"math", "resample", "classic_conditions", "bogus"} {
		rule := hoggingRule(t)
		c, _ := rule.Query("C")
		c.Model["type"] = typ
		_, err := alerting.Evaluate(rule, data.Frames{threeJobs()})
		if err == nil || !strings.Contains(err.Error(), typ) {
			t.Errorf("%s: error %v, want one naming it", typ, err)
		}
	}
	rule := hoggingRule(t)
	b, _ := rule.Query("B")
	b.Model["reducer"] = "p95"
	if _, err := alerting.Evaluate(rule, data.Frames{threeJobs()}); err == nil || !strings.Contains(err.Error(), `"p95"`) {
		t.Errorf("reducer p95: %v", err)
	}
}

// setThreshold makes C of rule the evaluator typ with params.
func setThreshold(rule alerting.Rule, typ string, params ...any) {
	c, _ := rule.Query("C")
	c.Model["conditions"] = []any{map[string]any{"evaluator": map[string]any{"type": typ, "params": params}}}
}

func TestThresholdTypes(t *testing.T) {
	vals := []float64{-1, 0, 1, 2, 3, math.NaN(), math.Inf(1)}
	for _, tc := range []struct {
		typ    string
		params []any
		want   string // firing values, by index
	}{
		{"gt", []any{1}, "3,4,6"},
		{"lt", []any{1}, "0,1"},
		{"within_range", []any{0, 2}, "2"},
		{"outside_range", []any{0, 2}, "0,4,6"},
		{"within_range_included", []any{0, 2}, "1,2,3"},
		{"outside_range_included", []any{0, 2}, "0,1,3,4,6"},
		// SSE prints the parameter with %f: 1e-7 becomes 0.000000.
		{"gt", []any{1e-7}, "2,3,4,6"},
	} {
		rule := hoggingRule(t)
		setThreshold(rule, tc.typ, tc.params...)
		b, _ := rule.Query("B")
		b.Model["settings"] = map[string]any{"mode": "strict"} // keep NaN and Inf
		var rows []hogRow
		for i, v := range vals {
			rows = append(rows, hogRow{string(rune('0' + i)), "u", "gpu", num(v)})
		}
		ins, err := alerting.Evaluate(rule, data.Frames{hogFrame(rows...)})
		if err != nil {
			t.Fatalf("%s: %v", tc.typ, err)
		}
		if got := firingJobs(ins); got != tc.want {
			t.Errorf("%s %v: firing rows %q, want %q", tc.typ, tc.params, got, tc.want)
		}
	}
	rule := hoggingRule(t)
	setThreshold(rule, "within_range", 1)
	if _, err := alerting.Evaluate(rule, data.Frames{threeJobs()}); err == nil || !strings.Contains(err.Error(), "need 2") {
		t.Errorf("within_range with one parameter: %v", err)
	}
}

// Reducers over a time series (a numeric answer needs none; these follow
// SSE for time-series data).
func TestReducersOnTimeSeries(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	series := func(vs ...*float64) data.Frames {
		ts := make([]time.Time, len(vs))
		for i := range ts {
			ts[i] = t0.Add(time.Duration(i) * time.Minute)
		}
		f := data.NewFrame("", data.NewField("time", nil, ts), data.NewField("v", jobLabels("7"), vs))
		f.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1}}
		return data.Frames{f}
	}
	full := series(num(1), num(4), num(2), num(3))
	gap := series(num(1), nil, num(2), num(6))
	for _, tc := range []struct {
		reducer, mode string
		in            data.Frames
		want          float64 // NaN: want NaN
	}{
		{"last", "strict", full, 3}, {"mean", "strict", full, 2.5}, {"min", "strict", full, 1},
		{"max", "strict", full, 4}, {"sum", "strict", full, 10}, {"count", "strict", full, 4},
		{"median", "strict", full, 2.5},
		{"sum", "strict", gap, math.NaN()}, {"count", "strict", gap, 4}, {"last", "strict", gap, 6},
		{"sum", "dropNN", gap, 9}, {"count", "dropNN", gap, 3}, {"mean", "dropNN", gap, 3},
		{"sum", "replaceNN", gap, 19}, {"min", "replaceNN", gap, 1},
	} {
		rule := hoggingRule(t)
		b, _ := rule.Query("B")
		b.Model["reducer"] = tc.reducer
		b.Model["settings"] = map[string]any{"mode": tc.mode, "replaceWithValue": 10}
		setThreshold(rule, "gt", -1e9)
		ins, err := alerting.Evaluate(rule, tc.in)
		if err != nil {
			t.Fatalf("%s/%s: %v", tc.reducer, tc.mode, err)
		}
		if len(ins) != 1 {
			t.Fatalf("%s/%s: %d instances", tc.reducer, tc.mode, len(ins))
		}
		got, _ := ins[0].Value("B")
		if (math.IsNaN(tc.want) && !math.IsNaN(got)) || (!math.IsNaN(tc.want) && got != tc.want) {
			t.Errorf("%s/%s: B = %v, want %v", tc.reducer, tc.mode, got, tc.want)
		}
		if _, hasA := ins[0].Values["A"]; hasA {
			t.Errorf("A is a time series, not a number: Values %v", ins[0].Values)
		}
	}
	// Without a reduce, a time series cannot be alerted on.
	rule := hoggingRule(t)
	c, _ := rule.Query("C")
	c.Model["expression"] = "A"
	if _, err := alerting.Evaluate(rule, full); err == nil || !strings.Contains(err.Error(), "time series") {
		t.Errorf("threshold on a series as condition: %v", err)
	}
}

// An untyped frame of the same shape is SSE's legacy number table: the
// same instances. Other untyped frames are not emulated, and say so.
func TestEvaluateUntypedNumberTable(t *testing.T) {
	rule := hoggingRule(t)
	f := threeJobs()
	f.Meta = nil
	ins, err := alerting.Evaluate(rule, data.Frames{f})
	if err != nil {
		t.Fatal(err)
	}
	if got := firingJobs(ins); got != "101" || len(ins) != 3 {
		t.Errorf("number table: firing %q of %d instances", got, len(ins))
	}
	g := threeJobs()
	g.Meta = nil
	g.Fields = append(g.Fields, data.NewField("time", nil, []time.Time{{}, {}, {}}))
	if _, err := alerting.Evaluate(rule, data.Frames{g}); err == nil || !strings.Contains(err.Error(), "not a typed data-plane frame") {
		t.Errorf("untyped frame with a time field: %v", err)
	}
}
