package alerting_test

import (
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/test/alerting"
)

// hogRow is one row of the hogging answer; v nil is a null value.
type hogRow struct {
	job, user, resource string
	v                   *float64
}

func num(v float64) *float64 { return &v }

// hogFrame builds the hogging query's answer as pkg/plugin/hogging.go
// shapes it (hoggingFrame and queryHogging): one numeric-long frame (type
// version 0.1) named "hogging", string fields cluster, job_id, user,
// account, partition, resource and one number field "hogging". The value
// field is []float64 as the plugin sends it, or []*float64 when a row is
// null (the plugin never sends nulls; Grafana's reader accepts them).
func hogFrame(rows ...hogRow) *data.Frame {
	n := len(rows)
	cluster, job, user, account, partition, resource := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	nullable := false
	for _, r := range rows {
		nullable = nullable || r.v == nil
	}
	vals := make([]float64, n)
	nvals := make([]*float64, n)
	for i, r := range rows {
		cluster[i], job[i], user[i], account[i], partition[i], resource[i] = "c1", r.job, r.user, "acct-"+r.user, "gpu", r.resource
		nvals[i] = r.v
		if r.v != nil {
			vals[i] = *r.v
		}
	}
	var vf *data.Field
	if nullable {
		vf = data.NewField("hogging", nil, nvals)
	} else {
		vf = data.NewField("hogging", nil, vals)
	}
	f := data.NewFrame("hogging",
		data.NewField("cluster", nil, cluster),
		data.NewField("job_id", nil, job),
		data.NewField("user", nil, user),
		data.NewField("account", nil, account),
		data.NewField("partition", nil, partition),
		data.NewField("resource", nil, resource),
		vf)
	f.RefID = "A"
	f.Meta = &data.FrameMeta{Type: data.FrameTypeNumericLong, TypeVersion: data.FrameTypeVersion{0, 1}}
	return f
}

func threeJobs() *data.Frame {
	return hogFrame(
		hogRow{"101", "alice", "gpu", num(2)},
		hogRow{"102", "bob", "gpu", num(0)},
		hogRow{"103", "carol", "gpu", num(0)},
	)
}

func wantProblem(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("CheckDataplane accepted the frames; want an error naming %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not name %q", err, p)
		}
	}
}

func TestCheckDataplaneAcceptsTheHoggingShape(t *testing.T) {
	if err := alerting.CheckDataplane(data.Frames{threeJobs()}); err != nil {
		t.Error(err)
	}
	nulls := hogFrame(hogRow{"101", "alice", "gpu", num(1)}, hogRow{"102", "bob", "gpu", nil})
	if err := alerting.CheckDataplane(data.Frames{nulls}); err != nil {
		t.Errorf("a null value is valid: %v", err)
	}
	if err := alerting.CheckDataplaneFor(hoggingRule(t), data.Frames{threeJobs()}); err != nil {
		t.Error(err)
	}
}

