package pluginhost

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

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/store/promremote"
	"github.com/jobsight/jobsight/pkg/models"
	"github.com/jobsight/jobsight/test/stack"
)

// The shipped datasources as a Viewer uses them. Every datasource that
// provisioning/datasources/jobsight.yaml provisions is asked, as a Viewer
// (alice), for everything it serves, in real stores that hold alice's and
// bob's running jobs, their series, agent health and partition series:
// no answer may name bob's job or carry its series. The Jobsight
// datasource runs in the plugin executable under this host; a stock
// Prometheus datasource answers whatever PromQL a Viewer's
// /api/ds/query sends (Grafana OSS has no per-datasource permissions), so
// for one the test asks the Prometheus it points at directly, as
// Grafana's proxy would.

// provisioned is one datasource of the provisioning file, placeholders
// filled.
type provisioned struct {
	Name, Type, UID, URL string
	OrgID                int64             `yaml:"orgId"`
	JSONData             map[string]any    `yaml:"jsonData"`
	SecureJSONData       map[string]string `yaml:"secureJsonData"`
}

var envPlaceholder = regexp.MustCompile(`\$__env\{(\w+)\}|\$\{(\w+)\}`)

// shippedDatasources reads the provisioning file with its $__env{X}
// placeholders filled from env (unset ones empty, as Grafana does), and
// drops empty settings (the plugin's defaults then apply).
func shippedDatasources(t *testing.T, env map[string]string) []provisioned {
	t.Helper()
	root, err := stack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "provisioning", "datasources", "jobsight.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	filled := envPlaceholder.ReplaceAllStringFunc(string(raw), func(m string) string {
		sub := envPlaceholder.FindStringSubmatch(m)
		return env[sub[1]+sub[2]]
	})
	var f struct {
		Datasources []provisioned `yaml:"datasources"`
	}
	if err := yaml.Unmarshal([]byte(filled), &f); err != nil {
		t.Fatalf("the provisioning file: %v", err)
	}
	if len(f.Datasources) == 0 {
		t.Fatal("the provisioning file has no datasources")
	}
	for i := range f.Datasources {
		for k, v := range f.Datasources[i].JSONData {
			if v == "" || v == nil {
				delete(f.Datasources[i].JSONData, k)
			}
		}
		for k, v := range f.Datasources[i].SecureJSONData {
			if v == "" {
				delete(f.Datasources[i].SecureJSONData, k)
			}
		}
	}
	return f.Datasources
}

