package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/site/clusterstate"
	"github.com/jobsight/jobsight/pkg/plugin"
	"github.com/jobsight/jobsight/test/stack"
)

// dsSettings is the datasource's jsonData for the test stack; extra keys
// are merged in.
func (e *env) dsSettings(t *testing.T, extra map[string]any) backend.DataSourceInstanceSettings {
	t.Helper()
	js := map[string]any{
		"elasticsearchUrl": e.st.Elasticsearch.URL,
		"prometheusUrl":    e.st.Prometheus.URL,
		"timeoutSeconds":   20,
		// The Viewer here is mapped by the login the plugin context
		// names, without Grafana's signed ID token: how a restricted
		// viewer's identity is verified is tested through the plugin
		// host (test/pluginhost, TestWhoSeesWhat), what they then see
		// here.
		"identitySource": "unverifiedLogin",
	}
	sec := map[string]string{}
	if e.st.Elasticsearch.User != "" {
		js["elasticsearchUser"] = e.st.Elasticsearch.User
		sec["elasticsearchPassword"] = e.st.Elasticsearch.Password
	}
	if e.st.Elasticsearch.CACertFile != "" {
		pem, err := os.ReadFile(e.st.Elasticsearch.CACertFile)
		if err != nil {
			t.Fatal(err)
		}
		js["tlsCaCert"] = string(pem)
	}
	for k, v := range extra {
		js[k] = v
	}
	raw, _ := json.Marshal(js)
	return backend.DataSourceInstanceSettings{UID: "jobsight-e2e", JSONData: raw, DecryptedSecureJSONData: sec}
}

func newDS(t *testing.T, inst backend.DataSourceInstanceSettings) *plugin.Datasource {
	t.Helper()
	i, err := plugin.NewDatasource(context.Background(), inst)
	if err != nil {
		t.Fatal(err)
	}
	ds := i.(*plugin.Datasource)
	t.Cleanup(ds.Dispose)
	return ds
}

// Grafana users of the tests.
var (
	grafanaAdmin  = &backend.User{Login: "admin", Role: "Admin"}
	grafanaNobody = &backend.User{Login: stack.TestUser, Email: stack.TestUser + "@example.org", Role: "Viewer"}
)

// dsQuery runs one query through QueryData as user over the last 30
// minutes and returns its response.
func dsQuery(t *testing.T, ds *plugin.Datasource, inst backend.DataSourceInstanceSettings, user *backend.User, headers map[string]string, model map[string]any) backend.DataResponse {
	t.Helper()
	raw, _ := json.Marshal(model)
	now := time.Now()
	resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{
		PluginContext: backend.PluginContext{User: user, DataSourceInstanceSettings: &inst},
		Headers:       headers,
		Queries: []backend.DataQuery{{RefID: "A", JSON: raw, MaxDataPoints: 300,
			TimeRange: backend.TimeRange{From: now.Add(-30 * time.Minute), To: now}}},
	})
	if err != nil {
		t.Fatalf("QueryData %s: %v", raw, err)
	}
	return resp.Responses["A"]
}

// mustFrames fails unless the response has frames and no error, and
// checks the per-panel request budget.
func mustFrames(t testing.TB, what string, r backend.DataResponse) data.Frames {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("%s: %v", what, r.Error)
	}
	if len(r.Frames) == 0 {
		t.Fatalf("%s: no frames", what)
	}
	if m, ok := r.Frames[0].Meta.Custom.(map[string]any); ok {
		es, _ := m["elasticsearchRequests"].(int64)
		prom, _ := m["prometheusRequests"].(int64)
		if es+prom > 5 || es+prom == 0 {
			t.Errorf("%s: %d Elasticsearch + %d Prometheus requests; the budget is 1–5 per panel", what, es, prom)
		}
	} else {
		t.Errorf("%s: no request counts in the frame metadata", what)
	}
	return r.Frames
}

// column returns a frame's string column by name.
func column(t *testing.T, f *data.Frame, name string) []string {
	t.Helper()
	fld, _ := f.FieldByName(name)
	if fld == nil {
		t.Fatalf("frame %s has no field %s", f.Name, name)
	}
	out := make([]string, fld.Len())
	for i := range out {
		switch v := fld.At(i).(type) {
		case string:
			out[i] = v
		case *string:
			if v != nil {
				out[i] = *v
			}
		}
	}
	return out
}

