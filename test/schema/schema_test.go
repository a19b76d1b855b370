package schema

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const root = "../.."

// provisionedUIDs are the uids the provisioning gives its datasources
// (provisioning/README.md); the dashboards and rules must name them. Only
// the Jobsight datasource: a raw Prometheus datasource would hand Viewers
// every job's series (TestNoRawPrometheusForViewers).
var provisionedUIDs = map[string]string{JobsightType: "jobsight"}

func read(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func glob(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files %s: %v", pattern, err)
	}
	var out []string
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

// env builds what the checks compare against from the shipped files.
func env(t *testing.T) Env {
	t.Helper()
	uids, err := ProvisionedUIDs(read(t, "provisioning/datasources/jobsight.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for typ, want := range provisionedUIDs {
		if uids[typ] != want {
			t.Errorf("provisioning/datasources/jobsight.yaml: the %s datasource has uid %q, not %q", typ, uids[typ], want)
		}
	}
	for typ, uid := range uids {
		if _, ok := provisionedUIDs[typ]; !ok {
			t.Errorf("provisioning/datasources/jobsight.yaml provisions a %s datasource (uid %q): only the Jobsight datasource is shipped", typ, uid)
		}
	}
	e := Env{UIDs: uids, DashboardUIDs: map[string]bool{}, ContactPoints: map[string]bool{}}
	for _, f := range glob(t, "dashboards/*.json") {
		uid := DashboardUID(read(t, f))
		if uid == "" || e.DashboardUIDs[uid] {
			t.Errorf("%s: uid %q is empty or not unique", f, uid)
		}
		e.DashboardUIDs[uid] = true
	}
	for _, f := range glob(t, "provisioning/alerting/*.yaml") {
		for _, n := range ContactPointNames(read(t, f)) {
			e.ContactPoints[n] = true
		}
	}
	return e
}

func report(t *testing.T, errs []error) {
	t.Helper()
	for _, err := range errs {
		t.Error(err)
	}
}

func TestShippedDashboards(t *testing.T) {
	e := env(t)
	for _, f := range glob(t, "dashboards/*.json") {
		t.Run(filepath.Base(f), func(t *testing.T) {
			report(t, CheckDashboard(f, read(t, f), e))
		})
	}
}

func TestShippedProvisioning(t *testing.T) {
	e := env(t)
	checked := map[string]bool{}
	t.Run("datasources", func(t *testing.T) {
		f := "provisioning/datasources/jobsight.yaml"
		checked[f] = true
		report(t, CheckDatasources(f, read(t, f)))
	})
	t.Run("dashboards", func(t *testing.T) {
		f := "provisioning/dashboards/jobsight.yaml"
		checked[f] = true
		report(t, CheckDashboardProviders(f, read(t, f)))
	})
	for _, f := range glob(t, "provisioning/alerting/*.yaml") {
		checked[f] = true
		t.Run(filepath.Base(f), func(t *testing.T) {
			report(t, CheckAlerting(f, read(t, f), e))
		})
	}
	// Nothing under provisioning/ goes unchecked.
	err := filepath.WalkDir(filepath.Join(root, "provisioning"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if !checked[rel] && !strings.HasSuffix(rel, ".md") {
			t.Errorf("%s: a provisioning file no check reads", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The README's placeholder table documents every environment variable the
// files use, and the checks know each of them.
func TestPlaceholdersDocumented(t *testing.T) {
	readme := string(read(t, "provisioning/README.md"))
	var files []string
	files = append(files, glob(t, "provisioning/*/*.yaml")...)
	for _, f := range files {
		for _, name := range UsedPlaceholders(read(t, f)) {
			if !strings.Contains(readme, "`"+name+"`") {
				t.Errorf("%s: placeholder %s is not in provisioning/README.md's table", f, name)
			}
			if _, ok := Placeholders[name]; !ok {
				t.Errorf("%s: placeholder %s has no test value in Placeholders", f, name)
			}
		}
	}
}

// The notification policy example in provisioning/README.md (not shipped
// as a file, since it replaces an organisation's policy tree) is valid.
func TestREADMEPolicyExample(t *testing.T) {
	readme := string(read(t, "provisioning/README.md"))
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(readme, -1)
	if len(blocks) == 0 {
		t.Fatal("no yaml example in provisioning/README.md")
	}
	n := 0
	for _, b := range blocks {
		if strings.Contains(b[1], "policies:") {
			n++
			report(t, CheckAlerting("provisioning/README.md (example)", []byte(b[1]), env(t)))
		}
	}
	if n == 0 {
		t.Fatal("no policies example in provisioning/README.md")
	}
}

func TestPanelTypes(t *testing.T) {
	for typ, s := range panelSchemas() {
		if s.config.Identifier != typ {
			t.Errorf("panel %s: the SDK's variant is %s", typ, s.config.Identifier)
		}
		if s.config.StrictOptionsUnmarshaler == nil {
			t.Errorf("panel %s: the SDK has no strict options decoder", typ)
		}
		if (s.custom != nil) != (s.config.StrictFieldConfigUnmarshaler != nil) {
			t.Errorf("panel %s: custom field config defaults and decoder disagree", typ)
		}
	}
	types := PanelTypes()
	for _, want := range []string{"timeseries", "table", "stat", "gauge", "bargauge", "barchart", "heatmap",
		"state-timeline", "status-history", "piechart", "text", "row", "histogram", "xychart", "trend",
		"dashlist", "annolist", "nodeGraph", "logs", "canvas", "geomap", "news", "candlestick"} {
		if !slices.Contains(types, want) {
			t.Errorf("core panel %s is not allowed", want)
		}
	}
	for bad := range removedPanels {
		if slices.Contains(types, bad) {
			t.Errorf("removed panel %s is allowed", bad)
		}
	}
	for bad := range corePanelsWithoutSchema {
		if slices.Contains(types, bad) {
			t.Errorf("%s has no SDK schema but is allowed", bad)
		}
	}
}

// ---- the checks fail on broken copies of the shipped files ----

type jsonDoc = map[string]any

func loadJSON(t *testing.T, rel string) jsonDoc {
	t.Helper()
	var m jsonDoc
	if err := json.Unmarshal(read(t, rel), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func panelByTitle(t *testing.T, d jsonDoc, title string) jsonDoc {
	t.Helper()
	for _, p := range d["panels"].([]any) {
		if pm := p.(jsonDoc); pm["title"] == title {
			return pm
		}
	}
	t.Fatalf("no panel %q", title)
	return nil
}

func target(t *testing.T, p jsonDoc, i int) jsonDoc {
	t.Helper()
	return p["targets"].([]any)[i].(jsonDoc)
}

func variable(t *testing.T, d jsonDoc, name string) jsonDoc {
	t.Helper()
	for _, v := range d["templating"].(jsonDoc)["list"].([]any) {
		if vm := v.(jsonDoc); vm["name"] == name {
			return vm
		}
	}
	t.Fatalf("no variable %s", name)
	return nil
}

func override(t *testing.T, p jsonDoc) jsonDoc {
	t.Helper()
	ovs := p["fieldConfig"].(jsonDoc)["overrides"].([]any)
	if len(ovs) == 0 {
		t.Fatal("no overrides")
	}
	return ovs[0].(jsonDoc)
}

// expectProblem fails unless one problem contains every part of want.
func expectProblem(t *testing.T, errs []error, want ...string) {
	t.Helper()
	for _, err := range errs {
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(err.Error(), w)
		}
		if ok {
			return
		}
	}
	var got []string
	for _, err := range errs {
		got = append(got, err.Error())
	}
	sort.Strings(got)
	t.Errorf("no problem with %q; got %d:\n%s", want, len(got), strings.Join(got, "\n"))
}

func TestDashboardMutations(t *testing.T) {
	e := env(t)
	cases := []struct {
		name, file string
		mutate     func(t *testing.T, d jsonDoc)
		want       []string
	}{
		{"Angular panel type", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			panelByTitle(t, d, "My jobs")["type"] = "graph"
		}, []string{`panel "My jobs" (graph)`, `panel type "graph" is not a panel Grafana 11–13 run`}},
		{"unknown panel type", "dashboards/hogging.json", func(t *testing.T, d jsonDoc) {
			panelByTitle(t, d, "GPUs in use by partition")["type"] = "grafana-worldmap-panel"
		}, []string{`panel "GPUs in use by partition"`, `"grafana-worldmap-panel"`}},
		{"made-up panel type", "dashboards/hogging.json", func(t *testing.T, d jsonDoc) {
			panelByTitle(t, d, "GPUs in use by partition")["type"] = "timeseries2"
		}, []string{`panel "GPUs in use by partition" (timeseries2)`, "is not a core Grafana 11–13 panel"}},
		{"core panel without SDK schema", "dashboards/hogging.json", func(t *testing.T, d jsonDoc) {
			panelByTitle(t, d, "GPUs in use by partition")["type"] = "alertlist"
		}, []string{`panel "GPUs in use by partition" (alertlist)`, "has no schema for it"}},
		{"unknown option key", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			panelByTitle(t, d, "My jobs")["options"].(jsonDoc)["showHeaders"] = true
		}, []string{`panel "My jobs" (table): options`, "unexpected field 'showHeaders'"}},
		{"unknown nested option key", "dashboards/agent-health.json", func(t *testing.T, d jsonDoc) {
			p := panelByTitle(t, d, "Spool size")
			p["options"].(jsonDoc)["legend"].(jsonDoc)["position"] = "right"
		}, []string{`panel "Spool size" (timeseries): options.legend`, "unexpected field 'position'"}},
		{"option of the wrong type", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			panelByTitle(t, d, "My jobs")["options"].(jsonDoc)["showHeader"] = "yes"
		}, []string{`panel "My jobs" (table): options`, "showHeader"}},
		{"unknown custom field config key", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			p := panelByTitle(t, d, "My jobs")
			p["fieldConfig"].(jsonDoc)["defaults"].(jsonDoc)["custom"].(jsonDoc)["wrapText"] = true
		}, []string{`panel "My jobs" (table): fieldConfig.defaults.custom`, "unexpected field 'wrapText'"}},
		{"custom field config on a panel without one", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			p := panelByTitle(t, d, "CPU-hours: reserved vs used")
			p["fieldConfig"].(jsonDoc)["defaults"].(jsonDoc)["custom"] = jsonDoc{"lineWidth": 2}
		}, []string{`panel "CPU-hours: reserved vs used" (bargauge)`, "has no custom field config"}},
		{"unknown standard field config key", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			p := panelByTitle(t, d, "My jobs")
			p["fieldConfig"].(jsonDoc)["defaults"].(jsonDoc)["units"] = "bytes"
		}, []string{`panel "My jobs" (table): fieldConfig: defaults`, "unexpected field 'units'"}},
		{"unknown override property", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			o := override(t, panelByTitle(t, d, "My jobs"))
			o["properties"] = append(o["properties"].([]any), jsonDoc{"id": "custom.widht", "value": 80})
		}, []string{`panel "My jobs" (table): fieldConfig: overrides[0]`, "(custom.widht)", "unexpected field 'widht'"}},
		{"unknown standard override property", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			o := override(t, panelByTitle(t, d, "My jobs"))
			o["properties"] = append(o["properties"].([]any), jsonDoc{"id": "displayname", "value": "x"})
		}, []string{`panel "My jobs" (table): fieldConfig: overrides[0]`, "unexpected field 'displayname'"}},
		{"unknown field matcher", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			override(t, panelByTitle(t, d, "My jobs"))["matcher"].(jsonDoc)["id"] = "byname"
		}, []string{`panel "My jobs" (table): fieldConfig: overrides[0]: matcher.id`, `"byname"`}},
		{"unknown data link key", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			o := override(t, panelByTitle(t, d, "My jobs"))
			link := o["properties"].([]any)[0].(jsonDoc)["value"].([]any)[0].(jsonDoc)
			link["openInNewTab"] = true
		}, []string{`panel "My jobs" (table): fieldConfig: overrides[0]: properties[0] (links)`, `unexpected field "openInNewTab"`}},
		{"unknown panel key", "dashboards/job-detail.json", func(t *testing.T, d jsonDoc) {
			panelByTitle(t, d, "Report")["content"] = "x"
		}, []string{`panel "Report" (text)`, "unexpected field 'content'"}},
		{"unknown dashboard key", "dashboards/job-detail.json", func(t *testing.T, d jsonDoc) {
			d["refreshInterval"] = "1m"
		}, []string{"unexpected field 'refreshInterval'"}},
		{"unknown transformation", "dashboards/job-detail.json", func(t *testing.T, d jsonDoc) {
			p := panelByTitle(t, d, "Memory per node")
			p["transformations"] = []any{jsonDoc{"id": "filterByNames", "options": jsonDoc{}}}
		}, []string{`panel "Memory per node" (timeseries): transformations[0].id`, `"filterByNames"`}},
		{"unknown field in a Jobsight target", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			target(t, panelByTitle(t, d, "My jobs"), 0)["accounts"] = []any{"$account"}
		}, []string{`panel "My jobs" (table): targets[0]`, `unexpected field "accounts"`}},
		{"Jobsight key in the wrong case", "dashboards/job-detail.json", func(t *testing.T, d jsonDoc) {
			tg := target(t, panelByTitle(t, d, "Job facts"), 0)
			tg["jobid"] = tg["jobId"]
			delete(tg, "jobId")
		}, []string{`panel "Job facts" (table): targets[0]`, `unexpected field "jobid"`}},
		{"Jobsight value of the wrong type", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			target(t, panelByTitle(t, d, "My jobs"), 0)["limit"] = "500"
		}, []string{`panel "My jobs" (table): targets[0]`, "limit"}},
		{"Jobsight query the backend refuses", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			target(t, panelByTitle(t, d, "My jobs"), 0)["sortBy"] = "starttime"
		}, []string{`panel "My jobs" (table): targets[0] (refId A)`, "the backend refuses the query", `sortBy "starttime"`}},
		{"Jobsight query refused once expanded", "dashboards/job-detail.json", func(t *testing.T, d jsonDoc) {
			target(t, panelByTitle(t, d, "Job facts"), 0)["jobId"] = "${cluster}"
		}, []string{`panel "Job facts" (table): targets[0]`, "the backend refuses the query", `jobId "hpc1"`}},
		{"unknown field in a Jobsight variable query", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			variable(t, d, "account")["query"].(jsonDoc)["clusters"] = []any{"$cluster"}
		}, []string{"variable account: query", `unexpected field "clusters"`}},
		{"unknown field in a cluster-series target", "dashboards/agent-health.json", func(t *testing.T, d jsonDoc) {
			target(t, panelByTitle(t, d, "Spool size"), 0)["exemplars"] = true
		}, []string{`panel "Spool size" (timeseries): targets[0]`, `unexpected field "exemplars"`}},
		{"cluster series the backend does not serve", "dashboards/agent-health.json", func(t *testing.T, d jsonDoc) {
			target(t, panelByTitle(t, d, "Spool size"), 0)["series"] = "jobsight_job_cpu_usage_seconds_total"
		}, []string{`panel "Spool size" (timeseries): targets[0]`, "the backend refuses the query", `series "jobsight_job_cpu_usage_seconds_total" is unknown`}},
		{"a raw Prometheus panel", "dashboards/agent-health.json", func(t *testing.T, d jsonDoc) {
			p := panelByTitle(t, d, "Spool size")
			p["datasource"] = jsonDoc{"type": "prometheus", "uid": "${datasource}"}
			p["targets"] = []any{jsonDoc{"refId": "A", "datasource": jsonDoc{"type": "prometheus", "uid": "${datasource}"}, "expr": "jobsight_job_memory_used_bytes"}}
		}, []string{`panel "Spool size" (timeseries): targets[0] (refId A): datasource.type`, "not a provisioned datasource type"}},
		{"literal datasource uid", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			target(t, panelByTitle(t, d, "My jobs"), 0)["datasource"].(jsonDoc)["uid"] = "jobsight"
		}, []string{`panel "My jobs" (table): targets[0] (refId A): datasource.uid`, `"jobsight" is not a datasource variable`}},
		{"datasource variable of another type", "dashboards/hogging.json", func(t *testing.T, d jsonDoc) {
			tl := d["templating"].(jsonDoc)
			tl["list"] = append(tl["list"].([]any), jsonDoc{"name": "prometheus", "type": "datasource", "query": "prometheus",
				"current": jsonDoc{"selected": false, "text": "Prometheus", "value": "prometheus"}, "hide": 0, "refresh": 1, "regex": "", "options": []any{}})
			target(t, panelByTitle(t, d, "GPUs in use by partition"), 0)["datasource"].(jsonDoc)["uid"] = "${prometheus}"
		}, []string{`panel "GPUs in use by partition" (timeseries): targets[0] (refId A): datasource.uid`, "selects prometheus datasources"}},
		{"unreported-jobs panel on a series the backend does not serve", "dashboards/agent-health.json", func(t *testing.T, d jsonDoc) {
			target(t, panelByTitle(t, d, "Nodes running jobs without an agent report"), 0)["series"] = "jobsight_cluster_node_unreported_jobs"
		}, []string{`panel "Nodes running jobs without an agent report" (timeseries): targets[0]`, "the backend refuses the query",
			`series "jobsight_cluster_node_unreported_jobs" is unknown`}},
		{"undefined datasource variable", "dashboards/agent-health.json", func(t *testing.T, d jsonDoc) {
			p := panelByTitle(t, d, "Spool size")
			p["datasource"].(jsonDoc)["uid"] = "${prom}"
			target(t, p, 0)["datasource"].(jsonDoc)["uid"] = "${prom}"
		}, []string{`panel "Spool size" (timeseries): targets[0] (refId A): datasource.uid`, "not a datasource variable of the dashboard"}},
		{"target without datasource", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			delete(target(t, panelByTitle(t, d, "My jobs"), 0), "datasource")
		}, []string{`panel "My jobs" (table): targets[0] (refId A): datasource`, "missing"}},
		{"unprovisioned datasource type", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			target(t, panelByTitle(t, d, "My jobs"), 0)["datasource"].(jsonDoc)["type"] = "elasticsearch"
		}, []string{`panel "My jobs" (table): targets[0] (refId A): datasource.type`, "not a provisioned datasource type"}},
		{"datasource variable default", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			variable(t, d, "datasource")["current"].(jsonDoc)["value"] = "jobsight-old"
		}, []string{"variable datasource: current.value", `"jobsight"`}},
		{"agent-health datasource variable default", "dashboards/agent-health.json", func(t *testing.T, d jsonDoc) {
			variable(t, d, "datasource")["current"].(jsonDoc)["value"] = "jobsight-prometheus"
		}, []string{"variable datasource: current.value", `"jobsight"`}},
		{"variable query on a literal uid", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			variable(t, d, "cluster")["datasource"].(jsonDoc)["uid"] = "jobsight"
		}, []string{"variable cluster: datasource.uid", "is not a datasource variable"}},
		{"undefined variable in a target", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			target(t, panelByTitle(t, d, "My jobs"), 0)["partition"] = []any{"$partitions"}
		}, []string{`panel "My jobs" (table): targets[0] (refId A): partition[0]`, "$partitions, which the dashboard does not define"}},
		{"undefined variable in a cluster-series target", "dashboards/agent-health.json", func(t *testing.T, d jsonDoc) {
			target(t, panelByTitle(t, d, "Spool size"), 0)["node"] = []any{"${nodes:regex}"}
		}, []string{`panel "Spool size" (timeseries): targets[0] (refId A): node[0]`, "${nodes:regex}, which the dashboard does not define"}},
		{"undefined variable in a title", "dashboards/job-detail.json", func(t *testing.T, d jsonDoc) {
			panelByTitle(t, d, "Memory per node")["title"] = "Memory per node of $jobid"
		}, []string{`panel "Memory per node of $jobid" (timeseries): title`, "$jobid, which the dashboard does not define"}},
		{"undefined variable in a description", "dashboards/job-detail.json", func(t *testing.T, d jsonDoc) {
			panelByTitle(t, d, "Memory per node")["description"] = "For [[node]]"
		}, []string{`panel "Memory per node" (timeseries): description`, "[[node]]"}},
		{"undefined variable in a dashboard link", "dashboards/job-detail.json", func(t *testing.T, d jsonDoc) {
			d["links"].([]any)[0].(jsonDoc)["url"] = "/api/datasources/uid/${datasource}/resources/job?job=${jobs:percentencode}"
		}, []string{"dashboard links: url", "${jobs:percentencode}, which the dashboard does not define"}},
		{"undefined variable in a data link", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			o := override(t, panelByTitle(t, d, "My jobs"))
			link := o["properties"].([]any)[0].(jsonDoc)["value"].([]any)[1].(jsonDoc)
			link["url"] = link["url"].(string) + "&u=${user}"
		}, []string{`panel "My jobs" (table): fieldConfig`, "${user}, which the dashboard does not define"}},
		{"unknown built-in variable", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			panelByTitle(t, d, "My jobs")["description"] = "range ${__url_timerange}"
		}, []string{`panel "My jobs" (table): description`, "not a Grafana built-in variable"}},
		{"unknown variable format", "dashboards/job-detail.json", func(t *testing.T, d jsonDoc) {
			d["links"].([]any)[0].(jsonDoc)["url"] = "/api/datasources/uid/${datasource}/resources/job?job=${job:percentEncode}"
		}, []string{"dashboard links: url", `format "percentEncode"`}},
		{"link to a dashboard that does not exist", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			o := override(t, panelByTitle(t, d, "My jobs"))
			link := o["properties"].([]any)[0].(jsonDoc)["value"].([]any)[0].(jsonDoc)
			link["url"] = strings.Replace(link["url"].(string), "/d/jobsight-job-detail/", "/d/jobsight-job/", 1)
		}, []string{`panel "My jobs" (table)`, `dashboard uid "jobsight-job"`}},
		{"unknown key in a panel link", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			panelByTitle(t, d, "My jobs")["links"] = []any{jsonDoc{"title": "Help", "url": "/d/jobsight-hogging", "icon": "doc"}}
		}, []string{`panel "My jobs" (table): links: [0]`, `unexpected field "icon"`}},
		{"unknown option in a panel inside a row", "dashboards/my-jobs.json", func(t *testing.T, d jsonDoc) {
			panels := d["panels"].([]any)
			inner := panels[0].(jsonDoc)
			inner["options"].(jsonDoc)["bogus"] = 1
			row := jsonDoc{"type": "row", "id": 99, "title": "Jobs", "collapsed": true,
				"gridPos": jsonDoc{"x": 0, "y": 0, "w": 24, "h": 1}, "panels": []any{inner}}
			d["panels"] = append([]any{row}, panels[1:]...)
		}, []string{`panel "My jobs" (table): options`, "unexpected field 'bogus'"}},
	}
	// Valid additions pass: the checks do not refuse what Grafana accepts.
	t.Run("valid additions", func(t *testing.T) {
		d := loadJSON(t, "dashboards/my-jobs.json")
		p := panelByTitle(t, d, "My jobs")
		p["links"] = []any{jsonDoc{"title": "Help", "url": "/d/jobsight-job-detail?var-datasource=${datasource}", "targetBlank": true}}
		p["options"].(jsonDoc)["cellHeight"] = "md"
		target(t, p, 0)["hide"] = false
		target(t, p, 0)["user"] = []any{"${__user.login}"}
		o := override(t, p)
		o["properties"] = append(o["properties"].([]any), jsonDoc{"id": "custom.width", "value": 120}, jsonDoc{"id": "unit", "value": "s"})
		raw, _ := json.Marshal(d)
		report(t, CheckDashboard("dashboards/my-jobs.json", raw, e))
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := loadJSON(t, c.file)
			c.mutate(t, d)
			raw, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			expectProblem(t, CheckDashboard(c.file, raw, e), append([]string{c.file + ": "}, c.want...)...)
		})
	}
}