// seed fills the stores: alice's job c1:1 and bob's job c1:2, both running
// on partition p for 20 minutes, with their job series, one node's agent
// series and the partition's series.
func seed(t *testing.T, es *stack.ESServer, promURL, index string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	now := time.Now()
	start := now.Add(-20 * time.Minute)
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{es.URL}, Username: es.User, Password: es.Password, CACertFile: es.CACertFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Info(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureIndex(ctx, index, jobmodel.JobMapping()); err != nil {
		t.Fatal(err)
	}
	var docs []store.Doc
	for _, j := range []struct{ id, user string }{{"1", "alice"}, {"2", "bob"}} {
		job := jobmodel.Job{DocID: "c1:" + j.id, Cluster: "c1", JobID: j.id, User: j.user, Account: "acct-" + j.user, Partition: "p",
			Name: "job-of-" + j.user, State: "RUNNING", SubmitTime: jobmodel.At(start), StartTime: jobmodel.At(start),
			Sampling: jobmodel.Sampling{IntervalSeconds: 5, Count: 100}}
		job.Requested.CPUs = jobmodel.Ptr(int64(2))
		job.Requested.GPUs = jobmodel.Ptr(int64(1))
		body, _ := json.Marshal(job)
		docs = append(docs, store.Doc{Kind: store.KindJobDoc, Index: index, ID: job.DocID, Body: body})
	}
	if fails, err := c.Bulk(ctx, docs); err != nil || len(fails) > 0 {
		t.Fatalf("indexing: %v %v", err, fails)
	}
	for {
		raw, err := c.Search(ctx, index, []byte(`{"size":0,"track_total_hits":true,"query":{"match_all":{}}}`))
		if err == nil && strings.Contains(string(raw), `"value":2`) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the job index does not answer both jobs: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
	}

	pc, err := promremote.New(promremote.Config{URL: promURL + "/api/v1/write"})
	if err != nil {
		t.Fatal(err)
	}
	var series []promremote.Series
	add := func(name string, v func(i int) float64, labels ...string) {
		s := promremote.Series{Name: name}
		for i := 0; i+1 < len(labels); i += 2 {
			s.Labels = append(s.Labels, promremote.Label{Name: labels[i], Value: labels[i+1]})
		}
		for i := 0; i < 60; i++ {
			s.Samples = append(s.Samples, promremote.Sample{TimestampMs: now.Add(-15 * time.Minute).Add(time.Duration(i) * 15 * time.Second).UnixMilli(), Value: v(i)})
		}
		series = append(series, s)
	}
	counter := func(i int) float64 { return float64(i * 15) }
	one := func(int) float64 { return 1 }
	for _, id := range []string{"1", "2"} {
		add("jobsight_job_cpu_usage_seconds_total", counter, "cluster", "c1", "job_id", id, "node", "n1")
		add("jobsight_job_memory_used_bytes", func(int) float64 { return 1 << 30 }, "cluster", "c1", "job_id", id, "node", "n1")
		add("jobsight_job_gpu_utilization_ratio", func(int) float64 { return 0 }, "cluster", "c1", "job_id", id, "node", "n1", "gpu", "0")
		add("jobsight_job_allocated_cpus", func(int) float64 { return 2 }, "cluster", "c1", "job_id", id, "node", "n1")
	}
	add("jobsight_agent_samples_total", counter, "cluster", "c1", "node", "n1")
	add("jobsight_agent_spool_bytes", one, "cluster", "c1", "node", "n1")
	add("jobsight_agent_jobs_watched", func(int) float64 { return 2 }, "cluster", "c1", "node", "n1")
	add("jobsight_partition_pending_gpus", one, "cluster", "c1", "partition", "p")
	add("jobsight_partition_pending_gpus_by_type", one, "cluster", "c1", "partition", "p", "type", "a100")
	add("jobsight_partition_pending_cpus", one, "cluster", "c1", "partition", "p")
	add("jobsight_partition_allocated_ratio", one, "cluster", "c1", "partition", "p", "resource", "gpu")
	if err := pc.Write(ctx, series); err != nil {
		t.Fatalf("remote write: %v", err)
	}
}

// everyQuery is every query the Jobsight datasource serves, in one
// request: each query type, each variable, each cluster series, and
// bob's job asked for by id.
func everyQuery(now time.Time) []Query {
	var qs []Query
	add := func(m map[string]any) {
		qs = append(qs, Query{RefID: fmt.Sprintf("Q%d", len(qs)), Model: m, From: now.Add(-time.Hour), To: now})
	}
	for _, qt := range []string{"jobs", "reservation", "usageHistory", "allocation", "typicalRequest"} {
		add(map[string]any{"queryType": qt})
		add(map[string]any{"queryType": qt, "jobId": "c1:2"})
	}
	add(map[string]any{"queryType": "reservation", "groupBy": "user"})
	add(map[string]any{"queryType": "hogging", "windowSeconds": 300})
	add(map[string]any{"queryType": "jobTimeline", "jobId": "c1:2"})
	for _, v := range []string{"clusters", "users", "accounts", "partitions", "jobs", "nodes"} {
		add(map[string]any{"queryType": "variable", "variable": v})
	}
	for _, s := range models.ClusterSeriesNames {
		add(map[string]any{"queryType": "clusterSeries", "series": s})
	}
	return qs
}

// bobIn returns what in fs names bob's job or carries its series.
func bobIn(fs data.Frames) []string {
	var found []string
	for _, f := range fs {
		for _, fld := range f.Fields {
			if fld.Labels["job_id"] == "2" || strings.Contains(fld.Labels.String(), "bob") {
				found = append(found, fmt.Sprintf("frame %s field %s labels %s", f.Name, fld.Name, fld.Labels))
			}
			for i := 0; i < fld.Len(); i++ {
				v, ok := fld.ConcreteAt(i)
				s, isStr := v.(string)
				if !ok || !isStr {
					continue
				}
				if s == "bob" || s == "c1:2" || strings.Contains(s, "job-of-bob") || (fld.Name == "job_id" && s == "2") {
					found = append(found, fmt.Sprintf("frame %s field %s row %d: %q", f.Name, fld.Name, i, s))
				}
			}
		}
	}
	return found
}

func TestViewerOnEveryShippedDatasource(t *testing.T) {
	stack.Require(t, stack.PrometheusBin)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	prom, err := stack.StartPrometheus(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prom.Stop() })
	es, err := stack.StartElasticsearch(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = es.Stop() })
	index := fmt.Sprintf("jobsight-test-viewer-%d", time.Now().UnixNano())
	seed(t, es, prom.URL, index)

	dss := shippedDatasources(t, map[string]string{
		"JOBSIGHT_ES_URL": es.URL, "JOBSIGHT_ES_USER": es.User, "JOBSIGHT_ES_PASSWORD": es.Password,
		"JOBSIGHT_ES_JOB_INDEX": index, "JOBSIGHT_PROMETHEUS_URL": prom.URL,
	})
	h := startHost(t)
	// alice signed in through LDAP: Grafana forwards her ID token, signed
	// with keys it publishes at its root URL.
	ids, err := NewIDTokens()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ids.Close)
	cfg := DefaultConfig()
	cfg["GF_APP_URL"] = ids.URL()
	viewer := Caller{User: &backend.User{Login: "alice", Name: "Alice", Email: "alice@example.org", Role: "Viewer"}, Config: cfg,
		IDTokenFunc: func() string {
			return ids.Token(Identity{UID: "alice-uid", Login: "alice", Email: "alice@example.org", AuthenticatedBy: "ldap"})
		}}
	for i, ds := range dss {
		t.Run(ds.Name, func(t *testing.T) {
			switch ds.Type {
			case models.PluginID:
				jd, _ := json.Marshal(ds.JSONData)
				d := Datasource{ID: int64(i + 1), UID: ds.UID, Name: ds.Name, JSONData: jd, SecureJSONData: ds.SecureJSONData}
				qs := everyQuery(time.Now())
				resp, err := h.QueryData(ctx, d, viewer, qs...)
				if err != nil {
					t.Fatal(err)
				}
				sawAlice := false
				for _, q := range qs {
					r := resp.Responses[q.RefID]
					if leaks := bobIn(r.Frames); len(leaks) > 0 {
						t.Errorf("%v as a Viewer shows bob's job: %s", q.Model, strings.Join(leaks, "; "))
					}
					series, _ := q.Model["series"].(string)
					switch {
					case strings.HasPrefix(series, "agent_") || strings.HasPrefix(series, "clusterstate_") || q.Model["variable"] == "nodes":
						if r.Status != backend.StatusForbidden {
							t.Errorf("%v as a Viewer: status %d, error %v; want 403 (node and agent internals are for full access)", q.Model, r.Status, r.Error)
						}
					case r.Error != nil && !(q.Model["jobId"] == "c1:2" && r.Status == backend.StatusNotFound):
						t.Errorf("%v as a Viewer: %v", q.Model, r.Error)
					}
					if strings.HasPrefix(series, "partition_") && r.Error == nil && (len(r.Frames) == 0 || r.Frames[0].Rows() == 0) {
						t.Errorf("%v: no partition series for the Viewer", q.Model)
					}
					if q.Model["queryType"] == "jobs" && len(r.Frames) > 0 && r.Frames[0].Rows() > 0 {
						sawAlice = true
					}
				}
				if !sawAlice {
					t.Error("the Viewer sees none of their own jobs: the test proves nothing")
				}
			case "prometheus":
				// Grafana forwards a Viewer's PromQL to it unchanged.
				n, err := promSeries(ctx, ds.URL, `jobsight_job_cpu_usage_seconds_total{job_id="2"}`)
				if err != nil {
					t.Fatal(err)
				}
				if ds.OrgID <= 1 || n > 0 {
					t.Errorf("datasource %q (prometheus, org %d) answers any PromQL a Viewer sends: %d of bob's job series; Grafana OSS cannot restrict it to admins", ds.Name, max(ds.OrgID, 1), n)
				}
			default:
				t.Errorf("datasource %q of type %q: this test cannot tell what it shows a Viewer", ds.Name, ds.Type)
			}
		})
	}
}

// promSeries runs an instant query at base and returns how many series
// answer.
func promSeries(ctx context.Context, base, expr string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/api/v1/query?query="+url.QueryEscape(expr), nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var ans struct {
		Data struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		return 0, fmt.Errorf("prometheus answer %s: %w", b, err)
	}
	return len(ans.Data.Result), nil
}
