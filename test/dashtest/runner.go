package dashtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/pkg/models"
)

// Runner runs every panel of a dashboard, with its template variables, and
// fails the test for a panel that errs or shows nothing (unless MayBeEmpty
// says why it may).
type Runner struct {
	// JobsightUID and PrometheusUID are the values of the dashboards'
	// datasource variables.
	JobsightUID, PrometheusUID string
	// Jobsight runs one Jobsight query model and returns its frames,
	// failing the test on an error.
	Jobsight func(t testing.TB, where string, model map[string]any) data.Frames
	// Prometheus runs one PromQL expression and returns how many series
	// with values it answered.
	Prometheus func(t testing.TB, where, expr string) int
	// Pick chooses the values of a Jobsight query variable among those its
	// query listed; nil keeps them all for a multi-value variable and the
	// first otherwise.
	Pick func(t testing.TB, v Var, values []string) []string
	// Quiet accepts panels without data (a Viewer sees few jobs); errors
	// still fail.
	Quiet bool
}

// Vars returns the dashboard's template variables as Grafana resolves them
// on load, in order (later ones may use earlier ones).
func (r Runner) Vars(t *testing.T, d Dashboard) map[string][]string {
	t.Helper()
	vars := map[string][]string{
		"__rate_interval": {"15m"}, "__interval": {"1m"}, "__url_time_range": {"from=now-30m&to=now"},
	}
	for _, v := range d.Templating.List {
		switch {
		case v.Type == "datasource" && string(v.Query) == `"`+PluginID+`"`:
			vars[v.Name] = []string{r.JobsightUID}
		case v.Type == "datasource":
			vars[v.Name] = []string{r.PrometheusUID}
		case v.Type == "query" && v.Datasource != nil && v.Datasource.Type == PluginID:
			if v.Datasource.UID != "${datasource}" {
				t.Errorf("variable %s uses datasource %q, not the datasource variable", v.Name, v.Datasource.UID)
			}
			m := ExpandTarget(t, "variable "+v.Name, v.Query, vars)
			if m["queryType"] != "variable" {
				t.Errorf("variable %s: query type %v", v.Name, m["queryType"])
			}
			ValidateModel(t, "variable "+v.Name, m)
			fs := r.Jobsight(t, "variable "+v.Name, m)
			var vals []string
			if len(fs) > 0 {
				if f, _ := fs[0].FieldByName("value"); f != nil {
					for i := 0; i < f.Len(); i++ {
						if s, ok := f.ConcreteAt(i); ok {
							vals = append(vals, fmt.Sprint(s))
						}
					}
				}
			}
			if len(vals) == 0 {
				t.Fatalf("variable %s lists no values", v.Name)
			}
			if v.Multi && v.IncludeAll && v.AllValue != AllValue {
				t.Errorf("variable %s has the all value %q, not %q: at All it would send every listed value as a filter (leaving out what it does not list)", v.Name, v.AllValue, AllValue)
			}
			listed := len(vals)
			switch {
			case r.Pick != nil:
				vals = r.Pick(t, v, vals)
			case !v.Multi:
				vals = vals[:1]
			}
			if v.Multi && v.IncludeAll && v.AllValue == AllValue && len(vals) == listed {
				vals = []string{AllValue} // at All: Grafana sends the all value
			}
			if len(vals) > models.MaxFilterValues {
				t.Errorf("variable %s has %d values, over the %d a filter takes", v.Name, len(vals), models.MaxFilterValues)
			}
			vars[v.Name] = vals
		case v.Type == "query":
			// A Prometheus label_values variable on All.
			vars[v.Name] = []string{".*"}
		default:
			t.Errorf("variable %s of type %s is not handled by this test", v.Name, v.Type)
		}
	}
	if UsesJobsight(d) && vars["datasource"] == nil {
		t.Errorf("no datasource variable named datasource")
	}
	return vars
}

// Run checks every panel of the dashboard (file names it in messages),
// one subtest per panel, and returns each Jobsight panel's frames by
// title.
func (r Runner) Run(t *testing.T, file string, d Dashboard) map[string]data.Frames {
	t.Helper()
	vars := r.Vars(t, d)
	got := map[string]data.Frames{}
	ids := map[int]bool{}
	for _, p := range AllPanels(d.Panels) {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Description == "" {
			t.Errorf("panel %q has no description", p.Title)
		}
		if len(p.Targets) == 0 {
			continue
		}
		t.Run(p.Title, func(t *testing.T) {
			for i, raw := range p.Targets {
				where := fmt.Sprintf("%s / %s target %d", file, p.Title, i)
				var head struct {
					Datasource *DSRef `json:"datasource"`
					Expr       string `json:"expr"`
				}
				_ = json.Unmarshal(raw, &head)
				dsRef := head.Datasource
				if dsRef == nil {
					dsRef = p.Datasource
				}
				if dsRef == nil || !strings.HasPrefix(dsRef.UID, "${") {
					t.Errorf("%s: datasource %+v is not a datasource variable", where, dsRef)
					continue
				}
				switch dsRef.Type {
				case PluginID:
					m := ExpandTarget(t, where, raw, vars)
					ValidateModel(t, where, m)
					fs := r.Jobsight(t, where, m)
					got[p.Title] = append(got[p.Title], fs...)
					ok, seen := PanelHasData(t, p, fs)
					if !ok && !r.Quiet && MayBeEmpty[p.Title] == "" {
						t.Errorf("%s: no data for the panel (%s)\nmodel %v", where, seen, m)
					}
					if m["queryType"] == "jobTimeline" && !slices.ContainsFunc(fs, func(f *data.Frame) bool { return f.Name == "events" }) {
						t.Errorf("%s: no annotations frame", where)
					}
				case "prometheus":
					expr := ExpandString(head.Expr, vars, "|")
					if n := r.Prometheus(t, where, expr); n == 0 && !r.Quiet && MayBeEmpty[p.Title] == "" {
						t.Errorf("%s: %s: no series", where, expr)
					}
				default:
					t.Errorf("%s: datasource type %q", where, dsRef.Type)
				}
			}
		})
	}
	return got
}
