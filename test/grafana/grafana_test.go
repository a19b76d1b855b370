package grafana

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/test/dashtest"
	"github.com/jobsight/jobsight/test/pluginhost"
	"github.com/jobsight/jobsight/test/stack"
)

// Who asks, as Grafana's plugin context names them. The Viewer's login is
// the Slurm user stack.TestUser (the default mapping: login = Slurm user), an
// account from the site's LDAP: start gives it the ID token Grafana
// forwards (signed by pluginhost.IDTokens, Grafana's root URL).
var (
	admin  = pluginhost.Caller{User: &backend.User{Login: "admin", Name: "Site Admin", Email: "admin@example.org", Role: "Admin"}}
	editor = pluginhost.Caller{User: &backend.User{Login: "ed", Name: "Ed Itor", Email: "ed@example.org", Role: "Editor"}}
	viewer = pluginhost.Caller{User: &backend.User{Login: stack.TestUser, Name: "Test User", Email: stack.TestUser + "@example.org", Role: "Viewer"}}
	// alertEngine is how Grafana's alert scheduler asks: its service
	// identity (login grafana_scheduler, role Admin, no ID token) and
	// FromAlert.
	alertEngine = pluginhost.Caller{User: &backend.User{Login: "grafana_scheduler", Role: "Admin"}, FromAlert: true}
)

// signViewer makes the Viewer's calls carry a fresh ID token from ids, as
// Grafana with ID forwarding does for a user signed in through LDAP.
func signViewer(ids *pluginhost.IDTokens) {
	cfg := pluginhost.DefaultConfig()
	cfg["GF_APP_URL"] = ids.URL()
	viewer.Config = cfg
	viewer.IDTokenFunc = func() string {
		return ids.Token(pluginhost.Identity{UID: "nobody-uid", Login: viewer.User.Login, Email: viewer.User.Email, AuthenticatedBy: "ldap"})
	}
}

// The Prometheus datasource of the dashboards is Grafana's own, not
// Jobsight's: its panels' expressions run on the real Prometheus directly.
const prometheusUID = "jobsight-prometheus"

