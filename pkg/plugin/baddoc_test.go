package plugin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/pkg/plugin"
)

// A job document another writer stored with a field of the wrong type is
// left out of the Jobs table with a warning; the good one still shows.
func TestJobsSkipBadDocumentsWithANotice(t *testing.T) {
	srv := startServers(t)
	index := uniqueIndex(t, "baddoc")
	createIndex(t, srv.es, index)
	now := time.Now().UTC()
	start := now.Add(-10 * time.Minute).Format(time.RFC3339)
	end := now.Add(-5 * time.Minute).Format(time.RFC3339)
	good := `{"doc_id":"c:1","cluster":"c","job_id":"1","user":"alice","state":"COMPLETED","final":true,"start_time":"` + start + `","end_time":"` + end + `","requested":{"cpus":2}}`
	bad := `{"doc_id":"c:2","cluster":"c","job_id":2,"user":"bob","state":"COMPLETED","final":true,"start_time":"` + start + `","end_time":"` + end + `","requested":{"cpus":2}}`
	body := `{"index":{"_index":"` + index + `","_id":"c:1"}}` + "\n" + good + "\n" + `{"index":{"_index":"` + index + `","_id":"c:2"}}` + "\n" + bad + "\n"
	if code := esDo(t, srv.es, http.MethodPost, "/_bulk?refresh=true", body); code != http.StatusOK {
		t.Fatalf("bulk: HTTP %d", code)
	}
	inst := instance(srv.es.URL, srv.es.User, index, srv.prom.URL, map[string]string{"elasticsearchPassword": srv.es.Password})
	i, err := plugin.NewDatasource(context.Background(), inst)
	if err != nil {
		t.Fatal(err)
	}
	ds := i.(*plugin.Datasource)
	defer ds.Dispose()
	raw, _ := json.Marshal(map[string]any{"queryType": "jobs"})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{
			PluginContext: backend.PluginContext{User: &backend.User{Login: "admin", Role: "Admin"}},
			Queries:       []backend.DataQuery{{RefID: "A", JSON: raw, TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		r := resp.Responses["A"]
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		f := r.Frames[0]
		var notes []string
		for _, n := range f.Meta.Notices {
			notes = append(notes, n.Text)
		}
		if f.Rows() == 1 && strings.Contains(strings.Join(notes, "|"), "1 job documents could not be read") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs table: %d rows, notices %v; want the good job and a warning about the bad one", f.Rows(), notes)
		}
		time.Sleep(300 * time.Millisecond) // searchable after ~1 s on ZincSearch
	}
}