// No hogging job: the plugin answers its frame with every field and no
// rows. That, no frames, and a typed frame without fields are "no data".
func TestCheckDataplaneAcceptsNoData(t *testing.T) {
	typedEmpty := data.NewFrame("")
	typedEmpty.Meta = &data.FrameMeta{Type: data.FrameTypeNumericLong, TypeVersion: data.FrameTypeVersion{0, 1}}
	for name, fs := range map[string]data.Frames{
		"plugin's empty answer": {hogFrame()},
		"no frames":             nil,
		"typed, no fields":      {typedEmpty},
	} {
		if err := alerting.CheckDataplane(fs); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestCheckDataplaneRefusesAStringValueColumn(t *testing.T) {
	// The value sent as text, and no number at all.
	f := threeJobs()
	f.Fields[6] = data.NewField("hogging", nil, []string{"2", "0", "0"})
	wantProblem(t, alerting.CheckDataplane(data.Frames{f}), `"hogging"`, "no numeric value field")
	// A number, plus a value sent as text beside it.
	g := threeJobs()
	g.Fields = append(g.Fields, data.NewField("held", nil, []string{"2", "2", "4"}))
	wantProblem(t, alerting.CheckDataplane(data.Frames{g}), `"held"`, "holds a number in every row")
}

func TestCheckDataplaneRefusesMissingJobLabels(t *testing.T) {
	f := threeJobs()
	f.Fields = append(f.Fields[:1], f.Fields[2:]...) // no job_id
	wantProblem(t, alerting.CheckDataplane(data.Frames{f}), `"job_id"`)

	g := threeJobs()
	g.Fields[0] = data.NewField("cluster", nil, []string{"c1", "", "c1"})
	wantProblem(t, alerting.CheckDataplane(data.Frames{g}), "empty at row 1", "cluster")

	// A rule reading a label the frames lack.
	r := hoggingRule(t)
	r.Annotations = map[string]string{"summary": "{{ $labels.node }}"}
	wantProblem(t, alerting.CheckDataplaneFor(r, data.Frames{threeJobs()}), `"node"`)
}

func TestCheckDataplaneRefusesDuplicateLabelSets(t *testing.T) {
	f := hogFrame(hogRow{"101", "alice", "gpu", num(2)}, hogRow{"101", "alice", "gpu", num(1)})
	wantProblem(t, alerting.CheckDataplane(data.Frames{f}), "row 0 and row 1 have the same labels", "job_id=101")
	// Two numeric fields make two numbers with one label set per row.
	g := threeJobs()
	g.Fields = append(g.Fields, data.NewField("held", nil, []float64{2, 2, 2}))
	wantProblem(t, alerting.CheckDataplane(data.Frames{g}), "2 numeric fields")
}

func TestCheckDataplaneRefusesOtherShapes(t *testing.T) {
	untyped := threeJobs()
	untyped.Meta = nil
	wantProblem(t, alerting.CheckDataplane(data.Frames{untyped}), "no data-plane type")

	newer := threeJobs()
	newer.Meta.TypeVersion = data.FrameTypeVersion{0, 2}
	wantProblem(t, alerting.CheckDataplane(data.Frames{newer}), "type version 0.2")

	ts := threeJobs()
	ts.Meta.Type = data.FrameTypeTimeSeriesLong
	wantProblem(t, alerting.CheckDataplane(data.Frames{ts}), "timeseries")

	two := data.Frames{threeJobs(), hogFrame(hogRow{"104", "dave", "gpu", num(1)})}
	wantProblem(t, alerting.CheckDataplane(two), "frame 1", "would be ignored")

	labelled := threeJobs()
	labelled.Fields[6].Labels = data.Labels{"node": "n1"}
	wantProblem(t, alerting.CheckDataplane(data.Frames{labelled}), "carries labels")

	nullLabel := threeJobs()
	nullLabel.Fields[2] = data.NewField("user", nil, []*string{nil, strp("bob"), strp("carol")})
	wantProblem(t, alerting.CheckDataplane(data.Frames{nullLabel}), `"user" is null at row 0`)
}

func strp(s string) *string { return &s }

func jobLabels(job string) data.Labels {
	return data.Labels{"cluster": "c1", "job_id": job, "user": "u" + job, "account": "a", "partition": "p", "resource": "gpu"}
}

func TestCheckDataplaneWideAndMulti(t *testing.T) {
	wide := data.NewFrame("",
		data.NewField("hogging", jobLabels("1"), []float64{1}),
		data.NewField("hogging", jobLabels("2"), []float64{0}))
	wide.Meta = &data.FrameMeta{Type: data.FrameTypeNumericWide, TypeVersion: data.FrameTypeVersion{0, 1}}
	if err := alerting.CheckDataplane(data.Frames{wide}); err != nil {
		t.Errorf("numeric-wide: %v", err)
	}
	wide.Fields = append(wide.Fields, data.NewField("state", nil, []string{"idle"}))
	wantProblem(t, alerting.CheckDataplane(data.Frames{wide}), `string field 2 "state"`)

	var multi data.Frames
	for _, j := range []string{"1", "2"} {
		f := data.NewFrame("", data.NewField("hogging", jobLabels(j), []float64{1}))
		f.Meta = &data.FrameMeta{Type: data.FrameTypeNumericMulti, TypeVersion: data.FrameTypeVersion{0, 1}}
		multi = append(multi, f)
	}
	if err := alerting.CheckDataplane(multi); err != nil {
		t.Errorf("numeric-multi: %v", err)
	}
	multi[1].Fields[0].Labels = jobLabels("1")
	wantProblem(t, alerting.CheckDataplane(multi), "same labels")
	delete(multi[1].Fields[0].Labels, "job_id")
	wantProblem(t, alerting.CheckDataplane(multi), "lacks the label(s) job_id")
}
