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
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/jobsight/jobsight/internal/dashtest"
	"gopkg.in/yaml.v3"
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
	pluginID        = dashtest.PluginID
)

func TestDashboards(t *testing.T) {
	e := need(t)
	t.Parallel()
	dashboards := dashtest.Load(t, dashboardsDir)

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

	runner := dashtest.Runner{
		JobsightUID: inst.UID, PrometheusUID: "prometheus",
		Jobsight: func(t testing.TB, where string, model map[string]any) data.Frames {
			return mustFrames(t, where, admin(model))
		},
		Prometheus: func(t testing.TB, where, expr string) int { return e.promRun(t, where, expr) },
		Pick: func(t testing.TB, v dashtest.Var, vals []string) []string {
			switch {
			case v.Name == "job":
				// The job under study: the GPU job, which the variable
				// must list.
				if rowOf(vals, e.docID(gpuJob)) < 0 {
					t.Fatalf("the jobs variable lacks %s: %v", e.docID(gpuJob), vals)
				}
				return []string{e.docID(gpuJob)}
			case v.Name == "cluster" && rowOf(vals, cluster) < 0:
				t.Fatalf("the clusters variable lacks %s: %v", cluster, vals)
			case !v.Multi:
				return vals[:1]
			}
			return vals // a multi-value variable on All
		},
	}
	for file, d := range dashboards {
		t.Run(file, func(t *testing.T) { runner.Run(t, file, d) })
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
						dashtest.ValidateModel(t, "rule "+r.UID, m)
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
func (e *env) promRun(t testing.TB, where, expr string) int {
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
