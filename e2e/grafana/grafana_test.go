package grafanae2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/dashtest"
)

const (
	jobsightUID   = "jobsight"
	prometheusUID = "jobsight-prometheus"
)

// TestGrafana runs, in order: real jobs (finished ones for the dashboards,
// then long ones for the alert rules); the plugin and provisioning as
// Grafana loaded them; every panel through /api/ds/query as an admin and as
// a Viewer; the alert rules going to Firing for the hogging job only; the
// browser tests.
func TestGrafana(t *testing.T) {
	e := need(t)
	adm := e.admin()

	// Finished jobs: a GPU job of account dashboards (the job detail
	// dashboard's job), a two-node job, a CPU-bound job, and a job of
	// another user (nobody), with a name a user could type.
	jobFrom := time.Now().Add(-time.Minute)
	gpuJob := e.submit(t, "--gres=gpu:2", "--mem=100M", "-A", "dashboards", "-J", "dash-gpu", "--wrap", "sleep 15")
	multi := e.submit(t, "-p", "multi", "-N", "2", "--mem=50M", "-A", "dashboards", "-J", "dash-multi", "--wrap", "srun sleep 8")
	busy := e.submit(t, "--mem=50M", "-J", `busy "x"|* <b>`, "--wrap", "timeout 10 sh -c 'while :; do :; done'")
	theirs := e.submit(t, "--uid=nobody", "--chdir=/tmp", "-J", "nobody-secret", "--wrap", "sleep 3")
	for _, id := range []string{gpuJob, multi, busy, theirs} {
		e.finalJob(t, id)
	}
	jobTo := time.Now().Add(time.Minute)
	rootJobs := []string{gpuJob, multi, busy}

	t.Run("plugin and provisioning", func(t *testing.T) {
		var ps struct {
			ID        string `json:"id"`
			Enabled   bool   `json:"enabled"`
			Signature string `json:"signature"`
			Info      struct {
				Version string `json:"version"`
			} `json:"info"`
		}
		adm.mustDo(t, "GET", "/api/plugins/"+dashtest.PluginID+"/settings", nil, &ps)
		if ps.ID != dashtest.PluginID || ps.Info.Version == "" {
			t.Errorf("plugin settings %+v", ps)
		}
		var health struct {
			Status  string `json:"status"`
			Message string `json:"message"`
		}
		adm.mustDo(t, "GET", "/api/datasources/uid/"+jobsightUID+"/health", nil, &health)
		if health.Status != "OK" {
			t.Errorf("health check of the provisioned datasource: %+v", health)
		}
		var ds struct {
			Type           string          `json:"type"`
			JSONData       map[string]any  `json:"jsonData"`
			SecureJSONData map[string]bool `json:"secureJsonFields"`
		}
		adm.mustDo(t, "GET", "/api/datasources/uid/"+jobsightUID, nil, &ds)
		// The placeholders expanded from Grafana's environment; the
		// password stored as a secret, never echoed.
		if ds.Type != dashtest.PluginID || ds.JSONData["elasticsearchUrl"] != e.st.Elasticsearch.URL ||
			!ds.SecureJSONData["elasticsearchPassword"] || ds.JSONData["elasticsearchPassword"] != nil {
			t.Errorf("provisioned datasource: %+v", ds)
		}
		// Every shipped dashboard, provisioned into the Jobsight folder.
		var found []struct {
			UID         string `json:"uid"`
			FolderTitle string `json:"folderTitle"`
		}
		adm.mustDo(t, "GET", "/api/search?type=dash-db&limit=5000", nil, &found)
		for file, d := range dashtest.Load(t, filepath.Join(repoRoot, "dashboards")) {
			if !slices.ContainsFunc(found, func(f struct {
				UID         string `json:"uid"`
				FolderTitle string `json:"folderTitle"`
			}) bool {
				return f.UID == d.UID && f.FolderTitle == "Jobsight"
			}) {
				t.Errorf("%s (uid %s) is not provisioned in the Jobsight folder: %+v", file, d.UID, found)
			}
		}
		var rules []struct {
			UID       string `json:"uid"`
			FolderUID string `json:"folderUID"`
			RuleGroup string `json:"ruleGroup"`
		}
		adm.mustDo(t, "GET", "/api/v1/provisioning/alert-rules", nil, &rules)
		for _, uid := range []string{"jobsight-gpus-idle", "jobsight-cores-idle"} {
			if !slices.ContainsFunc(rules, func(r struct {
				UID       string `json:"uid"`
				FolderUID string `json:"folderUID"`
				RuleGroup string `json:"ruleGroup"`
			}) bool {
				return r.UID == uid && r.RuleGroup == "Jobsight hogging"
			}) {
				t.Errorf("alert rule %s is not provisioned in its group: %+v", uid, rules)
			}
		}
		var cps []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		}
		adm.mustDo(t, "GET", "/api/v1/provisioning/contact-points", nil, &cps)
		if !slices.ContainsFunc(cps, func(c struct {
			Name string `json:"name"`
			Type string `json:"type"`
		}) bool {
			return c.Type == "email" && strings.Contains(c.Name, "Jobsight")
		}) {
			t.Errorf("no provisioned Jobsight email contact point: %+v", cps)
		}
	})

	t.Run("dashboards import", func(t *testing.T) {
		// What an admin does who copies a dashboard JSON into Grafana by
		// hand: it imports, under another uid, and is found again.
		for file := range dashtest.Load(t, filepath.Join(repoRoot, "dashboards")) {
			raw, err := os.ReadFile(filepath.Join(repoRoot, "dashboards", file))
			if err != nil {
				t.Fatal(err)
			}
			var d map[string]any
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			uid := fmt.Sprint(d["uid"]) + "-copy"
			d["uid"], d["id"], d["title"] = uid, nil, fmt.Sprint(d["title"])+" (imported copy)"
			var ans struct {
				Status string `json:"status"`
				UID    string `json:"uid"`
			}
			adm.mustDo(t, "POST", "/api/dashboards/db", map[string]any{"dashboard": d, "overwrite": true}, &ans)
			var back struct {
				Dashboard map[string]any `json:"dashboard"`
			}
			adm.mustDo(t, "GET", "/api/dashboards/uid/"+uid, nil, &back)
			if len(back.Dashboard["panels"].([]any)) != len(d["panels"].([]any)) {
				t.Errorf("%s: the imported copy has %d panels, the file %d", file, len(back.Dashboard["panels"].([]any)), len(d["panels"].([]any)))
			}
			adm.mustDo(t, "DELETE", "/api/dashboards/uid/"+uid, nil, nil)
		}
	})

	t.Run("dashboards as admin", func(t *testing.T) {
		r := e.runner(adm, func(t testing.TB, v dashtest.Var, vals []string) []string {
			switch {
			case v.Name == "job":
				if !slices.Contains(vals, e.docID(gpuJob)) {
					t.Fatalf("the jobs variable lacks %s: %v", e.docID(gpuJob), vals)
				}
				return []string{e.docID(gpuJob)}
			case v.Name == "cluster" && !slices.Contains(vals, cluster):
				t.Fatalf("the clusters variable lacks %s: %v", cluster, vals)
			case !v.Multi:
				return vals[:1]
			}
			return vals
		})
		for file, d := range e.provisionedDashboards(t, adm) {
			t.Run(file, func(t *testing.T) {
				got := r.Run(t, file, d)
				if file == "my-jobs.json" {
					checkJobRange(t, got["My jobs"], e.docID(gpuJob), jobFrom, jobTo)
				}
			})
		}
	})

	t.Run("viewer sees only their jobs", func(t *testing.T) {
		// A Viewer whose login is the Slurm user nobody, created the way an
		// admin (or a login through an identity provider) creates users.
		viewer := client{e.gf.URL, "nobody", "viewer-password-1"}
		var created struct {
			ID int `json:"id"`
		}
		adm.mustDo(t, "POST", "/api/admin/users", map[string]any{"name": "Nobody", "login": viewer.user, "email": "nobody@example.org", "password": viewer.password}, &created)
		var orgs []struct {
			Role string `json:"role"`
		}
		viewer.mustDo(t, "GET", "/api/user/orgs", nil, &orgs)
		if len(orgs) != 1 || orgs[0].Role != "Viewer" {
			t.Fatalf("the new user's roles: %+v", orgs)
		}
		forbidden := map[string]bool{}
		for _, id := range rootJobs {
			forbidden[id], forbidden[e.docID(id)] = true, true
		}
		sawOwn := false
		scan := func(t testing.TB, where string, fs data.Frames) {
			for _, f := range fs {
				for _, fld := range f.Fields {
					for i := 0; i < fld.Len(); i++ {
						v, ok := fld.ConcreteAt(i)
						if !ok {
							continue
						}
						s := fmt.Sprint(v)
						if forbidden[s] || strings.Contains(s, "dash-gpu") || strings.Contains(s, "busy \"x\"") {
							t.Errorf("%s: the Viewer sees root's job: %q in field %s", where, s, fld.Name)
						}
						if s == theirs || s == e.docID(theirs) {
							sawOwn = true
						}
					}
				}
			}
		}
		r := e.runner(viewer, func(t testing.TB, v dashtest.Var, vals []string) []string {
			for _, s := range vals {
				if forbidden[s] {
					t.Errorf("variable %s lists root's job %s to the Viewer", v.Name, s)
				}
			}
			if v.Name == "job" || !v.Multi {
				return vals[:1]
			}
			return vals
		})
		r.Quiet = true
		jobsight := r.Jobsight
		r.Jobsight = func(t testing.TB, where string, model map[string]any) data.Frames {
			fs := jobsight(t, where, model)
			scan(t, where, fs)
			return fs
		}
		for file, d := range e.provisionedDashboards(t, viewer) {
			t.Run(file, func(t *testing.T) { r.Run(t, file, d) })
		}
		// A forged filter naming root's job asks for nothing the Viewer may see.
		fs := e.query(t, viewer, map[string]any{"queryType": "jobs", "user": []string{"root"}, "jobId": e.docID(gpuJob)})
		scan(t, "forged filter", fs)
		if !sawOwn {
			t.Errorf("the Viewer never saw their own job %s", theirs)
		}
	})

	// The alert test's jobs run on through the browser tests (the hogging
	// query editor and dashboard show them) and are cancelled at the end.
	t.Run("hogging alert", func(st *testing.T) { e.hoggingAlert(st, t, adm) })

	t.Run("browser", func(t *testing.T) { e.browser(t, gpuJob, jobFrom, jobTo) })
}

