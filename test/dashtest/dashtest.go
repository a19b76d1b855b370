// Package dashtest runs the shipped dashboards' queries the way Grafana
// runs them, for the end-to-end tests: it reads each dashboard's template
// variables from their queries (All = every value the variable lists, as
// Grafana expands a multi-value variable without a custom all value),
// substitutes them into every panel target the way the plugin frontend does
// (a list element "$var" becomes one element per value) and checks each
// panel's answer the way a person looking at it would: after the panel's own
// field filters, something is left to show. How a query is run is the
// caller's: through the datasource directly, or through a real Grafana's
// /api/ds/query.
package dashtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/pkg/models"
)

// PluginID is the Jobsight datasource's plugin id.
const PluginID = models.PluginID

// AllValue is the custom all value of the dashboards' multi-value
// variables (src/variables.ts ALL_VALUE): a Jobsight list holding it
// filters nothing; Prometheus reads it as the regex "any".
const AllValue = ".*"

type Panel struct {
	ID              int               `json:"id"`
	Type            string            `json:"type"`
	Title           string            `json:"title"`
	Description     string            `json:"description"`
	Datasource      *DSRef            `json:"datasource"`
	Targets         []json.RawMessage `json:"targets"`
	Transformations []struct {
		ID      string          `json:"id"`
		Options json.RawMessage `json:"options"`
	} `json:"transformations"`
	Options struct {
		ReduceOptions *struct {
			Fields string `json:"fields"`
		} `json:"reduceOptions"`
	} `json:"options"`
	Panels []Panel `json:"panels"` // rows
}

type DSRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type Var struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *DSRef          `json:"datasource"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
	Current    struct {
		Value any `json:"value"`
	} `json:"current"`
}

type Dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []Panel `json:"panels"`
	Templating    struct {
		List []Var `json:"list"`
	} `json:"templating"`
}

func Load(t testing.TB, dir string) map[string]Dashboard {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in %s: %v", dir, err)
	}
	out := map[string]Dashboard{}
	uids := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d Dashboard
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.SchemaVersion != 38 {
			t.Errorf("%s: schemaVersion %d, want 38 (Grafana 10.0)", f, d.SchemaVersion)
		}
		if !strings.HasPrefix(d.UID, "jobsight-") || uids[d.UID] != "" {
			t.Errorf("%s: uid %q is not a unique jobsight-… uid (also %s)", f, d.UID, uids[d.UID])
		}
		uids[d.UID] = f
		out[filepath.Base(f)] = d
	}
	return out
}

// AllPanels flattens rows.
func AllPanels(ps []Panel) []Panel {
	var out []Panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, AllPanels(p.Panels)...)
	}
	return out
}

// UsesJobsight reports whether a dashboard has the Jobsight datasource variable.
func UsesJobsight(d Dashboard) bool {
	for _, v := range d.Templating.List {
		if v.Type == "datasource" && string(v.Query) == `"`+PluginID+`"` {
			return true
		}
	}
	return false
}

var varRef = regexp.MustCompile(`\$\{(\w+)(?::[\w]+)?\}|\$(\w+)`)

// ExpandString replaces variable references in s; multi-valued ones by
// their values joined with join.
func ExpandString(s string, vars map[string][]string, join string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		sub := varRef.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		if vals, ok := vars[name]; ok {
			return strings.Join(vals, join)
		}
		return m
	})
}

// listKeys are the query model's list fields (src/variables.ts LIST_KEYS).
var listKeys = []string{"cluster", "user", "account", "partition", "state", "class", "resources", "node"}

// ExpandTarget interpolates a Jobsight target like the frontend's
// interpolateQuery: list elements expand to one element per value, other
// strings are replaced as text. It fails on a reference to a variable the
// dashboard does not define.
func ExpandTarget(t testing.TB, where string, raw json.RawMessage, vars map[string][]string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: target: %v", where, err)
	}
	check := func(s string) {
		for _, sub := range varRef.FindAllStringSubmatch(s, -1) {
			if _, ok := vars[sub[1]+sub[2]]; !ok {
				t.Errorf("%s: %q names variable %s, which the dashboard does not define", where, s, sub[0])
			}
		}
	}
	for _, k := range listKeys {
		list, ok := m[k].([]any)
		if !ok {
			continue
		}
		var out []any
		for _, el := range list {
			s, _ := el.(string)
			check(s)
			if sub := varRef.FindStringSubmatch(s); sub != nil && sub[0] == s {
				for _, v := range vars[sub[1]+sub[2]] {
					out = append(out, v)
				}
				continue
			}
			out = append(out, ExpandString(s, vars, ","))
		}
		if slices.Contains(out, any(AllValue)) {
			out = []any{} // a variable at All: no filter (as the frontend does)
		}
		m[k] = out
	}
	for _, k := range []string{"name", "jobId", "sortBy", "groupBy", "variable"} {
		if s, ok := m[k].(string); ok {
			check(s)
			m[k] = ExpandString(s, vars, ",")
		}
	}
	return m
}

// validate parses and validates a model as the backend does.
func ValidateModel(t testing.TB, where string, m map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(m)
	q, err := models.ParseQuery(raw)
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	if err := q.Validate(); err != nil {
		t.Errorf("%s: %v (%s)", where, err, raw)
	}
}

// fieldName is a field's name as Grafana shows it (and matches it in
// transformations): its display name, else its name.
func FieldName(f *data.Field) string {
	if f.Config != nil {
		if f.Config.DisplayName != "" {
			return f.Config.DisplayName
		}
		if f.Config.DisplayNameFromDS != "" {
			return f.Config.DisplayNameFromDS
		}
	}
	return f.Name
}

// grafanaRegex compiles a Grafana field regex ("/re/" or "re").
func grafanaRegex(t testing.TB, s string) *regexp.Regexp {
	t.Helper()
	if len(s) > 1 && strings.HasPrefix(s, "/") && strings.HasSuffix(s, "/") {
		s = s[1 : len(s)-1]
	}
	re, err := regexp.Compile(s)
	if err != nil {
		t.Fatalf("field regex %q: %v", s, err)
	}
	return re
}

// PanelHasData applies the panel's field filters (filterFieldsByName,
// filterByValue "greater", a bar gauge's reduceOptions.fields) the way
// Grafana would and reports whether a non-time field with a value is left.
func PanelHasData(t testing.TB, p Panel, fs data.Frames) (bool, string) {
	t.Helper()
	keep := func(*data.Field) bool { return true }
	rowOK := func(*data.Frame, int) bool { return true }
	for _, tr := range p.Transformations {
		switch tr.ID {
		case "filterFieldsByName":
			var o struct {
				Include struct {
					Pattern string   `json:"pattern"`
					Names   []string `json:"names"`
				} `json:"include"`
			}
			_ = json.Unmarshal(tr.Options, &o)
			prev := keep
			if o.Include.Pattern != "" {
				re := grafanaRegex(t, o.Include.Pattern)
				keep = func(f *data.Field) bool { return prev(f) && re.MatchString(FieldName(f)) }
			} else if len(o.Include.Names) > 0 {
				names := o.Include.Names
				keep = func(f *data.Field) bool {
					return prev(f) && (slices.Contains(names, f.Name) || slices.Contains(names, FieldName(f)))
				}
			}
		case "filterByValue":
			var o struct {
				Filters []struct {
					FieldName string `json:"fieldName"`
					Config    struct {
						ID      string `json:"id"`
						Options struct {
							Value float64 `json:"value"`
						} `json:"options"`
					} `json:"config"`
				} `json:"filters"`
			}
			_ = json.Unmarshal(tr.Options, &o)
			for _, flt := range o.Filters {
				if flt.Config.ID != "greater" {
					t.Fatalf("%s: filterByValue %q is not emulated by this test", p.Title, flt.Config.ID)
				}
				flt := flt
				prev := rowOK
				rowOK = func(fr *data.Frame, i int) bool {
					if !prev(fr, i) {
						return false
					}
					f, _ := fr.FieldByName(flt.FieldName)
					if f == nil {
						return false
					}
					v, err := f.NullableFloatAt(i)
					return err == nil && v != nil && *v > flt.Config.Options.Value
				}
			}
		}
	}
	if ro := p.Options.ReduceOptions; ro != nil && ro.Fields != "" {
		re := grafanaRegex(t, ro.Fields)
		prev := keep
		keep = func(f *data.Field) bool { return prev(f) && re.MatchString(FieldName(f)) }
	}
	var seen []string
	for _, fr := range fs {
		if fr.Meta != nil && fr.Meta.DataTopic == data.DataTopicAnnotations {
			continue
		}
		for _, f := range fr.Fields {
			seen = append(seen, FieldName(f))
			if f.Type() == data.FieldTypeTime || f.Type() == data.FieldTypeNullableTime || !keep(f) {
				continue
			}
			for i := 0; i < f.Len(); i++ {
				if rowOK(fr, i) && f.At(i) != nil {
					if pv, ok := f.ConcreteAt(i); ok && pv != nil {
						return true, ""
					}
				}
			}
		}
	}
	return false, fmt.Sprintf("fields %v", seen)
}

// FullAccessOnly are the dashboards whose panels the datasource answers
// for full-access roles only (the clusterSeries agent_* and clusterstate_*
// series, the nodes variable), with why: a Viewer's query gets 403.
var FullAccessOnly = map[string]string{
	"agent-health.json": "node and agent internals",
}

// MayBeEmpty lists the panels that rightly have no rows on the test's
// short jobs, and why.
var MayBeEmpty = map[string]string{
	"GPUs held and idle (30 min)":                       "no test job runs 30 minutes",
	"Cores and memory held and idle (30 min)":           "no test job runs 30 minutes",
	"Running jobs by partition: reserved vs used":       "jobs may all have ended",
	"Wasted and inefficient jobs":                       "test jobs are classed short",
	"My typical request vs use, by kind of job":         "a kind needs 3 finished runs of a minute or more; test jobs run seconds (pkg/plugin's TestTypicalRequestIsTheCommandsAdvice fills it)",
	"Pending GPUs per partition":                        "no cluster-state collector runs here",
	"Pending GPUs per partition, by type":               "no cluster-state collector runs here",
	"Allocated fraction per partition":                  "no cluster-state collector runs here",
	"Collectors failing now":                            "healthy collectors",
	"Collector errors per second":                       "healthy collectors",
	"Sink failures":                                     "healthy sinks",
	"Writes refused for credentials":                    "healthy sinks",
	"Spool items dropped or set aside":                  "healthy spool",
	"Spool size":                                        "healthy spool",
	"Spool: items waiting, and final jobs not yet safe": "healthy spool: nothing waits",
	"Cluster-state collector: poll time and errors":     "no cluster-state collector runs here",
	"Nodes running jobs without an agent report":        "the cluster-state collector here has no Elasticsearch to check reports in",
	"Pressure stalls":                                   "the test clusters' nodes run cgroup v1, which has no per-cgroup pressure stall information",
	"PCIe and NVLink/XGMI traffic per GPU":              "the test clusters' simulated GPUs report no PCIe or link traffic (GPM, AMD SMI metrics or the agent's gpu.pcie option give it)",
}
