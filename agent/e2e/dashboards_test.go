package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"gopkg.in/yaml.v3"

	"github.com/jobsight/jobsight/pkg/models"
)

// The shipped dashboards and alert rules, run against the datasource on
// real jobs. Without a Grafana server this test does what Grafana does with
// them that matters for their answers: it reads each dashboard's template
// variables from the datasource's variable query (All = every value the
// variable lists, as Grafana expands a multi-value variable without a
// custom all value), substitutes them into every panel target the way the
// frontend does (a list element "$var" becomes one element per value), and
// runs each target through QueryData as an admin. Prometheus panels run
// against the test Prometheus. The alert rules' queries must be valid
// Jobsight queries on the provisioned datasource uid.

const (
	dashboardsDir   = "../../dashboards"
	provisioningDir = "../../provisioning"
	pluginID        = "jobsight-slurm-datasource"
)

type dashPanel struct {
	ID              int               `json:"id"`
	Type            string            `json:"type"`
	Title           string            `json:"title"`
	Description     string            `json:"description"`
	Datasource      *dashDS           `json:"datasource"`
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
	Panels []dashPanel `json:"panels"` // rows
}

type dashDS struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashVar struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *dashDS         `json:"datasource"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
	Current    struct {
		Value any `json:"value"`
	} `json:"current"`
}

type dashboardJSON struct {
	UID           string      `json:"uid"`
	Title         string      `json:"title"`
	SchemaVersion int         `json:"schemaVersion"`
	Panels        []dashPanel `json:"panels"`
	Templating    struct {
		List []dashVar `json:"list"`
	} `json:"templating"`
}

func loadDashboards(t *testing.T) map[string]dashboardJSON {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dashboardsDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in %s: %v", dashboardsDir, err)
	}
	out := map[string]dashboardJSON{}
	uids := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboardJSON
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

// allPanels flattens rows.
func allPanels(ps []dashPanel) []dashPanel {
	var out []dashPanel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// usesJobsight reports whether a dashboard has the Jobsight datasource variable.
func usesJobsight(d dashboardJSON) bool {
	for _, v := range d.Templating.List {
		if v.Type == "datasource" && string(v.Query) == `"`+pluginID+`"` {
			return true
		}
	}
	return false
}

var varRef = regexp.MustCompile(`\$\{(\w+)(?::[\w]+)?\}|\$(\w+)`)

// expandString replaces variable references in s; multi-valued ones by
// their values joined with join.
func expandString(s string, vars map[string][]string, join string) string {
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
var listKeys = []string{"cluster", "user", "account", "partition", "state", "class", "resources"}

// expandTarget interpolates a Jobsight target like the frontend's
// interpolateQuery: list elements expand to one element per value, other
// strings are replaced as text. It fails on a reference to a variable the
// dashboard does not define.
func expandTarget(t *testing.T, where string, raw json.RawMessage, vars map[string][]string) map[string]any {
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
			out = append(out, expandString(s, vars, ","))
		}
		m[k] = out
	}
	for _, k := range []string{"name", "jobId", "sortBy", "groupBy", "variable"} {
		if s, ok := m[k].(string); ok {
			check(s)
			m[k] = expandString(s, vars, ",")
		}
	}
	return m
}

// validate parses and validates a model as the backend does.
func validateModel(t *testing.T, where string, m map[string]any) {
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
func fieldName(f *data.Field) string {
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
func grafanaRegex(t *testing.T, s string) *regexp.Regexp {
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

// panelHasData applies the panel's field filters (filterFieldsByName,
// filterByValue "greater", a bar gauge's reduceOptions.fields) the way
// Grafana would and reports whether a non-time field with a value is left.
func panelHasData(t *testing.T, p dashPanel, fs data.Frames) (bool, string) {
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
				keep = func(f *data.Field) bool { return prev(f) && re.MatchString(fieldName(f)) }
			} else if len(o.Include.Names) > 0 {
				names := o.Include.Names
				keep = func(f *data.Field) bool {
					return prev(f) && (rowOf(names, f.Name) >= 0 || rowOf(names, fieldName(f)) >= 0)
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
		keep = func(f *data.Field) bool { return prev(f) && re.MatchString(fieldName(f)) }
	}
	var seen []string
	for _, fr := range fs {
		if fr.Meta != nil && fr.Meta.DataTopic == data.DataTopicAnnotations {
			continue
		}
		for _, f := range fr.Fields {
			seen = append(seen, fieldName(f))
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

// mayBeEmpty lists the panels that rightly have no rows on the test's
// short jobs, and why.
var mayBeEmpty = map[string]string{
	"GPUs held and idle (30 min)":                   "no test job runs 30 minutes",
	"Cores and memory held and idle (30 min)":       "no test job runs 30 minutes",
	"Running jobs by partition: reserved vs used":   "jobs may all have ended",
	"Wasted and inefficient jobs":                   "test jobs are classed short",
	"Pending GPUs per partition":                    "no cluster-state collector runs here",
	"Allocated fraction per partition":              "no cluster-state collector runs here",
	"Collectors failing now":                        "healthy collectors",
	"Collector errors per second":                   "healthy collectors",
	"Sink failures":                                 "healthy sinks",
	"Writes refused for credentials":                "healthy sinks",
	"Spool items dropped or set aside":              "healthy spool",
	"Spool size":                                    "healthy spool",
	"Cluster-state collector: poll time and errors": "no cluster-state collector runs here",
}

func TestDashboards(t *testing.T) {
	e := need(t)
	t.Parallel()
	dashboards := loadDashboards(t)

	gpuJob := e.submit(t, "--gres=gpu:2", "--mem=100M", "-A", "dashboards", "-J", "dash-gpu", "--wrap", "sleep 15")
	multi := e.submit(t, "-p", "multi", "-N", "2", "--mem=50M", "-A", "dashboards", "-J", "dash-multi", "--wrap", "srun sleep 8")
	busy := e.submit(t, "--mem=50M", "-J", "dash-busy", "--wrap", "timeout 10 sh -c 'while :; do :; done'")
	theirs := e.submit(t, "--uid=nobody", "--chdir=/tmp", "-J", "dash-theirs", "--wrap", "sleep 3")
	for _, id := range []string{gpuJob, multi, busy, theirs} {
		e.finalJob(t, e.docID(id), jobWait)
	}
	// Prometheus keeps the series written up to the jobs' ends.
	e.promMax(t, "jobsight_job_gpu_utilization_ratio", gpuJob)

	inst := e.dsSettings(t, map[string]any{"allocations": []map[string]any{
		{"cluster": cluster, "resource": "cpu", "hours": 1000},
		{"cluster": cluster, "resource": "gpu", "hours": 100},
		{"cluster": cluster, "account": "dashboards", "resource": "gpu", "hours": 10},
	}})
	ds := newDS(t, inst)
	admin := func(model map[string]any) backend.DataResponse {
		return dsQuery(t, ds, inst, grafanaAdmin, nil, model)
	}

	for file, d := range dashboards {
		file, d := file, d
		t.Run(file, func(t *testing.T) {
			jobsight := usesJobsight(d)
			vars := map[string][]string{
				"__rate_interval": {"15m"}, "__interval": {"1m"}, "__url_time_range": {"from=now-30m&to=now"},
			}
			// Template variables, in order (later ones use earlier ones).
			for _, v := range d.Templating.List {
				switch {
				case v.Type == "datasource" && string(v.Query) == `"`+pluginID+`"`:
					vars[v.Name] = []string{inst.UID}
				case v.Type == "datasource":
					vars[v.Name] = []string{"prometheus"}
				case v.Type == "query" && v.Datasource != nil && v.Datasource.Type == pluginID:
					if v.Datasource.UID != "${datasource}" {
						t.Errorf("variable %s uses datasource %q, not the datasource variable", v.Name, v.Datasource.UID)
					}
					m := expandTarget(t, "variable "+v.Name, v.Query, vars)
					if m["queryType"] != "variable" {
						t.Errorf("variable %s: query type %v", v.Name, m["queryType"])
					}
					validateModel(t, "variable "+v.Name, m)
					fs := mustFrames(t, "variable "+v.Name, admin(m))
					vals := column(t, fs[0], "value")
					if len(vals) == 0 {
						t.Fatalf("variable %s lists no values", v.Name)
					}
					if v.IncludeAll && v.AllValue != "" {
						t.Errorf("variable %s has a custom all value %q: the frontend would send it as a filter value", v.Name, v.AllValue)
					}
					switch {
					case v.Name == "job":
						// The job under study: the GPU job, which the
						// variable must list.
						if rowOf(vals, e.docID(gpuJob)) < 0 {
							t.Fatalf("the jobs variable lacks %s: %v", e.docID(gpuJob), vals)
						}
						vals = []string{e.docID(gpuJob)}
					case v.Name == "cluster":
						if rowOf(vals, cluster) < 0 {
							t.Fatalf("the clusters variable lacks %s: %v", cluster, vals)
						}
					case !v.Multi:
						vals = vals[:1]
					}
					// A multi-value variable is on All: every value.
					if len(vals) > models.MaxFilterValues {
						t.Errorf("variable %s has %d values, over the %d a filter takes", v.Name, len(vals), models.MaxFilterValues)
					}
					vars[v.Name] = vals
				case v.Type == "query":
					// A Prometheus label_values variable: everything.
					vars[v.Name] = []string{".*"}
				default:
					t.Errorf("variable %s of type %s is not handled by this test", v.Name, v.Type)
				}
			}
			if jobsight && vars["datasource"] == nil {
				t.Errorf("no datasource variable named datasource")
			}
			ids := map[int]bool{}
			for _, p := range allPanels(d.Panels) {
				p := p
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
							Datasource *dashDS `json:"datasource"`
							Expr       string  `json:"expr"`
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
						case pluginID:
							m := expandTarget(t, where, raw, vars)
							validateModel(t, where, m)
							r := admin(m)
							fs := mustFrames(t, where, r)
							ok, seen := panelHasData(t, p, fs)
							if !ok && mayBeEmpty[p.Title] == "" {
								t.Errorf("%s: no data for the panel (%s)\nmodel %v", where, seen, m)
							}
							if m["queryType"] == "jobTimeline" && len(framesByName(fs, "events")) != 1 {
								t.Errorf("%s: no annotations frame", where)
							}
						case "prometheus":
							expr := expandString(head.Expr, vars, "|")
							n := e.promRun(t, where, expr)
							if n == 0 && mayBeEmpty[p.Title] == "" {
								t.Errorf("%s: %s: no series", where, expr)
							}
						default:
							t.Errorf("%s: datasource type %q", where, dsRef.Type)
						}
					}
				})
			}
		})
	}

	t.Run("job detail links", func(t *testing.T) {
		// The report link of the job detail dashboard answers for the job
		// variable's value ("<cluster>:<id>").
		srv := resourceServer(t, ds, inst, "admin")
		resp, err := http.Get(srv.URL + "/job?job=" + url.QueryEscape(e.docID(gpuJob)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), gpuJob) {
			t.Errorf("job page for %s: %d", e.docID(gpuJob), resp.StatusCode)
		}
		b, _ := os.ReadFile(filepath.Join(dashboardsDir, "job-detail.json"))
		if !strings.Contains(string(b), "/api/datasources/uid/${datasource}/resources/job?job=${job") {
			t.Errorf("job detail has no link to the job page")
		}
		b, _ = os.ReadFile(filepath.Join(dashboardsDir, "my-jobs.json"))
		if !strings.Contains(string(b), "/d/jobsight-job-detail/") {
			t.Errorf("my jobs has no link to the job detail dashboard")
		}
	})

	t.Run("alert rules", func(t *testing.T) {
		uid := provisionedUID(t)
		var file struct {
			APIVersion int `yaml:"apiVersion"`
			Groups     []struct {
				OrgID    int    `yaml:"orgId"`
				Name     string `yaml:"name"`
				Folder   string `yaml:"folder"`
				Interval string `yaml:"interval"`
				Rules    []struct {
					UID       string `yaml:"uid"`
					Title     string `yaml:"title"`
					Condition string `yaml:"condition"`
					Data      []struct {
						RefID             string         `yaml:"refId"`
						QueryType         string         `yaml:"queryType"`
						RelativeTimeRange map[string]int `yaml:"relativeTimeRange"`
						DatasourceUID     string         `yaml:"datasourceUid"`
						Model             map[string]any `yaml:"model"`
					} `yaml:"data"`
					NoDataState  string            `yaml:"noDataState"`
					ExecErrState string            `yaml:"execErrState"`
					For          string            `yaml:"for"`
					Labels       map[string]string `yaml:"labels"`
					Annotations  map[string]string `yaml:"annotations"`
				} `yaml:"rules"`
			} `yaml:"groups"`
		}
		b, err := os.ReadFile(filepath.Join(provisioningDir, "alerting", "hogging.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		dec.KnownFields(true)
		if err := dec.Decode(&file); err != nil {
			t.Fatalf("hogging.yaml: %v", err)
		}
		if file.APIVersion != 1 || len(file.Groups) == 0 {
			t.Fatalf("hogging.yaml: apiVersion %d, %d groups", file.APIVersion, len(file.Groups))
		}
		rules := 0
		for _, g := range file.Groups {
			if g.Name == "" || g.Folder == "" || g.Interval == "" || g.OrgID == 0 {
				t.Errorf("group %+v lacks name, folder, interval or orgId", g.Name)
			}
			for _, r := range g.Rules {
				rules++
				refs := map[string]map[string]any{}
				jobsightQueries := 0
				for _, q := range r.Data {
					refs[q.RefID] = q.Model
					if q.Model["refId"] != q.RefID {
						t.Errorf("rule %s: data %s has model refId %v", r.UID, q.RefID, q.Model["refId"])
					}
					switch q.DatasourceUID {
					case "__expr__":
						if q.Model["expression"] == nil || refs[fmt.Sprint(q.Model["expression"])] == nil {
							t.Errorf("rule %s: expression %s reads %v, which comes before it nowhere", r.UID, q.RefID, q.Model["expression"])
						}
					case uid:
						jobsightQueries++
						m := map[string]any{}
						for k, v := range q.Model {
							m[k] = v
						}
						validateModel(t, "rule "+r.UID, m)
						if m["queryType"] != "hogging" || q.QueryType != "hogging" {
							t.Errorf("rule %s: query type %v / %s, want hogging", r.UID, m["queryType"], q.QueryType)
						}
						// As the alert engine asks: no user, the alert header.
						raw, _ := json.Marshal(m)
						now := time.Now()
						resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{
							PluginContext: backend.PluginContext{DataSourceInstanceSettings: &inst},
							Headers:       map[string]string{backend.FromAlertHeaderName: "true"},
							Queries: []backend.DataQuery{{RefID: q.RefID, JSON: raw, QueryType: q.QueryType,
								TimeRange: backend.TimeRange{From: now.Add(-time.Duration(q.RelativeTimeRange["from"]) * time.Second), To: now}}},
						})
						if err != nil {
							t.Fatal(err)
						}
						fs := mustFrames(t, "rule "+r.UID, resp.Responses[q.RefID])
						numeric := 0
						for _, f := range fs[0].Fields {
							if f.Type().Numeric() {
								numeric++
							}
						}
						if fs[0].Meta == nil || fs[0].Meta.Type != data.FrameTypeNumericLong || numeric != 1 {
							t.Errorf("rule %s: the alert engine needs a numeric-long frame with one number", r.UID)
						}
						for _, l := range []string{"cluster", "job_id", "user", "account", "partition"} {
							if f, _ := fs[0].FieldByName(l); f == nil {
								t.Errorf("rule %s: the frame has no %s label column", r.UID, l)
							}
						}
					default:
						t.Errorf("rule %s: data %s names datasource %q, not the provisioned %q", r.UID, q.RefID, q.DatasourceUID, uid)
					}
				}
				if jobsightQueries != 1 || refs[r.Condition] == nil || refs[r.Condition]["type"] != "threshold" {
					t.Errorf("rule %s: %d Jobsight queries, condition %q: want one query and a threshold condition", r.UID, jobsightQueries, r.Condition)
				}
				if r.NoDataState != "OK" || r.ExecErrState == "" || r.For == "" || r.Title == "" || r.UID == "" {
					t.Errorf("rule %s: noDataState %q, execErrState %q, for %q", r.UID, r.NoDataState, r.ExecErrState, r.For)
				}
				all := r.Annotations["summary"] + r.Annotations["description"]
				for _, l := range []string{"job_id", "user", "account"} {
					if !strings.Contains(all, "$labels."+l) {
						t.Errorf("rule %s: annotations do not name the %s", r.UID, l)
					}
				}
			}
		}
		if rules < 2 {
			t.Errorf("%d alert rules, want GPUs and cores", rules)
		}
		var cp struct {
			ContactPoints []struct {
				Name      string `yaml:"name"`
				Receivers []struct {
					UID      string         `yaml:"uid"`
					Type     string         `yaml:"type"`
					Settings map[string]any `yaml:"settings"`
				} `yaml:"receivers"`
			} `yaml:"contactPoints"`
		}
		b, err = os.ReadFile(filepath.Join(provisioningDir, "alerting", "contact-points.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, &cp); err != nil || len(cp.ContactPoints) == 0 ||
			cp.ContactPoints[0].Receivers[0].Type != "email" || cp.ContactPoints[0].Receivers[0].Settings["addresses"] == nil {
			t.Errorf("contact-points.yaml: %v %+v", err, cp)
		}
	})
}

// provisionedUID returns the uid of the Jobsight datasource in the
// datasource provisioning file.
func provisionedUID(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(provisioningDir, "datasources", "jobsight.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Datasources []struct {
			Type string `yaml:"type"`
			UID  string `yaml:"uid"`
		} `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Datasources {
		if d.Type == pluginID {
			if d.UID == "" {
				t.Fatal("the provisioned Jobsight datasource has no fixed uid")
			}
			return d.UID
		}
	}
	t.Fatal("no Jobsight datasource in provisioning/datasources/jobsight.yaml")
	return ""
}

// promRun runs an instant query on the test Prometheus and returns how
// many series it answered; a query Prometheus rejects fails the test.
func (e *env) promRun(t *testing.T, where, expr string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.st.Prometheus.URL+"/api/v1/query?query="+url.QueryEscape(expr), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || ans.Status != "success" {
		t.Errorf("%s: Prometheus refused %s: %v %s", where, expr, err, ans.Error)
		return 0
	}
	return len(ans.Data.Result)
}
