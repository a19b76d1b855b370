package plugin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/pkg/models"
	"github.com/jobsight/jobsight/pkg/plugin"
)

// A query is routed by DataQuery.QueryType and, when that is empty or
// unknown (a hand-built request, a panel saved before query types), by
// its model's queryType; where the two differ, the model's wins. All in
// one request: each query is answered on its own.
func TestQueryDataRoutesByQueryType(t *testing.T) {
	ctx := context.Background()
	i, err := plugin.NewDatasource(ctx, instance("http://127.0.0.1:1", "", "", "http://127.0.0.1:1", nil))
	if err != nil {
		t.Fatal(err)
	}
	ds := i.(*plugin.Datasource)
	defer ds.Dispose()

	// The Allocation handler refuses memory before any backend request:
	// its message shows that the Allocation handler answered.
	const memory = `{"queryType":"allocation","resources":["memory"]}`
	const byAllocation = "allocations are in CPU-hours or GPU-hours"
	cases := []struct {
		ref, queryType, model string
		want                  string
	}{
		{"routed", "allocation", `{"resources":["memory"]}`, byAllocation},
		{"model only", "", memory, byAllocation},
		{"unknown route, model", "nope", memory, byAllocation},
		{"model wins", "jobs", memory, byAllocation},
		{"unknown", "nope", `{}`, `queryType "nope" is unknown (one of jobs, jobTimeline,`},
		{"unknown in model", "", `{"queryType":"nope"}`, `queryType "nope" is unknown (one of jobs, jobTimeline,`},
		{"none", "", `{}`, "no query type selected (one of jobs, jobTimeline,"},
	}
	req := &backend.QueryDataRequest{PluginContext: backend.PluginContext{User: &backend.User{Login: "admin", Role: "Admin"}}}
	for _, c := range cases {
		req.Queries = append(req.Queries, backend.DataQuery{RefID: c.ref, QueryType: c.queryType, JSON: []byte(c.model)})
	}
	resp, err := ds.QueryData(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Responses) != len(cases) {
		t.Errorf("%d responses for %d queries", len(resp.Responses), len(cases))
	}
	for _, c := range cases {
		r := resp.Responses[c.ref]
		if r.Status != backend.StatusBadRequest || r.Error == nil || !strings.Contains(r.Error.Error(), "query "+c.ref+": "+c.want) {
			t.Errorf("%s: status %d error %v; want 400 and %q", c.ref, r.Status, r.Error, c.want)
		}
	}
}

// Every query type has a handler: routed by DataQuery.QueryType alone, each
// gets past the model to its backends (unreachable here) or, for an
// Allocation with no allocation configured, to a frame saying so.
func TestQueryDataRoutesEveryType(t *testing.T) {
	ctx := context.Background()
	i, err := plugin.NewDatasource(ctx, instance("http://127.0.0.1:1", "", "", "http://127.0.0.1:1", nil))
	if err != nil {
		t.Fatal(err)
	}
	ds := i.(*plugin.Datasource)
	defer ds.Dispose()

	req := &backend.QueryDataRequest{PluginContext: backend.PluginContext{User: &backend.User{Login: "admin", Role: "Admin"}}}
	for _, qt := range models.KnownQueryTypes() {
		req.Queries = append(req.Queries, backend.DataQuery{RefID: string(qt), QueryType: string(qt),
			JSON: []byte(`{"jobId":"c:1","variable":"clusters","series":"agent_samples"}`)})
	}
	resp, err := ds.QueryData(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, qt := range models.KnownQueryTypes() {
		r := resp.Responses[string(qt)]
		switch {
		case qt == models.QueryTypeAllocation:
			if r.Error != nil || len(r.Frames) != 1 {
				t.Errorf("%s: error %v, %d frames; want one frame with a notice", qt, r.Error, len(r.Frames))
			}
		case r.Status != backend.StatusBadGateway || r.Error == nil || !strings.Contains(r.Error.Error(), "127.0.0.1:1 is unreachable"):
			t.Errorf("%s: status %d error %v; want 502 naming the unreachable backend", qt, r.Status, r.Error)
		}
	}
}