// A datasource provisioned under another uid leaves the dashboards'
// defaults and the rules pointing at nothing.
func TestProvisionedUIDChanged(t *testing.T) {
	ds := replaceOnce(t, string(read(t, "provisioning/datasources/jobsight.yaml")), "uid: jobsight\n", "uid: jobsight-slurm\n")
	uids, err := ProvisionedUIDs([]byte(ds))
	if err != nil {
		t.Fatal(err)
	}
	e := env(t)
	e.UIDs = uids
	f := "dashboards/my-jobs.json"
	expectProblem(t, CheckDashboard(f, read(t, f), e), f+": variable datasource: current.value", `uid "jobsight-slurm"`)
	f = "provisioning/alerting/hogging.yaml"
	expectProblem(t, CheckAlerting(f, read(t, f), e), f+": ", `datasourceUid: "jobsight" is not a provisioned datasource uid`)
}

func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if n := strings.Count(s, old); n == 0 {
		t.Fatalf("mutation: %q not in the file", old)
	}
	return strings.Replace(s, old, new, 1)
}

func TestProvisioningMutations(t *testing.T) {
	e := env(t)
	const (
		dsFile    = "provisioning/datasources/jobsight.yaml"
		dashFile  = "provisioning/dashboards/jobsight.yaml"
		rulesFile = "provisioning/alerting/hogging.yaml"
		cpFile    = "provisioning/alerting/contact-points.yaml"
	)
	check := map[string]func(file string, raw []byte) []error{
		dsFile:    CheckDatasources,
		dashFile:  CheckDashboardProviders,
		rulesFile: func(f string, raw []byte) []error { return CheckAlerting(f, raw, e) },
		cpFile:    func(f string, raw []byte) []error { return CheckAlerting(f, raw, e) },
	}
	cases := []struct {
		name, file string
		mutate     func(t *testing.T, s string) string
		want       []string
	}{
		{"unknown top-level key", dsFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "\ndatasources:", "\ndatasource:")
		}, []string{"field datasource not found"}},
		{"unknown datasource key", dsFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "    isDefault: false", "    default: false")
		}, []string{"field default not found"}},
		{"unknown Jobsight jsonData key", dsFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "      elasticsearchUrl:", "      elasticsearchURL:")
		}, []string{`datasources[0] "Jobsight": jsonData`, `unexpected field "elasticsearchURL"`}},
		{"Jobsight jsonData the plugin refuses", dsFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "      clusterFilter:", "      timeoutSeconds: 900\n      clusterFilter:")
		}, []string{`datasources[0] "Jobsight": jsonData`, "the plugin refuses it", "timeoutSeconds"}},
		{"unknown secure field", dsFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "      elasticsearchPassword:", "      esPassword:")
		}, []string{`datasources[0] "Jobsight": secureJsonData.esPassword`, "not a secure field the plugin reads"}},
		{"undocumented placeholder", dsFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "$__env{JOBSIGHT_ES_URL}", "$__env{ES_URL}")
		}, []string{`datasources[0] "Jobsight": jsonData: elasticsearchUrl`, "ES_URL"}},
		{"unknown Prometheus jsonData key", dsFile, func(t *testing.T, s string) string {
			return s + "\n  - {name: Admin Prometheus, type: prometheus, uid: admin-prom, orgId: 2, url: \"http://p:9090\", jsonData: {method: POST}}\n"
		}, []string{`datasources[1] "Admin Prometheus": jsonData.method`, "not a setting"}},
		{"raw Prometheus for the dashboards' Viewers", dsFile, func(t *testing.T, s string) string {
			return s + "\n  - {name: Jobsight Prometheus, type: prometheus, uid: jobsight-prometheus, url: \"http://p:9090\"}\n"
		}, []string{`datasources[1] "Jobsight Prometheus": orgId`, "every Viewer could read every user's jobsight_job_* series"}},
		{"unknown provider key", dashFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "    allowUiUpdates:", "    allowUIUpdates:")
		}, []string{"field allowUIUpdates not found"}},
		{"unknown provider option", dashFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "foldersFromFilesStructure:", "foldersFromFileStructure:")
		}, []string{"field foldersFromFileStructure not found"}},
		{"unknown rule key", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "        labels:", "        label:")
		}, []string{"field label not found"}},
		{"rule on a datasource uid that is not provisioned", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "datasourceUid: jobsight\n", "datasourceUid: jobsight-slurm\n")
		}, []string{`rule "jobsight-gpus-idle": data[0] (refId A): datasourceUid`, `"jobsight-slurm" is not a provisioned datasource uid`}},
		{"rule model with an unknown field", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "              windowSeconds: 1800", "              window: 1800")
		}, []string{`rule "jobsight-gpus-idle": data[0] (refId A): model`, `unexpected field "window"`}},
		{"rule model the backend refuses", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "resources: [gpu]", "resources: [gpus]")
		}, []string{`rule "jobsight-gpus-idle": data[0] (refId A): model`, `resource "gpus" is unknown`}},
		{"rule model with a variable", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "resources: [gpu]", "resources: [gpu]\n              cluster: [$cluster]")
		}, []string{`rule "jobsight-gpus-idle": data[0] (refId A): model: cluster[0]`, "no template variables"}},
		{"condition not a refId", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "condition: C", "condition: D")
		}, []string{`rule "jobsight-gpus-idle": condition`, `"D" is not a refId`}},
		{"noDataState", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "noDataState: OK", "noDataState: Ok")
		}, []string{`rule "jobsight-gpus-idle": noDataState`, `"Ok"`}},
		{"execErrState", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "execErrState: Error", "execErrState: KeepLast")
		}, []string{`rule "jobsight-gpus-idle": execErrState`, `"KeepLast"`}},
		{"unknown reducer", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "reducer: last", "reducer: median")
		}, []string{`rule "jobsight-gpus-idle": data[1] (refId B): model: reducer`, `"median"`}},
		{"unknown reduce mode", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "mode: dropNN", "mode: dropNaN")
		}, []string{`data[1] (refId B): model: settings.mode`, `"dropNaN"`}},
		{"unknown expression key", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "              reducer: last", "              reducer: last\n              reduce: last")
		}, []string{`data[1] (refId B): model`, "unexpected field 'reduce'"}},
		{"unknown expression type", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "type: threshold", "type: sql")
		}, []string{`data[2] (refId C): model`, `"sql" is not an expression type`}},
		{"expression on a missing refId", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "expression: B", "expression: X")
		}, []string{`data[2] (refId C): model: expression`, `"X" is not a refId`}},
		{"unknown threshold evaluator", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "type: gt", "type: gte")
		}, []string{`data[2] (refId C): model: conditions[0].evaluator: type`, `"gte"`}},
		{"interval", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "interval: 1m", "interval: 45s")
		}, []string{`group "Jobsight hogging": interval`, `"45s"`}},
		{"for", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "for: 5m", "for: 5 min")
		}, []string{`rule "jobsight-gpus-idle": for`, "not a duration"}},
		{"annotation template", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "{{ $labels.job_id }} of", "{{ $labels.job_id } of")
		}, []string{`rule "jobsight-gpus-idle": annotations.summary`, "does not parse"}},
		{"runbook to a missing dashboard", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "runbook_url: /d/jobsight-hogging", "runbook_url: /d/jobsight-hog")
		}, []string{`annotations.runbook_url`, `"jobsight-hog"`}},
		{"label Grafana would expand as an environment variable", rulesFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "          resource: gpu", "          resource: gpu\n          job: '{{ $labels.job_id }}'")
		}, []string{`rule "jobsight-gpus-idle": labels.job`, "expands $labels here as an environment variable"}},
		{"contact point setting Grafana would expand", cpFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, `{{ template "default.title" . }}`, `{{ $labels.alertname }}`)
		}, []string{`receivers[0]: settings.subject`, "expands $labels here"}},
		{"unknown contact point key", cpFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "disableResolveMessage:", "disableResolveMessages:")
		}, []string{"field disableResolveMessages not found"}},
		{"unknown email setting", cpFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "addresses:", "address:")
		}, []string{`contact point "Jobsight hogging email": receivers[0]: settings`, `unexpected field "address"`}},
		{"unknown integration", cpFile, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "type: email", "type: mail")
		}, []string{`receivers[0]: type`, `"mail"`}},
		{"policy to a missing contact point", cpFile, func(t *testing.T, s string) string {
			return s + "\npolicies:\n  - orgId: 1\n    receiver: Jobsight hogging mail\n"
		}, []string{"policies[0]: receiver", `"Jobsight hogging mail"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := []byte(c.mutate(t, string(read(t, c.file))))
			expectProblem(t, check[c.file](c.file, raw), append([]string{c.file + ": "}, c.want...)...)
		})
	}
}

// TestDocumentedLinksNameShippedDashboards: every Grafana dashboard path
// (/d/<uid>/) that the docs, the READMEs, the config examples or the
// editors' placeholders show names a dashboard that ships. A wrong uid in
// the documented job_url broke every mailed report link.
func TestDocumentedLinksNameShippedDashboards(t *testing.T) {
	uids := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(root, "dashboards", "*.json"))
	for _, f := range files {
		var d struct {
			UID string `json:"uid"`
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		uids[d.UID] = true
	}
	link := regexp.MustCompile(`/d/([A-Za-z0-9_-]+)/`)
	checked := 0
	err := filepath.WalkDir(root, func(path string, de os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := de.Name()
		if de.IsDir() {
			if name == "node_modules" || name == "dist" || name == ".git" || name == "test-results" {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(name)
		if ext != ".md" && ext != ".yaml" && ext != ".yml" && ext != ".tsx" && ext != ".ts" ||
			strings.HasSuffix(name, ".test.tsx") || strings.HasSuffix(name, ".spec.ts") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			checked++
			if !uids[m[1]] {
				t.Errorf("%s links /d/%s/, which is no shipped dashboard's uid", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Error("no dashboard link found: the test reads nothing")
	}
}

// Agent health shows the nodes whose jobs run without an agent (issue 20,
// item 6: a SPANK plugin built for another Slurm release is refused
// silently with `optional` in plugstack.conf): the collector's series per
// node and the cluster's total, and a description that names the likely
// causes and how to tell them from users opting out.
func TestAgentHealthShowsUnreportedNodes(t *testing.T) {
	d := loadJSON(t, "dashboards/agent-health.json")
	p := panelByTitle(t, d, "Nodes running jobs without an agent report")
	var series []string
	for i := range p["targets"].([]any) {
		tg := target(t, p, i)
		if tg["queryType"] != "clusterSeries" {
			t.Errorf("targets[%d] is a %v query, want clusterSeries", i, tg["queryType"])
		}
		series = append(series, tg["series"].(string))
	}
	if !slices.Equal(series, []string{"clusterstate_node_unreported_jobs", "clusterstate_unreported_jobs"}) {
		t.Errorf("series %v, want the per-node series and the cluster total", series)
	}
	desc, _ := p["description"].(string)
	for _, cause := range []string{"built for another Slurm release", "plugstack.conf says optional", "version mismatch",
		"plugstack.conf is not on that node", "configless", "agent binary is missing", "--jobsight=off", "PrologFlags=Alloc"} {
		if !strings.Contains(desc, cause) {
			t.Errorf("the description does not name %q: %s", cause, desc)
		}
	}
	raw, _ := json.Marshal(d)
	report(t, CheckDashboard("dashboards/agent-health.json", raw, env(t)))
}
