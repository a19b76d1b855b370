package alerting_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/pkg/plugin"
	"github.com/jobsight/jobsight/test/alerting"
)

// The plugin's own hogging frames, made by plugin.Datasource.QueryData
// exactly as Grafana's alert engine asks for them (no user, the FromAlert
// header, the rule's query model and time range), then sent through the
// SDK's Arrow encoding as over gRPC. The stores are LABELLED FAKES in this
// process: an Elasticsearch-API endpoint that answers every search with
// the running jobs below, and a Prometheus endpoint that answers the
// hogging query's instant query with the tagged samples below (it does not
// evaluate PromQL).

type fakeJob struct {
	id, user, account, partition string
	gpus, cpus                   int
	// Prometheus answers, by jobsight_metric tag (absent: no sample).
	prom map[string]float64
}

var fakeJobs = []fakeJob{
	// Holds 2 GPUs that never reached 5 %, and 8 cores it does not use.
	{"101", "alice", "physics", "gpu", 2, 8, map[string]float64{"gpu_seen": 2, "gpu_idle": 2, "cpu_alloc": 8, "cpu_peak": 0.1}},
	// Uses its GPUs and cores.
	{"102", "bob", "chem", "gpu", 2, 8, map[string]float64{"gpu_seen": 2, "cpu_alloc": 8, "cpu_peak": 6}},
	// No GPUs; busy cores.
	{"103", "carol", "bio", "cpu", 0, 16, map[string]float64{"cpu_alloc": 16, "cpu_peak": 15}},
}

