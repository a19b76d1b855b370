package grafana

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/test/pluginhost"
	"github.com/jobsight/jobsight/test/stack"
)

const dashboardsDir = repoRoot + "/dashboards"

// hostile are filter values a user may type or forge: query-language
// syntax of Elasticsearch (query_string, JSON) and PromQL, wildcards and
// regexes, quotes and escapes, HTML, and values past the length limit.
var hostile = []string{
	`root`,
	`root" OR "1"="1`,
	`*`,
	`r*`,
	`.*`,
	`root|` + stack.TestUser,
	`root\`,
	`{"term":{"user":"root"}}`,
	`user:root`,
	`"},{"match_all":{}}`,
	`root",job_id=~".+`,
	"root\x00",
	`<script>alert(1)</script>`,
	strings.Repeat("r", 300),
}

// viewerProbes: the Viewer nobody asks for root's jobs through every query
// type, with forged ids and hostile filter values, with forged headers,
// and through every resource route; nothing of root's jobs may come back,
// in frames, errors or pages.
func (e *env) viewerProbes(t *testing.T, gpuJob, busy string, scan func(testing.TB, string, data.Frames), leaks func(string) bool) {
	root := e.docID(gpuJob)
	var models []map[string]any
	for _, qt := range []string{"jobs", "reservation", "usageHistory", "allocation", "hogging", "typicalRequest"} {
		models = append(models,
			map[string]any{"queryType": qt, "user": []string{"root"}},
			map[string]any{"queryType": qt, "jobId": root},
			map[string]any{"queryType": qt, "jobId": gpuJob, "cluster": []string{cluster}},
			map[string]any{"queryType": qt, "account": []string{"dashboards"}},
			map[string]any{"queryType": qt, "name": "dash-gpu"},
		)
		for _, h := range hostile {
			models = append(models,
				map[string]any{"queryType": qt, "user": []string{h}},
				map[string]any{"queryType": qt, "account": []string{h}},
				map[string]any{"queryType": qt, "partition": []string{h}},
				map[string]any{"queryType": qt, "cluster": []string{h}},
				map[string]any{"queryType": qt, "name": h},
				map[string]any{"queryType": qt, "jobId": h},
				map[string]any{"queryType": qt, "jobId": cluster + ":" + h},
			)
		}
	}
	for _, g := range []string{"user", "account", "partition", "cluster"} {
		models = append(models, map[string]any{"queryType": "reservation", "groupBy": g}, map[string]any{"queryType": "usageHistory", "groupBy": g})
	}
	models = append(models,
		map[string]any{"queryType": "jobTimeline", "jobId": root},
		map[string]any{"queryType": "jobTimeline", "jobId": e.docID(busy), "perNode": true},
		map[string]any{"queryType": "jobTimeline", "jobId": gpuJob, "cluster": []string{cluster}},
		map[string]any{"queryType": "jobTimeline", "jobId": root + "@0"},
	)
	for _, v := range []string{"clusters", "users", "accounts", "partitions", "jobs"} {
		models = append(models, map[string]any{"queryType": "variable", "variable": v})
		for _, h := range hostile[:6] {
			models = append(models, map[string]any{"queryType": "variable", "variable": v, "user": []string{h}, "name": h})
		}
	}

	// A fake ID token naming root, a session cookie, Grafana's own user
	// header and the alert engine's header: none of them is the Viewer's
	// identity as the plugin context gives it.
	claims := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"user:1","login":"root","email":"root@example.org","authenticatedBy":"oauth_generic_oauth"}`))
	forged := viewer
	forged.IDToken = "eyJhbGciOiJFUzI1NiJ9." + claims + ".c2lnbmF0dXJl"
	forged.Cookies = "grafana_session=0123456789abcdef; login=root"
	forged.Headers = map[string]string{"X-Grafana-User": "root", "X-Webauth-User": "root", "X-Grafana-Org-Id": "1"}
	forgedAlert := forged
	forgedAlert.FromAlert = true

	for name, c := range map[string]pluginhost.Caller{"viewer": viewer, "viewer with forged headers": forged, "viewer claiming to be the alert engine": forgedAlert} {
		t.Run(name, func(t *testing.T) {
			// All of it in one request, as a dashboard of many panels
			// sends them; each query answers (or fails) alone.
			for ref, r := range e.answer(t, c, models...) {
				where := name + " " + ref
				if r.Error != nil {
					if leaks(r.Error.Error()) {
						t.Errorf("%s: the error names root's job: %v", where, r.Error)
					}
					continue
				}
				scan(t, where, r.Frames)
			}
		})
	}

	t.Run("resource routes", func(t *testing.T) {
		paths := []string{
			"job?job=" + url.QueryEscape(root),
			"job?cluster=" + cluster + "&job=" + gpuJob,
			"job?job=" + url.QueryEscape(root+"@0"),
			"job?job=" + url.QueryEscape(cluster+":*"),
			"job?job=" + url.QueryEscape(cluster+":"+gpuJob+" OR user:root"),
			"job?cluster=" + url.QueryEscape(`*`) + "&job=" + gpuJob,
			"job/../options?kind=users",
			"options?kind=users",
			"options?kind=accounts",
			"options?kind=partitions",
			"options?kind=clusters",
			"options?kind=states",
			"options?kind=classes",
			"options?kind=" + url.QueryEscape(`users" OR "1"="1`),
			"options?kind=users&cluster=" + url.QueryEscape(`"},{"match_all":{}}`),
		}
		for _, c := range []pluginhost.Caller{viewer, forged} {
			for _, p := range paths {
				r := e.resource(t, c, p)
				body := string(r.Body)
				if strings.HasPrefix(p, "job?") && r.Status == http.StatusOK {
					t.Errorf("%s as the Viewer: %d, want not found or refused", p, r.Status)
				}
				for _, bad := range []string{gpuJob + " on " + cluster, "dash-gpu", "dash-multi", `busy "x"`, "busy &#34;x&#34;", "<script>"} {
					if strings.Contains(body, bad) {
						t.Errorf("%s as the Viewer answers %d with %q:\n%.400s", p, r.Status, bad, body)
					}
				}
				if strings.HasPrefix(p, "options?kind=users") && r.Status == http.StatusOK && strings.Contains(body, `"root"`) {
					t.Errorf("%s lists root to the Viewer: %s", p, body)
				}
			}
		}
	})
}

// dashboardLinks: the job detail dashboard links to the job page by the
// job variable, and My jobs links to the job detail dashboard.
func dashboardLinks(t *testing.T, gpuJob string) {
	b, err := os.ReadFile(filepath.Join(dashboardsDir, "job-detail.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "/api/datasources/uid/${datasource}/resources/job?job=${job") {
		t.Errorf("job detail has no link to the job page")
	}
	b, err = os.ReadFile(filepath.Join(dashboardsDir, "my-jobs.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "/d/jobsight-job-detail/") {
		t.Errorf("my jobs has no link to the job detail dashboard")
	}
}