// runner runs dashboards through Grafana's /api/ds/query as c.
func (e *env) runner(c client, pick func(testing.TB, dashtest.Var, []string) []string) dashtest.Runner {
	return dashtest.Runner{
		JobsightUID: jobsightUID, PrometheusUID: prometheusUID, Pick: pick,
		Jobsight: func(t testing.TB, where string, model map[string]any) data.Frames {
			return e.query(t, c, model)
		},
		Prometheus: func(t testing.TB, where, expr string) int {
			fs := e.queryDS(t, c, map[string]any{"datasource": map[string]any{"uid": prometheusUID, "type": "prometheus"},
				"expr": expr, "range": true, "instant": false})
			n := 0
			for _, f := range fs {
				if f.Rows() > 0 {
					n++
				}
			}
			return n
		},
	}
}

// provisionedDashboards reads every shipped dashboard back from Grafana, as
// provisioned, by the uid of its file.
func (e *env) provisionedDashboards(t *testing.T, c client) map[string]dashtest.Dashboard {
	t.Helper()
	out := map[string]dashtest.Dashboard{}
	for file, d := range dashtest.Load(t, filepath.Join(repoRoot, "dashboards")) {
		var got struct {
			Dashboard json.RawMessage `json:"dashboard"`
			Meta      struct {
				Provisioned bool `json:"provisioned"`
			} `json:"meta"`
		}
		c.mustDo(t, "GET", "/api/dashboards/uid/"+url.PathEscape(d.UID), nil, &got)
		var pd dashtest.Dashboard
		if err := json.Unmarshal(got.Dashboard, &pd); err != nil || !got.Meta.Provisioned {
			t.Fatalf("%s: provisioned %v, %v", file, got.Meta.Provisioned, err)
		}
		out[file] = pd
	}
	return out
}