func fakeStores(t *testing.T, jobs []fakeJob) (esURL, promURL string) {
	t.Helper()
	start := time.Now().Add(-2 * time.Hour).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	es := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/_search") {
			http.Error(w, "fake Elasticsearch: only searches", http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"aggs"`) {
			http.Error(w, "fake Elasticsearch: no aggregations", http.StatusBadRequest)
			return
		}
		var hits []map[string]any
		for _, j := range jobs {
			req := map[string]any{"cpus": j.cpus}
			if j.gpus > 0 {
				req["gpus"] = j.gpus
			}
			hits = append(hits, map[string]any{"_id": "c1:" + j.id, "_source": map[string]any{
				"doc_id": "c1:" + j.id, "cluster": "c1", "job_id": j.id, "user": j.user, "account": j.account,
				"partition": j.partition, "state": "RUNNING", "final": false, "start_time": start,
				"requested": req, "sampling": map[string]any{"interval_seconds": 5, "count": 100}}})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"hits": map[string]any{"total": map[string]any{"value": len(hits)}, "hits": hits}})
	}))
	t.Cleanup(es.Close)
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.Error(w, "fake Prometheus: only instant queries", http.StatusNotFound)
			return
		}
		_ = r.ParseForm()
		if q := r.Form.Get("query"); !strings.Contains(q, "jobsight_job_gpu_utilization_ratio") {
			http.Error(w, "fake Prometheus: not the hogging query: "+q, http.StatusBadRequest)
			return
		}
		var result []map[string]any
		for _, j := range jobs {
			for tag, v := range j.prom {
				result = append(result, map[string]any{
					"metric": map[string]string{"cluster": "c1", "job_id": j.id, "jobsight_metric": tag},
					"value":  []any{float64(time.Now().Unix()), fmt.Sprint(v)}})
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": result}})
	}))
	t.Cleanup(prom.Close)
	return es.URL, prom.URL
}

// pluginAnswer asks the plugin the rule's datasource query as Grafana's
// alert engine does and returns the frames as Grafana would decode them.
func pluginAnswer(t *testing.T, rule alerting.Rule, jobs []fakeJob) data.Frames {
	t.Helper()
	esURL, promURL := fakeStores(t, jobs)
	jd, _ := json.Marshal(map[string]any{"elasticsearchUrl": esURL, "prometheusUrl": promURL, "timeoutSeconds": 10})
	inst, err := plugin.NewDatasource(context.Background(), backend.DataSourceInstanceSettings{UID: "jobsight", Name: "Jobsight", JSONData: jd})
	if err != nil {
		t.Fatal(err)
	}
	ds := inst.(*plugin.Datasource)
	t.Cleanup(ds.Dispose)
	q, ok := rule.Query("A")
	if !ok {
		t.Fatalf("rule %s has no query A", rule.UID)
	}
	now := time.Now()
	resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{
		PluginContext: backend.PluginContext{OrgID: rule.OrgID},
		Headers:       map[string]string{backend.FromAlertHeaderName: "true"},
		Queries: []backend.DataQuery{{RefID: q.RefID, QueryType: q.QueryType, JSON: q.RawModel,
			Interval: time.Minute, MaxDataPoints: 43200,
			TimeRange: backend.TimeRange{From: now.Add(-q.RelativeTimeRange.From), To: now.Add(-q.RelativeTimeRange.To)}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Responses[q.RefID]
	if r.Error != nil {
		t.Fatalf("rule %s: the plugin answered an error: %v", rule.UID, r.Error)
	}
	raw, err := r.Frames.MarshalArrow()
	if err != nil {
		t.Fatal(err)
	}
	frames, err := data.UnmarshalArrowFrames(raw)
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

func TestPluginHoggingFramesFireOnlyTheHoggingJob(t *testing.T) {
	for _, rule := range shippedRules(t) {
		t.Run(rule.UID, func(t *testing.T) {
			frames := pluginAnswer(t, rule, fakeJobs)
			if err := alerting.CheckDataplane(frames); err != nil {
				t.Fatalf("the plugin's hogging frames: %v", err)
			}
			if err := alerting.CheckDataplaneFor(rule, frames); err != nil {
				t.Fatalf("the plugin's hogging frames for rule %s: %v", rule.UID, err)
			}
			ev, err := alerting.EvaluateRule(rule, map[string]data.Frames{"A": frames})
			if err != nil {
				t.Fatal(err)
			}
			res := rule.Labels["resource"]
			var firing []string
			for _, in := range ev.Instances {
				if in.Labels["resource"] != res {
					t.Errorf("instance %s: resource %q, the rule asks for %q", in.Labels, in.Labels["resource"], res)
				}
				if len(in.Overridden) > 0 {
					t.Errorf("instance %s: the rule's labels override %s", in.Labels, in.Overridden)
				}
				if in.Firing {
					firing = append(firing, in.Labels["cluster"]+":"+in.Labels["job_id"])
					if b, ok := in.Value("B"); !ok || b <= 0 {
						t.Errorf("firing instance %s: $values.B = %v, %v", in.Labels, b, ok)
					}
					if in.AlertLabels["user"] != "alice" || in.AlertLabels["account"] != "physics" || in.AlertLabels["alertname"] != rule.Title {
						t.Errorf("firing alert labels %s", in.AlertLabels)
					}
				}
			}
			if strings.Join(firing, ",") != "c1:101" {
				t.Errorf("firing %v, want only c1:101; instances: %+v", firing, ev.Instances)
			}
			if len(ev.Instances) < 2 {
				t.Errorf("%d instances: the non-hogging job(s) should be Normal instances", len(ev.Instances))
			}
		})
	}
}

func TestPluginEmptyHoggingAnswerIsNoDataThatStaysOK(t *testing.T) {
	for _, rule := range shippedRules(t) {
		frames := pluginAnswer(t, rule, nil)
		if len(frames) != 1 || frames[0].Rows() != 0 {
			t.Fatalf("rule %s: empty answer %d frames", rule.UID, len(frames))
		}
		if err := alerting.CheckDataplane(frames); err != nil {
			t.Fatalf("rule %s: the plugin's empty answer: %v", rule.UID, err)
		}
		ev, err := alerting.EvaluateRule(rule, map[string]data.Frames{"A": frames})
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.Instances) != 0 || !ev.NoData || ev.State != alerting.StateNormal {
			t.Errorf("rule %s: empty answer gives %+v, want no instances, NoData, mapped to Normal (noDataState OK)", rule.UID, ev)
		}
	}
}
