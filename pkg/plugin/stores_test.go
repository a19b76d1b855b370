package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/store/promremote"
	"github.com/jobsight/jobsight/pkg/plugin"
	"github.com/jobsight/jobsight/test/stack"
)

// Helpers for tests that fill the real stores (startServers) and ask the
// datasource.

// indexJobs writes job documents under their doc ids into a new job index
// and waits until the server answers every one of them.
func indexJobs(t *testing.T, es *stack.ESServer, index string, jobs ...jobmodel.Job) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{es.URL}, Username: es.User, Password: es.Password, CACertFile: es.CACertFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Info(ctx); err != nil {
		t.Fatal(err)
	}
	createIndex(t, es, index)
	bulkJobs(t, ctx, c, index, jobs...)
	// Writes become searchable after about a second on ZincSearch.
	for {
		raw, err := c.Search(ctx, index, []byte(`{"size":0,"track_total_hits":true,"query":{"match_all":{}}}`))
		var ans struct {
			Hits struct {
				Total struct{ Value int } `json:"total"`
			} `json:"hits"`
		}
		if err == nil && json.Unmarshal(raw, &ans) == nil && ans.Hits.Total.Value >= len(jobs) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the job index does not answer its %d jobs: %v", len(jobs), err)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// series is one series to write: a name, labels as pairs, and a value at
// each sample time.
type series struct {
	name   string
	labels []string
	value  func(time.Time) float64
}

// writeSeries writes the series by remote write, one sample every 15 s
// from `from` to `to`, as an agent or the cluster-state collector does.
func writeSeries(t *testing.T, promURL string, from, to time.Time, ss ...series) {
	t.Helper()
	c, err := promremote.New(promremote.Config{URL: promURL + "/api/v1/write"})
	if err != nil {
		t.Fatal(err)
	}
	var out []promremote.Series
	for _, s := range ss {
		ps := promremote.Series{Name: s.name}
		for i := 0; i+1 < len(s.labels); i += 2 {
			ps.Labels = append(ps.Labels, promremote.Label{Name: s.labels[i], Value: s.labels[i+1]})
		}
		for at := from; !at.After(to); at = at.Add(15 * time.Second) {
			ps.Samples = append(ps.Samples, promremote.Sample{TimestampMs: at.UnixMilli(), Value: s.value(at)})
		}
		out = append(out, ps)
	}
	if err := c.Write(context.Background(), out); err != nil {
		t.Fatalf("remote write: %v", err)
	}
}

func constant(v float64) func(time.Time) float64 { return func(time.Time) float64 { return v } }

// newDatasource is the datasource against the servers, with extra
// jsonData settings.
func newDatasource(t *testing.T, srv servers, jobIndex string, extra map[string]any) *plugin.Datasource {
	t.Helper()
	jd := map[string]any{
		"elasticsearchUrl": srv.es.URL, "elasticsearchUser": srv.es.User, "elasticsearchJobIndex": jobIndex,
		"prometheusUrl": srv.prom.URL, "timeoutSeconds": 20,
	}
	for k, v := range extra {
		jd[k] = v
	}
	raw, _ := json.Marshal(jd)
	i, err := plugin.NewDatasource(context.Background(), backend.DataSourceInstanceSettings{UID: "jobsight", Name: "Jobsight", JSONData: raw,
		DecryptedSecureJSONData: map[string]string{"elasticsearchPassword": srv.es.Password}})
	if err != nil {
		t.Fatal(err)
	}
	ds := i.(*plugin.Datasource)
	t.Cleanup(ds.Dispose)
	return ds
}

// ask runs one query model as the plugin context's user (nil: the alert
// engine) over the last hour and returns its frames or fails.
func ask(t *testing.T, ds *plugin.Datasource, u *backend.User, model map[string]any) data.Frames {
	t.Helper()
	r := askResponse(t, ds, u, model)
	if r.Error != nil {
		t.Fatalf("query %v: %v", model, r.Error)
	}
	return r.Frames
}

func askResponse(t *testing.T, ds *plugin.Datasource, u *backend.User, model map[string]any) backend.DataResponse {
	t.Helper()
	now := time.Now()
	return askRange(t, ds, u, model, now.Add(-time.Hour), now, 500)
}

// askRange is askResponse over [from, to) for a panel of points.
func askRange(t *testing.T, ds *plugin.Datasource, u *backend.User, model map[string]any, from, to time.Time, points int64) backend.DataResponse {
	t.Helper()
	raw, _ := json.Marshal(model)
	req := &backend.QueryDataRequest{
		PluginContext: backend.PluginContext{OrgID: 1, User: u, DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: "jobsight"}},
		Queries: []backend.DataQuery{{RefID: "A", QueryType: fmt.Sprint(model["queryType"]), JSON: raw,
			Interval: time.Minute, MaxDataPoints: points, TimeRange: backend.TimeRange{From: from, To: to}}},
	}
	if u == nil {
		req.Headers = map[string]string{backend.FromAlertHeaderName: "true"}
	}
	resp, err := ds.QueryData(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Responses["A"]
}