// query runs one Jobsight query model through /api/ds/query over the last
// 30 minutes.
func (e *env) query(t testing.TB, c client, model map[string]any) data.Frames {
	t.Helper()
	m := map[string]any{}
	for k, v := range model {
		m[k] = v
	}
	// A dashboard target names "${datasource}": its resolved value.
	m["datasource"] = map[string]any{"uid": jobsightUID, "type": dashtest.PluginID}
	return e.queryDS(t, c, m)
}

// queryDS posts one query to /api/ds/query and returns its frames, failing
// the test on an error.
func (e *env) queryDS(t testing.TB, c client, q map[string]any) data.Frames {
	t.Helper()
	q["refId"] = "A"
	if q["maxDataPoints"] == nil {
		q["maxDataPoints"] = 300
	}
	if q["intervalMs"] == nil {
		q["intervalMs"] = 15000
	}
	var raw json.RawMessage
	code := c.do(t, "POST", "/api/ds/query", map[string]any{"queries": []any{q}, "from": "now-30m", "to": "now"}, &raw)
	var resp backend.QueryDataResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatalf("/api/ds/query as %s: %d, %v\n%s", c.user, code, err, trim(raw))
	}
	r, ok := resp.Responses["A"]
	if code != http.StatusOK || !ok || r.Error != nil {
		t.Fatalf("/api/ds/query as %s: status %d, error %v\nquery %v\nanswer %s", c.user, code, r.Error, q, trim(raw))
	}
	return r.Frames
}