// TestGrafanaSide runs, in order: real jobs (finished ones for the
// dashboards, then long ones for the alert rules); the provisioned
// datasource's health check; every panel of every dashboard through
// QueryData as an Admin and as a Viewer; the Viewer's probes of another
// user's job through every query type and resource route; the job pages;
// the alert rules' queries as the alert engine asks them, checked against
// the data-plane contract and evaluated as the rules say.
func TestGrafanaSide(t *testing.T) {
	e := need(t)

	// Finished jobs: a GPU job of account dashboards (the job detail
	// dashboard's job), a two-node job, a CPU-bound job with a name a user
	// could type, and a job of another user (stack.TestUser).
	jobFrom := time.Now().Add(-time.Minute)
	gpuJob := e.submit(t, "--gres=gpu:2", "--mem=100M", "-A", "dashboards", "-J", "dash-gpu", "--wrap", "sleep 15")
	multi := e.submit(t, "-p", "multi", "-N", "2", "--mem=50M", "-A", "dashboards", "-J", "dash-multi", "--wrap", "srun sleep 8")
	busy := e.submit(t, "--mem=50M", "-J", `busy "x"|* <b>`, "--wrap", "timeout 10 sh -c 'while :; do :; done'")
	theirs := e.submit(t, "--uid="+stack.TestUser, "--chdir=/tmp", "-J", "nobody-own", "--wrap", "sleep 3")
	for _, id := range []string{gpuJob, multi, busy, theirs} {
		doc := e.finalJob(t, id)
		// Under CI the agent and the SPANK plugin come from the installed
		// packages: every document says so by its version.
		if packagedVersion != "" && doc.AgentVersion != packagedVersion {
			t.Errorf("job %s was measured by agent %q, not the installed package's %q", id, doc.AgentVersion, packagedVersion)
		}
	}
	jobTo := time.Now().Add(time.Minute)
	rootJobs := []string{gpuJob, multi, busy}

	t.Run("provisioned datasource", func(t *testing.T) { e.checkHealth(t) })
	t.Run("collector token", e.collectorServesOnlyWithItsToken)

	t.Run("dashboards as admin", func(t *testing.T) {
		r := e.runner(admin, func(t testing.TB, v dashtest.Var, vals []string) []string {
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
		for file, d := range dashtest.Load(t, dashboardsDir) {
			t.Run(file, func(t *testing.T) {
				got := r.Run(t, file, d)
				if file == "my-jobs.json" {
					checkJobRange(t, got["My jobs"], e.docID(gpuJob), jobFrom, jobTo)
				}
			})
		}
	})

	t.Run("editor sees every job", func(t *testing.T) {
		// Editors have full access by default (fullAccessRoles).
		fs := e.query(t, editor, map[string]any{"queryType": "jobs", "limit": 500})
		for _, id := range append(rootJobs, theirs) {
			if !framesHold(fs, e.docID(id)) {
				t.Errorf("the Editor does not see job %s", e.docID(id))
			}
		}
	})

	t.Run("viewer sees only their jobs", func(t *testing.T) {
		forbidden := map[string]bool{}
		for _, id := range rootJobs {
			forbidden[id], forbidden[e.docID(id)] = true, true
		}
		leaks := func(s string) bool {
			return forbidden[s] || strings.Contains(s, "dash-gpu") || strings.Contains(s, "dash-multi") || strings.Contains(s, `busy "x"`)
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
						if leaks(s) {
							t.Errorf("%s: the Viewer sees root's job: %q in field %s", where, s, fld.Name)
						}
						if s == e.docID(theirs) {
							sawOwn = true
						}
					}
				}
			}
		}
		r := e.runner(viewer, func(t testing.TB, v dashtest.Var, vals []string) []string {
			for _, s := range vals {
				if leaks(s) {
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
		for file, d := range dashtest.Load(t, dashboardsDir) {
			if why := dashtest.FullAccessOnly[file]; why != "" {
				// Refused to a Viewer as a whole (403), never answered
				// with another user's data.
				t.Run(file, func(t *testing.T) {
					for ref, r := range e.answer(t, viewer, map[string]any{"queryType": "clusterSeries", "series": "agent_samples"},
						map[string]any{"queryType": "variable", "variable": "nodes"}) {
						if r.Status != backend.StatusForbidden {
							t.Errorf("%s (%s) as the Viewer: query %s status %d, error %v; want 403", file, why, ref, r.Status, r.Error)
						}
					}
				})
				continue
			}
			t.Run(file, func(t *testing.T) { r.Run(t, file, d) })
		}
		if !sawOwn {
			t.Errorf("the Viewer never saw their own job %s", e.docID(theirs))
		}
		t.Run("probes", func(t *testing.T) { e.viewerProbes(t, gpuJob, busy, scan, leaks) })
	})

	t.Run("job pages", func(t *testing.T) {
		// The report link of the job detail dashboard answers for the job
		// variable's value ("<cluster>:<id>") as Grafana forwards it.
		page := "job?job=" + url.QueryEscape(e.docID(gpuJob))
		r := e.resource(t, admin, page)
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), gpuJob) || !strings.Contains(string(r.Body), "<svg") {
			t.Errorf("job page of %s as admin: %d\n%.500s", e.docID(gpuJob), r.Status, r.Body)
		}
		if ct := strings.Join(r.Headers["Content-Type"], ""); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("job page content type %q", ct)
		}
		r = e.resource(t, viewer, "job?job="+url.QueryEscape(e.docID(theirs)))
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "nobody-own") {
			t.Errorf("the Viewer's own job page: %d\n%.500s", r.Status, r.Body)
		}
		dashboardLinks(t, gpuJob)
	})

	// The alert test's jobs are cancelled at the end.
	t.Run("hogging alert rules", func(st *testing.T) { e.hoggingAlert(st, t) })
}

