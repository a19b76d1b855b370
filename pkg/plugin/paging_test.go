package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/pkg/plugin"
)

// fakePagingES is a FAKE Elasticsearch (labelled as such: no server that
// pages with search_after or a point in time runs here; ZincSearch does
// neither). It holds n finished jobs, newest first by start_time, and
// answers searches sorted that way, with from/size, search_after and,
// when pit is set, points in time whose id changes with every page as
// Elasticsearch's may. It records what it was asked.
type fakePagingES struct {
	n          int
	pit        bool // offers points in time
	sortValues bool // answers each hit's sort values (does search_after)
	base       time.Time

	mu   sync.Mutex
	log  []string
	pits map[string]bool
	next int
}

func (f *fakePagingES) start(i int) time.Time { return f.base.Add(-time.Duration(i) * time.Minute) }

func (f *fakePagingES) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	keys := []string{}
	for _, k := range []string{"pit", "search_after", "from", "size"} {
		if v, ok := body[k]; ok {
			b, _ := json.Marshal(v)
			keys = append(keys, k+"="+string(b))
		}
	}
	f.log = append(f.log, r.Method+" "+r.URL.Path+" "+strings.Join(keys, " "))
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/_pit"):
		if !f.pit || r.URL.Query().Get("keep_alive") == "" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"type":"unknown"},"status":404}`)
			return
		}
		f.next++
		id := fmt.Sprintf("pit-%d", f.next)
		f.pits[id] = true
		fmt.Fprintf(w, `{"id":%q}`, id)
	case r.Method == http.MethodDelete && r.URL.Path == "/_pit":
		delete(f.pits, body["id"].(string))
		fmt.Fprint(w, `{"succeeded":true,"num_freed":1}`)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/_search"):
		pitID := ""
		if p, ok := body["pit"].(map[string]any); ok {
			pitID, _ = p["id"].(string)
			if r.URL.Path != "/_search" || !f.pits[pitID] {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":{"type":"search_context_missing_exception","reason":"no such point in time"},"status":400}`)
				return
			}
		}
		first := 0
		if from, ok := body["from"].(float64); ok {
			first = int(from)
		}
		if after, ok := body["search_after"].([]any); ok && f.sortValues {
			ms := int64(after[0].(float64))
			first = int(f.base.Sub(time.UnixMilli(ms))/time.Minute) + 1
		}
		size := int(body["size"].(float64))
		hits := []map[string]any{}
		for i := first; i < min(first+size, f.n); i++ {
			j := jobmodel.Job{DocID: fmt.Sprintf("c:%d", i), Cluster: "c", JobID: fmt.Sprint(i), User: "u", Final: true,
				State: jobmodel.StateCompleted, StartTime: jobmodel.At(f.start(i)), EndTime: jobmodel.At(f.start(i).Add(time.Minute))}
			h := map[string]any{"_id": j.DocID, "_source": j}
			if f.sortValues {
				h["sort"] = []any{f.start(i).UnixMilli(), i}
			}
			hits = append(hits, h)
		}
		ans := map[string]any{"hits": map[string]any{"total": map[string]any{"value": f.n, "relation": "eq"}, "hits": hits}}
		if pitID != "" {
			// A new id for the same point in time.
			delete(f.pits, pitID)
			f.next++
			id := fmt.Sprintf("pit-%d", f.next)
			f.pits[id] = true
			ans["pit_id"] = id
		}
		_ = json.NewEncoder(w).Encode(ans)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// A Jobs page that ends past the first 10,000 rows is read in pages after
// the last row of the one before, in a point in time where the server
// offers one (closed afterwards), with a unique last sort key where it
// offers none, and with from/size where the server does not page with
// search_after; the rows and the total are the same every way.
func TestJobsPagesPastTheResultWindow(t *testing.T) {
	base := time.Now().Add(-time.Hour).Truncate(time.Minute)
	for _, c := range []struct {
		name       string
		pit, sorts bool
		wantLog    []string
	}{
		{"point in time", true, true, []string{"POST /jobsight-jobs,jobsight-jobs-*/_pit ", "POST /_search pit=", "POST /_search pit=", "DELETE /_pit "}},
		{"search_after without a point in time", false, true, []string{"POST /jobsight-jobs,jobsight-jobs-*/_pit ", "POST /jobsight-jobs,jobsight-jobs-*/_search ", "POST /jobsight-jobs,jobsight-jobs-*/_search "}},
		{"from/size", false, false, []string{"POST /jobsight-jobs,jobsight-jobs-*/_pit ", "POST /jobsight-jobs,jobsight-jobs-*/_search ", "POST /jobsight-jobs,jobsight-jobs-*/_search from=10000"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := &fakePagingES{n: 25000, pit: c.pit, sortValues: c.sorts, base: base, pits: map[string]bool{}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			jd, _ := json.Marshal(map[string]any{"elasticsearchUrl": srv.URL, "prometheusUrl": srv.URL, "maxJobs": 20000})
			inst, err := plugin.NewDatasource(context.Background(), backend.DataSourceInstanceSettings{UID: "paging", JSONData: jd})
			if err != nil {
				t.Fatal(err)
			}
			ds := inst.(*plugin.Datasource)
			defer ds.Dispose()
			resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{
				PluginContext: backend.PluginContext{User: &backend.User{Login: "admin", Role: "Admin"},
					DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: "paging"}},
				Queries: []backend.DataQuery{{RefID: "A", JSON: json.RawMessage(`{"queryType":"jobs","offset":9990,"limit":30}`),
					TimeRange: backend.TimeRange{From: base.Add(-30 * 24 * time.Hour), To: base.Add(time.Hour)}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			dr := resp.Responses["A"]
			if dr.Error != nil {
				t.Fatal(dr.Error)
			}
			fr := dr.Frames[0]
			ids, _ := fr.FieldByName("doc_id")
			if ids == nil || ids.Len() != 30 {
				t.Fatalf("rows: %v", ids)
			}
			for i := 0; i < 30; i++ {
				if got, want := *(ids.At(i).(*string)), fmt.Sprintf("c:%d", 9990+i); got != want {
					t.Errorf("row %d is %s, want %s", i, got, want)
				}
			}
			m := fr.Meta.Custom.(map[string]any)
			if m["total"] != int64(25000) {
				t.Errorf("total %v, want 25000", m["total"])
			}
			if n := m["elasticsearchRequests"].(int64); n > 5 {
				t.Errorf("%d requests", n)
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			if len(fake.log) != len(c.wantLog) {
				t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(fake.log, "\n"), strings.Join(c.wantLog, "\n"))
			}
			for i, w := range c.wantLog {
				if !strings.HasPrefix(fake.log[i], w) {
					t.Errorf("request %d: %s, want %s…", i, fake.log[i], w)
				}
			}
			if c.pit && len(fake.pits) != 0 {
				t.Errorf("points in time left open: %v", fake.pits)
			}
			if c.sorts && !strings.Contains(fake.log[2], "search_after=") {
				t.Errorf("the second page is not read after the first: %s", fake.log[2])
			}
		})
	}
}