// number returns a frame's numeric value at row i of field name (NaN-free;
// -1 when null).
func number(t *testing.T, f *data.Frame, name string, i int) float64 {
	t.Helper()
	fld, _ := f.FieldByName(name)
	if fld == nil {
		t.Fatalf("frame %s has no field %s", f.Name, name)
	}
	v, err := fld.NullableFloatAt(i)
	if err != nil {
		t.Fatal(err)
	}
	if v == nil {
		return -1
	}
	return *v
}

func rowOf(ids []string, id string) int {
	for i, v := range ids {
		if v == id {
			return i
		}
	}
	return -1
}

// framesByName returns the frames whose name is name.
func framesByName(fs data.Frames, name string) data.Frames {
	var out data.Frames
	for _, f := range fs {
		if f.Name == name {
			out = append(out, f)
		}
	}
	return out
}

func maxValue(f *data.Frame) float64 {
	m := -1.0
	fld, _ := f.FieldByName("value")
	for i := 0; i < fld.Len(); i++ {
		if v, err := fld.FloatAt(i); err == nil && v > m {
			m = v
		}
	}
	return m
}

// TestDatasourceOnRealJobs fills the stores with real jobs — concurrent,
// one multi-node, one of another user with a hostile name, a GPU job
// holding an idle GPU — and runs every query type through the datasource
// as an admin, as a Viewer mapped to another Slurm user, and as the alert
// engine.
func TestDatasourceOnRealJobs(t *testing.T) {
	e := need(t)
	t.Parallel()
	// The hogging job runs past the 60 s window while the others finish,
	// on a node of its own (the first node has two CPUs, which the busy
	// job needs); it is cancelled at the end.
	hog := e.submit(t, "-p", "multi", "-w", "e2enode3", "--gres=gpu:2", "--cpus-per-task=1", "--mem=100M", "-J", "hogging-job", "--wrap", "sleep 600")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = e.st.Slurm.Scancel(ctx, hog)
	})
	// Another user's long job on the same partition: it counts in the
	// partition's contention for everyone, though only nobody sees it.
	theirsLong := e.submit(t, "--uid="+stack.TestUser, "--chdir=/tmp", "-p", "multi", "-w", "e2enode3", "--cpus-per-task=1", "--mem=50M", "-J", "nobody-long", "--wrap", "sleep 600")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = e.st.Slurm.Scancel(ctx, theirsLong)
	})
	name := `train "x"|* ` + "\u202e" + `evil`
	busy := e.submit(t, "--cpus-per-task=2", "--mem=200M", "-J", name, "--wrap", `timeout 12 sh -c 'while :; do :; done' & timeout 12 sh -c 'while :; do :; done'; wait`)
	theirs := e.submit(t, "--uid="+stack.TestUser, "--chdir=/tmp", "-J", "nobody-secret", "--wrap", "sleep 6")
	multi := e.submit(t, "-p", "multi", "-N", "2", "--mem=50M", "--wrap", "srun sleep 8")
	for _, id := range []string{busy, theirs, multi} {
		e.finalJob(t, e.docID(id), jobWait)
	}

	inst := e.dsSettings(t, map[string]any{
		"allocations": []map[string]any{{"cluster": cluster, "resource": "cpu", "hours": 1000}},
	})
	ds := newDS(t, inst)
	admin := func(model map[string]any) backend.DataResponse {
		return dsQuery(t, ds, inst, grafanaAdmin, nil, model)
	}
	viewer := func(model map[string]any) backend.DataResponse {
		return dsQuery(t, ds, inst, grafanaNobody, nil, model)
	}

	t.Run("health", func(t *testing.T) {
		res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
		if err != nil || res.Status != backend.HealthStatusOk {
			t.Fatalf("health: %v %+v", err, res)
		}
	})

	t.Run("jobs", func(t *testing.T) {
		fs := mustFrames(t, "jobs", admin(map[string]any{"queryType": "jobs", "limit": 500}))
		ids := column(t, fs[0], "job_id")
		users := column(t, fs[0], "user")
		for id, user := range map[string]string{busy: "root", theirs: stack.TestUser, multi: "root", hog: "root"} {
			i := rowOf(ids, id)
			if i < 0 {
				t.Fatalf("job %s missing from the jobs table (%v)", id, ids)
			}
			if users[i] != user {
				t.Errorf("job %s: user %q, want %q", id, users[i], user)
			}
		}
		i := rowOf(ids, busy)
		if got := column(t, fs[0], "name")[i]; got != name {
			t.Errorf("name %q, want %q", got, name)
		}
		if c := number(t, fs[0], "cpus_requested", i); c != 2 {
			t.Errorf("busy job: cpus requested %g, want 2", c)
		}
		// Two busy loops on a two-core machine shared with the other
		// tests: at least a few tenths of a core each, never over 2.
		if c := number(t, fs[0], "cpu_cores_used", i); c < 0.5 || c > 2.3 {
			t.Errorf("busy job: cores used %g, want 0.5–2.3", c)
		}
		// The running job's usage is live from Prometheus.
		h := rowOf(ids, hog)
		liveField, _ := fs[0].FieldByName("live")
		if live, _ := liveField.At(h).(bool); !live {
			t.Errorf("running job %s is not marked live", hog)
		}
		// The link goes to the job page.
		f, _ := fs[0].FieldByName("job_id")
		if link := f.Config.Links[0].URL; !strings.Contains(link, "/resources/job?job=${__data.fields.doc_id:percentencode}") {
			t.Errorf("job link %q", link)
		}

		// The hostile name filter matches literally: only that job.
		fs = mustFrames(t, "jobs by name", admin(map[string]any{"queryType": "jobs", "name": `"x"|*`}))
		if ids := column(t, fs[0], "job_id"); len(ids) != 1 || ids[0] != busy {
			t.Errorf("name filter %q matched %v, want only %s", `"x"|*`, ids, busy)
		}
		fs = mustFrames(t, "jobs by user", admin(map[string]any{"queryType": "jobs", "user": []string{stack.TestUser}, "sortBy": "job_id", "limit": 500}))
		for _, u := range column(t, fs[0], "user") {
			if u != stack.TestUser {
				t.Errorf("user filter nobody returned a job of %q", u)
			}
		}
		// Paging: one row, and a notice saying how many there are.
		r := admin(map[string]any{"queryType": "jobs", "limit": 1})
		fs = mustFrames(t, "jobs page", r)
		if fs[0].Rows() != 1 || len(fs[0].Meta.Notices) == 0 || !strings.Contains(fs[0].Meta.Notices[0].Text, "Showing jobs 1–1 of") {
			t.Errorf("paged jobs: %d rows, notices %v", fs[0].Rows(), fs[0].Meta.Notices)
		}
	})

	t.Run("timeline", func(t *testing.T) {
		fs := mustFrames(t, "timeline", admin(map[string]any{"queryType": "jobTimeline", "jobId": e.docID(busy)}))
		cpu := framesByName(fs, "cpu")
		if len(cpu) != 1 {
			t.Fatalf("timeline: %d cpu frames", len(cpu))
		}
		// A rate window longer than the 12 s job would dilute it (a 1 m
		// window gave 0.3 cores): the peak must show the loops' use.
		if m := maxValue(cpu[0]); m < 0.7 || m > 2.3 {
			t.Errorf("busy job's cores peak at %g, want 0.7–2.3", m)
		}
		req := framesByName(fs, "cpu_requested")
		if len(req) != 1 || maxValue(req[0]) != 2 {
			t.Errorf("requested CPUs threshold: %v", req)
		}
		ev := framesByName(fs, "events")
		if len(ev) != 1 || ev[0].Meta.DataTopic != data.DataTopicAnnotations {
			t.Fatalf("no annotations frame")
		}
		titles := column(t, ev[0], "title")
		if len(titles) < 2 || titles[len(titles)-1] != "Ended: COMPLETED" {
			t.Errorf("annotations %v", titles)
		}
		// Per node for the multi-node job: one memory series per node.
		fs = mustFrames(t, "timeline per node", admin(map[string]any{"queryType": "jobTimeline", "jobId": multi, "cluster": []string{cluster}, "perNode": true}))
		nodes := map[string]bool{}
		for _, f := range framesByName(fs, "memory") {
			nodes[f.Fields[1].Labels["node"]] = true
		}
		if len(nodes) != 2 {
			t.Errorf("multi-node job: memory series for nodes %v, want 2", nodes)
		}
		// The GPU job has per-GPU series.
		fs = mustFrames(t, "timeline gpu", admin(map[string]any{"queryType": "jobTimeline", "jobId": e.docID(hog)}))
		if g := framesByName(fs, "gpu_util"); len(g) != 2 {
			t.Errorf("GPU job: %d GPU utilisation series, want 2", len(g))
		}
	})

	t.Run("reservation", func(t *testing.T) {
		fs := mustFrames(t, "reservation by user", admin(map[string]any{"queryType": "reservation", "groupBy": "user"}))
		users := column(t, fs[0], "user")
		if rowOf(users, "root") < 0 || rowOf(users, stack.TestUser) < 0 {
			t.Fatalf("reservation by user: %v", users)
		}
		r := rowOf(users, "root")
		res, used := number(t, fs[0], "cpu_hours_reserved", r), number(t, fs[0], "cpu_hours_used", r)
		if res <= 0 || used <= 0 || used > res*1.1 {
			t.Errorf("root: %g CPU-hours reserved, %g used", res, used)
		}
		fs = mustFrames(t, "reservation per job", admin(map[string]any{"queryType": "reservation", "jobId": e.docID(busy)}))
		if fs[0].Rows() != 1 {
			t.Fatalf("reservation of one job: %d rows", fs[0].Rows())
		}
		// 2 CPUs busy for ~12 s: used close to reserved.
		res, used = number(t, fs[0], "cpu_hours_reserved", 0), number(t, fs[0], "cpu_hours_used", 0)
		if used < 0.3*res || used > 1.1*res {
			t.Errorf("busy job: %g of %g CPU-hours used", used, res)
		}
	})

	t.Run("usage history", func(t *testing.T) {
		fs := mustFrames(t, "history", admin(map[string]any{"queryType": "usageHistory", "groupBy": "user"}))
		seen := map[string]bool{}
		for _, f := range fs {
			if f.Fields[1].Labels["kind"] == "used" && maxValue(f) > 0 {
				seen[f.Fields[1].Labels["user"]] = true
			}
		}
		if !seen["root"] {
			t.Errorf("usage history: no CPU use of root (%v)", seen)
		}
		fs = mustFrames(t, "hour of week", admin(map[string]any{"queryType": "usageHistory", "groupBy": "hourOfWeek"}))
		if fs[0].Rows() != 24 || len(fs[0].Fields) != 8 {
			t.Fatalf("hour of week: %d rows, %d fields", fs[0].Rows(), len(fs[0].Fields))
		}
		day := time.Now().UTC().Weekday()
		col := []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}[day]
		if v := number(t, fs[0], col, time.Now().UTC().Hour()); v <= 0 && time.Now().UTC().Minute() > 1 {
			t.Errorf("hour of week: %s %d:00 is %g, want the jobs' use", col, time.Now().UTC().Hour(), v)
		}
	})

	t.Run("allocation", func(t *testing.T) {
		fs := mustFrames(t, "allocation", admin(map[string]any{"queryType": "allocation", "resources": []string{"cpu"}}))
		kinds := map[string]float64{}
		for _, f := range fs {
			kinds[f.Fields[1].Labels["kind"]] = maxValue(f)
		}
		if kinds["allocation"] != 1000 || kinds["reserved"] <= 0 || kinds["used"] <= 0 {
			t.Errorf("allocation frames: %v", kinds)
		}
	})

	t.Run("allocation from the collector's constants", func(t *testing.T) {
		// The cluster-state collector serves the allocations file at
		// /constants; the datasource reads it from allocationsUrl.
		file := filepath.Join(t.TempDir(), "constants.yaml")
		if err := os.WriteFile(file, []byte("allocations:\n  - {cluster: "+cluster+", resource: cpu, hours: 250, start: 2026-01-01}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		consts, err := clusterstate.OpenConstants(file, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(consts)
		defer srv.Close()
		inst := e.dsSettings(t, map[string]any{"allocationsUrl": srv.URL + "/constants"})
		ds := newDS(t, inst)
		fs := mustFrames(t, "allocation from URL", dsQuery(t, ds, inst, grafanaAdmin, nil, map[string]any{"queryType": "allocation", "resources": []string{"cpu"}}))
		kinds := map[string]float64{}
		for _, f := range fs {
			kinds[f.Fields[1].Labels["kind"]] = maxValue(f)
		}
		if kinds["allocation"] != 250 || kinds["reserved"] <= 0 {
			t.Errorf("allocation from the collector's constants: %v", kinds)
		}
	})

	t.Run("variables", func(t *testing.T) {
		fs := mustFrames(t, "variable users", admin(map[string]any{"queryType": "variable", "variable": "users"}))
		if vals := column(t, fs[0], "value"); rowOf(vals, "root") < 0 || rowOf(vals, stack.TestUser) < 0 {
			t.Errorf("users variable: %v", vals)
		}
		fs = mustFrames(t, "variable jobs", admin(map[string]any{"queryType": "variable", "variable": "jobs"}))
		if vals := column(t, fs[0], "value"); rowOf(vals, e.docID(busy)) < 0 {
			t.Errorf("jobs variable lacks %s", e.docID(busy))
		}
	})

	t.Run("viewer sees only their own jobs", func(t *testing.T) {
		fs := mustFrames(t, "viewer jobs", viewer(map[string]any{"queryType": "jobs", "limit": 500}))
		ids := column(t, fs[0], "job_id")
		if rowOf(ids, theirs) < 0 {
			t.Errorf("nobody does not see their own job %s", theirs)
		}
		for _, u := range column(t, fs[0], "user") {
			if u != stack.TestUser {
				t.Errorf("viewer nobody sees a job of %q", u)
			}
		}
		// Asking for root's jobs, by filter, id or hostile values, yields nothing.
		for _, m := range []map[string]any{
			{"queryType": "jobs", "user": []string{"root"}},
			{"queryType": "jobs", "jobId": e.docID(busy)},
			{"queryType": "jobs", "user": []string{stack.TestUser + `" OR user:root`, `*`}},
			{"queryType": "reservation", "jobId": e.docID(busy)},
		} {
			r := viewer(m)
			if r.Error != nil {
				t.Errorf("%v: %v", m, r.Error)
				continue
			}
			if n := r.Frames[0].Rows(); n != 0 {
				t.Errorf("viewer nobody, %v: %d rows, want none", m, n)
			}
		}
		r := viewer(map[string]any{"queryType": "jobTimeline", "jobId": e.docID(busy)})
		if r.Error == nil || r.Status != backend.StatusNotFound {
			t.Errorf("viewer nobody reads root's timeline: status %d %v", r.Status, r.Error)
		}
		r = viewer(map[string]any{"queryType": "jobTimeline", "jobId": e.docID(busy) + `"}) or up{x="`})
		if r.Error == nil || r.Status != backend.StatusBadRequest {
			t.Errorf("hostile job id: status %d %v", r.Status, r.Error)
		}
		fs = mustFrames(t, "viewer reservation", viewer(map[string]any{"queryType": "reservation", "groupBy": "user"}))
		if users := column(t, fs[0], "user"); len(users) != 1 || users[0] != stack.TestUser {
			t.Errorf("viewer's reservation by user: %v", users)
		}
		fs = mustFrames(t, "viewer users", viewer(map[string]any{"queryType": "variable", "variable": "users"}))
		if vals := column(t, fs[0], "value"); len(vals) != 1 || vals[0] != stack.TestUser {
			t.Errorf("viewer's users variable: %v", vals)
		}
		fs = mustFrames(t, "viewer hogging", viewer(map[string]any{"queryType": "hogging", "windowSeconds": 60}))
		for _, u := range column(t, fs[0], "user") {
			if u != stack.TestUser {
				t.Errorf("viewer sees hogging of %q", u)
			}
		}
		fs = mustFrames(t, "viewer history", viewer(map[string]any{"queryType": "usageHistory", "groupBy": "user"}))
		for _, f := range fs {
			if u := f.Fields[1].Labels["user"]; u != "" && u != stack.TestUser {
				t.Errorf("viewer's usage history names %q", u)
			}
		}
	})

	t.Run("resource routes", func(t *testing.T) {
		srv := resourceServer(t, ds, inst, "")
		get := func(user, path string) (int, string) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
			req.Header.Set("X-Test-User", user)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		status, body := get("admin", "/job?job="+url.QueryEscape(e.docID(busy)))
		if status != 200 || !strings.Contains(body, "Job "+busy+" on "+cluster) || strings.Contains(strings.ToLower(body), "<script") {
			t.Errorf("admin's job page: %d\n%.400s", status, body)
		}
		status, body = get(stack.TestUser, "/job?cluster="+cluster+"&job="+busy)
		if status != 404 || strings.Contains(body, name) {
			t.Errorf("nobody reads root's job page: %d\n%.400s", status, body)
		}
		status, body = get(stack.TestUser, "/options?kind=users")
		if status != 200 || strings.TrimSpace(body) != `{"values":["`+stack.TestUser+`"]}` {
			t.Errorf("nobody's user options: %d %s", status, body)
		}
		status, body = get("admin", "/options?kind=users")
		if status != 200 || !strings.Contains(body, `"root"`) {
			t.Errorf("admin's user options: %d %s", status, body)
		}
		status, _ = get("", "/options?kind=users")
		if status != 403 {
			t.Errorf("no user: options answered %d, want 403", status)
		}
		// The browser is signed in as the admin.
		asAdmin := resourceServer(t, ds, inst, "admin")
		checkJobPageInBrowser(t, asAdmin.URL+"/job?job="+url.QueryEscape(e.docID(busy)), busy)
	})

	t.Run("prometheus down", func(t *testing.T) {
		inst := e.dsSettings(t, map[string]any{"prometheusUrl": "http://127.0.0.1:1"})
		ds := newDS(t, inst)
		r := dsQuery(t, ds, inst, grafanaAdmin, nil, map[string]any{"queryType": "jobs", "limit": 500})
		if r.Error != nil || len(r.Frames) == 0 || r.Frames[0].Rows() == 0 {
			t.Fatalf("jobs with Prometheus down: %v", r.Error)
		}
		var notes []string
		for _, n := range r.Frames[0].Meta.Notices {
			notes = append(notes, n.Text)
		}
		if !strings.Contains(strings.Join(notes, "|"), "Live usage of running jobs is missing") {
			t.Errorf("jobs with Prometheus down: notices %v", notes)
		}
		r = dsQuery(t, ds, inst, grafanaAdmin, nil, map[string]any{"queryType": "jobTimeline", "jobId": e.docID(busy)})
		if r.Error == nil || !strings.Contains(r.Error.Error(), "Prometheus at http://127.0.0.1:1 is unreachable") {
			t.Errorf("timeline with Prometheus down: %v", r.Error)
		}
	})

	// Hogging once the GPU job has held its idle GPU for the 60 s window.
	t.Run("hogging", func(t *testing.T) {
		job := e.jobDoc(t, e.docID(hog))
		if wait := time.Until(job.StartTime.Add(75 * time.Second)); wait > 0 {
			time.Sleep(wait)
		}
		alert := map[string]string{backend.FromAlertHeaderName: "true"}
		fs := mustFrames(t, "hogging", dsQuery(t, ds, inst, nil, alert, map[string]any{"queryType": "hogging", "windowSeconds": 60}))
		f := fs[0]
		if n := len(f.Fields); n != 8 {
			t.Fatalf("hogging frame has %d fields", n)
		}
		numeric := 0
		for _, fld := range f.Fields {
			if fld.Type().Numeric() {
				numeric++
			}
		}
		if numeric != 1 {
			t.Errorf("hogging frame has %d numeric fields; the alert engine needs exactly one", numeric)
		}
		ids, res := column(t, f, "job_id"), column(t, f, "resource")
		found := false
		for i := range ids {
			if ids[i] == hog && res[i] == "gpu" {
				found = true
				// One of two GPUs idle, no contention signal: weight 1.
				if v := number(t, f, "hogging", i); v != 1 {
					t.Errorf("hogging job's GPU value %g, want 1 (one idle GPU × weight 1)", v)
				}
			}
			if ids[i] == busy {
				t.Errorf("finished job %s reported as hogging", busy)
			}
		}
		if !found {
			got, _ := e.es.GetByIDs(context.Background(), jobmodel.SearchIndices(jobmodel.DefaultJobIndex), []string{e.docID(hog)})
			t.Errorf("the hogging job %s has no GPU row: %v %v; its document: %s", hog, ids, res, got[e.docID(hog)])
		}
		custom := f.Meta.Custom.(map[string]any)
		if sig := fmt.Sprint(custom["contentionSignals"]); sig != "[none]" {
			t.Errorf("contention signals %s, want [none] (no cluster state, no capacity)", sig)
		}
		// With the partition's capacity configured, the weight is the
		// running jobs' share of it, and the frame says so.
		inst2 := e.dsSettings(t, map[string]any{"partitionCapacity": map[string]any{"multi": map[string]any{"cpus": 6, "gpus": 24}}})
		ds2 := newDS(t, inst2)
		fs = mustFrames(t, "hogging weighted", dsQuery(t, ds2, inst2, grafanaAdmin, nil, map[string]any{"queryType": "hogging", "windowSeconds": 60, "resources": []string{"gpu"}}))
		custom = fs[0].Meta.Custom.(map[string]any)
		if sig := fmt.Sprint(custom["contentionSignals"]); sig != "[running_jobs]" {
			t.Errorf("with partitionCapacity: signals %s", sig)
		}
		// The hogging job's own GPUs do not weigh its hogging: only what
		// other jobs hold of the 24 (none of this test's other jobs holds
		// a GPU), so its value is below its 1 idle GPU.
		ids = column(t, fs[0], "job_id")
		if i := rowOf(ids, hog); i < 0 || number(t, fs[0], "hogging", i) >= 1 || number(t, fs[0], "hogging", i) < 0 {
			t.Errorf("weighted hogging of %s: rows %v %v", hog, ids, fs[0].Meta.Custom.(map[string]any)["rows"])
		}
		// The weight counts every running job of the partition, not only
		// those the asker may see: nobody (a Viewer) sees root's hogging
		// job's share in the CPU weight, and root's filtered query sees
		// nobody's.
		weight := func(fs data.Frames, res string) float64 {
			custom := fs[0].Meta.Custom.(map[string]any)
			parts, _ := custom["partitions"].(map[string]any)
			p, _ := parts[cluster+"/multi"].(map[string]any)
			r, _ := p[res].(map[string]any)
			w, _ := r["weight"].(float64)
			return w
		}
		fsV := mustFrames(t, "viewer hogging weighted", dsQuery(t, ds2, inst2, grafanaNobody, nil, map[string]any{"queryType": "hogging", "windowSeconds": 60, "resources": []string{"cpu"}}))
		fsA := mustFrames(t, "admin hogging weighted, filtered", dsQuery(t, ds2, inst2, grafanaAdmin, nil, map[string]any{"queryType": "hogging", "windowSeconds": 60, "resources": []string{"cpu"}, "user": []string{"root"}}))
		if wv, wa := weight(fsV, "cpu"), weight(fsA, "cpu"); wv < 2.0/6-0.01 || wv != wa {
			t.Errorf("CPU contention weight of multi: %g for the Viewer, %g for root's filtered query; want the same, at least 2 of 6 CPUs", wv, wa)
		}
		// With the cluster-state collector's series (one poll of the real
		// cluster), the weight comes from them and the frame says so.
		pollClusterState(t, e)
		fs = mustFrames(t, "hogging with cluster state", dsQuery(t, ds, inst, grafanaAdmin, nil, map[string]any{"queryType": "hogging", "windowSeconds": 60, "resources": []string{"gpu"}}))
		custom = fs[0].Meta.Custom.(map[string]any)
		if sig := fmt.Sprint(custom["contentionSignals"]); sig != "[cluster_state]" {
			t.Errorf("with cluster-state series: signals %s (%v)", sig, custom["partitions"])
		}
		ids = column(t, fs[0], "job_id")
		// 0 unless another job waits for or holds GPUs of multi.
		if i := rowOf(ids, hog); i < 0 || number(t, fs[0], "hogging", i) > 1 || number(t, fs[0], "hogging", i) < 0 {
			t.Errorf("hogging of %s weighted by cluster state: rows %v %v", hog, ids, custom["rows"])
		}
		// A Viewer sending the alert header is still a Viewer.
		fs = mustFrames(t, "viewer as alert", dsQuery(t, ds, inst, grafanaNobody, alert, map[string]any{"queryType": "hogging", "windowSeconds": 60}))
		if rowOf(column(t, fs[0], "job_id"), hog) >= 0 {
			t.Errorf("a Viewer with the FromAlert header sees root's hogging job")
		}
	})

	t.Run("grpc", func(t *testing.T) {
		runOverGRPC(t, inst, map[string]map[string]any{
			"jobs":        {"queryType": "jobs"},
			"timeline":    {"queryType": "jobTimeline", "jobId": e.docID(busy)},
			"reservation": {"queryType": "reservation", "groupBy": "account"},
			"allocation":  {"queryType": "allocation", "resources": []string{"cpu"}},
			"history":     {"queryType": "usageHistory"},
			"variable":    {"queryType": "variable", "variable": "clusters"},
			"hogging":     {"queryType": "hogging", "windowSeconds": 60},
		})
	})
}

// jobDoc returns the current job document (final or not).
func (e *env) jobDoc(t *testing.T, docID string) (job struct {
	StartTime time.Time `json:"start_time"`
}) {
	t.Helper()
	e.poll(t, 30*time.Second, "job document "+docID, func(ctx context.Context) bool {
		got, err := e.es.GetByIDs(ctx, jobmodel.SearchIndices(jobmodel.DefaultJobIndex), []string{docID})
		return err == nil && got[docID] != nil && json.Unmarshal(got[docID], &job) == nil && !job.StartTime.IsZero()
	})
	return job
}

// resourceServer serves the datasource's resource routes over HTTP the way
// Grafana forwards them (CallResource), with the Grafana user named by the
// X-Test-User header.
func resourceServer(t *testing.T, ds *plugin.Datasource, inst backend.DataSourceInstanceSettings, defaultUser string) *httptest.Server {
	users := map[string]*backend.User{"admin": grafanaAdmin, stack.TestUser: grafanaNobody}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &backend.CallResourceRequest{
			PluginContext: backend.PluginContext{User: users[cmpOr(r.Header.Get("X-Test-User"), defaultUser)], DataSourceInstanceSettings: &inst},
			Path:          strings.TrimPrefix(r.URL.Path, "/"), Method: r.Method, URL: strings.TrimPrefix(r.URL.RequestURI(), "/"),
			Headers: map[string][]string{}, Body: body,
		}
		err := ds.CallResource(r.Context(), req, backend.CallResourceResponseSenderFunc(func(resp *backend.CallResourceResponse) error {
			for k, v := range resp.Headers {
				w.Header()[k] = v
			}
			w.WriteHeader(resp.Status)
			_, err := w.Write(resp.Body)
			return err
		}))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// pollClusterState runs one poll of the cluster-state collector against the
// test cluster, writing its series to the test Prometheus, and waits until
// they are queryable.
func pollClusterState(t *testing.T, e *env) {
	t.Helper()
	cfg := clusterstate.DefaultConfig()
	cfg.Cluster = cluster
	cfg.Listen = ""
	cfg.Slurm.Conf = e.st.Slurm.Conf
	cfg.Slurm.Sinfo, cfg.Slurm.Squeue = e.st.Slurm.Install.Bin("sinfo"), e.st.Slurm.Install.Bin("squeue")
	cfg.Prometheus.RemoteWriteURL = e.st.Prometheus.URL + "/api/v1/write"
	cfg.Spool.Dir = filepath.Join(t.TempDir(), "spool")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c, err := clusterstate.New(cfg, clusterstate.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Poll(ctx); err != nil {
		t.Fatalf("cluster-state poll: %v", err)
	}
	q := fmt.Sprintf(`sum(jobsight_partition_gpus{cluster=%q,partition="multi",state="total"})`, cluster)
	e.poll(t, 30*time.Second, "cluster-state series", func(ctx context.Context) bool {
		_, ok, _ := stack.PromQuery(ctx, e.st.Prometheus.URL, q)
		return ok
	})
}