// checkHealth: the provisioned datasource passes Grafana's "Save & test";
// a wrong password fails it naming Elasticsearch, and never echoes it.
func (e *env) checkHealth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := e.host.CheckHealth(ctx, e.ds, admin)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != backend.HealthStatusOk {
		t.Errorf("health check of the provisioned datasource: %v %s", r.Status, r.Message)
	}
	var jd map[string]any
	if err := json.Unmarshal(e.ds.JSONData, &jd); err != nil {
		t.Fatal(err)
	}
	if jd["elasticsearchUrl"] != e.st.Elasticsearch.URL || jd["elasticsearchPassword"] != nil || e.ds.SecureJSONData["elasticsearchPassword"] == "" {
		t.Errorf("the provisioning file's placeholders did not expand as Grafana expands them: %s", e.ds.JSONData)
	}
	bad := e.ds
	bad.UID, bad.ID = "jobsight-badpw", 99
	bad.SecureJSONData = map[string]string{"elasticsearchPassword": "not-the-password-42"}
	r, err = e.host.CheckHealth(ctx, bad, admin)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != backend.HealthStatusError || !strings.Contains(r.Message, "Elasticsearch") || strings.Contains(r.Message, "not-the-password-42") {
		t.Errorf("health check with a wrong password: %v %q", r.Status, r.Message)
	}
	if strings.Contains(e.host.Log(), "not-the-password-42") || strings.Contains(e.host.Log(), e.st.Elasticsearch.Password) {
		t.Errorf("the plugin logged a password")
	}
}

// runner runs dashboards through the plugin host as c.
func (e *env) runner(c pluginhost.Caller, pick func(testing.TB, dashtest.Var, []string) []string) dashtest.Runner {
	return dashtest.Runner{
		JobsightUID: e.ds.UID, PrometheusUID: prometheusUID, Pick: pick,
		Jobsight: func(t testing.TB, where string, model map[string]any) data.Frames {
			return e.query(t, c, model)
		},
		Prometheus: func(t testing.TB, where, expr string) int { return e.promRun(t, expr) },
	}
}

// answer sends the models in one QueryData request over the last 30
// minutes and returns each response by refId (A, B, …).
func (e *env) answer(t testing.TB, c pluginhost.Caller, models ...map[string]any) map[string]backend.DataResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now()
	var qs []pluginhost.Query
	for _, m := range models {
		qs = append(qs, pluginhost.Query{Model: m, From: now.Add(-30 * time.Minute), To: now})
	}
	resp, err := e.host.QueryData(ctx, e.ds, c, qs...)
	if err != nil {
		t.Fatalf("QueryData: %v", err)
	}
	out := map[string]backend.DataResponse{}
	for i := range models {
		ref := string(rune('A' + i))
		r, ok := resp.Responses[ref]
		if !ok {
			t.Fatalf("QueryData answered no %s", ref)
		}
		out[ref] = r
	}
	return out
}

// query runs one model and returns its frames, failing on an error.
func (e *env) query(t testing.TB, c pluginhost.Caller, model map[string]any) data.Frames {
	t.Helper()
	r := e.answer(t, c, model)["A"]
	if r.Error != nil {
		t.Fatalf("query %v as %s: %v", model, who(c), r.Error)
	}
	return r.Frames
}

func who(c pluginhost.Caller) string {
	if c.User == nil {
		return "the alert engine"
	}
	return c.User.Login + " (" + c.User.Role + ")"
}

// resource calls a resource route as c.
func (e *env) resource(t testing.TB, c pluginhost.Caller, path string) *pluginhost.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := e.host.CallResource(ctx, e.ds, c, http.MethodGet, path, nil)
	if err != nil {
		t.Fatalf("resource %s as %s: %v", path, who(c), err)
	}
	return r
}

// promRun runs a range query over the last 30 minutes on the test
// Prometheus, as Grafana's Prometheus datasource runs a time-series
// panel's target, and returns how many series it answered; a query
// Prometheus rejects fails the test.
func (e *env) promRun(t testing.TB, expr string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	now := time.Now()
	q := url.Values{"query": {expr}, "start": {strconv.FormatInt(now.Add(-30*time.Minute).Unix(), 10)},
		"end": {strconv.FormatInt(now.Unix(), 10)}, "step": {"15"}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.st.Prometheus.URL+"/api/v1/query_range?"+q.Encode(), nil)
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
		t.Fatalf("Prometheus rejects %s: %v %s", expr, err, ans.Error)
	}
	return len(ans.Data.Result)
}

// framesHold reports whether any field of fs holds the value s.
func framesHold(fs data.Frames, s string) bool {
	for _, f := range fs {
		for _, fld := range f.Fields {
			for i := 0; i < fld.Len(); i++ {
				if v, ok := fld.ConcreteAt(i); ok && fmt.Sprint(v) == s {
					return true
				}
			}
		}
	}
	return false
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