// hoggingAlert starts a job holding idle GPUs and an idle core on a busy
// partition (a job waits for its GPUs), an efficient job beside it and a
// job holding an idle GPU on a quiet partition, and watches the
// provisioned rules: the hogging job must fire both, the others neither.
func (e *env) hoggingAlert(t, parent *testing.T, adm client) {
	loop := "nice -n 19 sh -c 'while :; do :; done'"
	hog := e.submit(t, "-p", "debug", "--gres=gpu:4", "--cpus-per-task=1", "--mem=100M", "-J", "hogging", "--wrap", "sleep 900")
	efficient := e.submit(t, "-p", "debug", "--gres=gpu:1", "--cpus-per-task=1", "--mem=50M", "-J", "efficient", "--wrap", loop)
	quiet := e.submit(t, "-p", "multi", "-w", "gnode2", "--gres=gpu:2", "--cpus-per-task=1", "--mem=50M", "-J", "quiet-partition", "--wrap", loop)
	for _, id := range []string{hog, efficient, quiet} {
		e.cancelAt(parent, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, id := range []string{hog, efficient, quiet} {
		if st, err := e.st.Slurm.WaitJobState(ctx, id, "RUNNING"); err != nil {
			t.Fatalf("job %s: %s %v", id, st, err)
		}
	}
	// Now debug is full: this one waits for its GPUs, and the
	// cluster-state collector reports the pending demand.
	waiting := e.submit(t, "-p", "debug", "--gres=gpu:8", "--mem=50M", "-J", "waiting", "--wrap", "sleep 5")
	e.cancelAt(parent, waiting)
	started := time.Now()

	type alert struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		State       string            `json:"state"`
	}
	var rules struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name   string  `json:"name"`
					Health string  `json:"health"`
					Alerts []alert `json:"alerts"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	firing := map[string]alert{} // rule title → the hogging job's alert
	deadline := time.Now().Add(5 * time.Minute)
	for len(firing) < 2 {
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(rules, "", " ")
			t.Fatalf("after %s the hogging job %s fires %d of 2 rules; rules now:\n%s", time.Since(started).Round(time.Second), hog, len(firing), b)
		}
		time.Sleep(5 * time.Second)
		adm.mustDo(t, "GET", "/api/prometheus/grafana/api/v1/rules", nil, &rules)
		for _, g := range rules.Data.Groups {
			for _, r := range g.Rules {
				if r.Health == "error" {
					t.Errorf("rule %q evaluates with an error", r.Name)
				}
				for _, a := range r.Alerts {
					id := a.Labels["job_id"]
					switch {
					case id == hog && a.State == "Alerting":
						firing[r.Name] = a
					case (id == efficient || id == quiet || id == waiting) && a.State != "Normal":
						t.Errorf("rule %q: %s for job %s (%s), which is not hogging", r.Name, a.State, id, a.Labels["resource"])
					}
				}
			}
		}
	}
	t.Logf("the hogging job fired both rules %s after the waiting job was submitted", time.Since(started).Round(time.Second))
	for name, a := range firing {
		if a.Labels["cluster"] != cluster || a.Labels["user"] != "root" || a.Labels["partition"] != "debug" ||
			!strings.Contains(a.Annotations["summary"], cluster+":"+hog) {
			t.Errorf("rule %q: alert labels %v, annotations %v", name, a.Labels, a.Annotations)
		}
	}
	// Firing alerts reach Grafana's Alertmanager, which routes them to the
	// contact points.
	var am []struct {
		Labels map[string]string `json:"labels"`
	}
	adm.mustDo(t, "GET", "/api/alertmanager/grafana/api/v2/alerts?active=true", nil, &am)
	if !slices.ContainsFunc(am, func(a struct {
		Labels map[string]string `json:"labels"`
	}) bool {
		return a.Labels["job_id"] == hog
	}) {
		t.Errorf("the Alertmanager has no alert for %s: %v", hog, am)
	}
}

// browser runs the Playwright tests (e2e/grafana/browser) against this
// Grafana with Debian's Chromium.
func (e *env) browser(t *testing.T, jobID string, from, to time.Time) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the browser tests need Debian's chromium: %v", err)
	}
	root, _ := filepath.Abs(repoRoot)
	if _, err := os.Stat(filepath.Join(root, "node_modules", "@grafana", "plugin-e2e")); err != nil {
		t.Fatalf("the browser tests need npm ci in %s: %v", root, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npx", "playwright", "test", "--config", "e2e/grafana/playwright.config.ts")
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"GRAFANA_URL="+e.gf.URL,
		"GRAFANA_ADMIN_USER="+e.gf.Admin, "GRAFANA_ADMIN_PASSWORD="+e.gf.AdminPassword,
		"JOBSIGHT_CHROMIUM="+chromium,
		"JOBSIGHT_ES_URL="+e.st.Elasticsearch.URL, "JOBSIGHT_ES_USER="+e.st.Elasticsearch.User, "JOBSIGHT_ES_PASSWORD="+e.st.Elasticsearch.Password,
		"JOBSIGHT_PROMETHEUS_URL="+e.st.Prometheus.URL,
		"JOBSIGHT_TEST_JOB="+e.docID(jobID),
		fmt.Sprintf("JOBSIGHT_TEST_JOB_RANGE=from=%d&to=%d", from.UnixMilli(), to.UnixMilli()),
		"PLAYWRIGHT_HTML_OPEN=never",
	)
	out, err := cmd.CombinedOutput()
	t.Logf("playwright:\n%s", out)
	if err != nil {
		t.Fatalf("the browser tests failed: %v", err)
	}
}

// checkJobRange: the My jobs row of a finished job carries its run as the
// job detail link's time range (a minute either side of start and end).
func checkJobRange(t *testing.T, fs data.Frames, docID string, submitted, finished time.Time) {
	t.Helper()
	for _, f := range fs {
		ids, _ := f.FieldByName("doc_id")
		from, _ := f.FieldByName("range_from")
		to, _ := f.FieldByName("range_to")
		if ids == nil || from == nil || to == nil {
			continue
		}
		for i := 0; i < ids.Len(); i++ {
			if v, _ := ids.ConcreteAt(i); v != docID {
				continue
			}
			fv, _ := from.ConcreteAt(i)
			tv, _ := to.ConcreteAt(i)
			fm, err1 := strconv.ParseInt(fmt.Sprint(fv), 10, 64)
			tm, err2 := strconv.ParseInt(fmt.Sprint(tv), 10, 64)
			if err1 != nil || err2 != nil || fm < submitted.Add(-time.Minute).UnixMilli() || tm > finished.Add(2*time.Minute).UnixMilli() || fm >= tm {
				t.Errorf("job %s: link range from=%v to=%v, want its run (submitted %s, final by %s)", docID, fv, tv, submitted, finished)
			}
			return
		}
	}
	t.Errorf("the My jobs panel has no row with range_from/range_to for %s", docID)
}
