package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/pkg/plugin"
)

// TestGroupedReservationKeepsEveryJob: a FAKE Elasticsearch (labelled as
// such: ZincSearch answers neither more groups than asked for nor an
// empty keyword apart from a missing one) answers a grouped reservation
// with as many groups as the plugin asks for, one of them keyed "other",
// one keyed "" (an empty account), and jobs beyond them and without the
// field. Every job is in some row: the rest is added to a row of the same
// key, never put in its place.
func TestGroupedReservationKeepsEveryJob(t *testing.T) {
	const groups = 5000 // the plugin's terms size
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if !strings.Contains(string(body), `"aggs"`) {
			fmt.Fprint(w, `{"hits":{"total":{"value":0},"hits":[]}}`)
			return
		}
		sums := func(n int) string {
			return fmt.Sprintf(`"with":{"buckets":[{"key":1,"doc_count":%d}]},"missing":{"buckets":[{"key":"","doc_count":%d}]},"core_hours_reserved":{"value":%d}`, n, n, n)
		}
		var b strings.Builder
		for i := 0; i < groups; i++ {
			key := fmt.Sprintf("a%d", i)
			switch i {
			case 0:
				key = "other"
			case 1:
				key = ""
			}
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"key":%q,"doc_count":1,%s}`, key, sums(1))
		}
		// 3 jobs in groups past the terms size.
		fmt.Fprintf(w, `{"hits":{"total":{"value":%d},"hits":[]},"aggregations":{%s,"g":{"sum_other_doc_count":3,"buckets":[%s]}}}`,
			groups+3, sums(groups+3), b.String())
	}))
	defer srv.Close()
	jd, _ := json.Marshal(map[string]any{"elasticsearchUrl": srv.URL, "prometheusUrl": srv.URL})
	inst, err := plugin.NewDatasource(context.Background(), backend.DataSourceInstanceSettings{UID: "keys", JSONData: jd})
	if err != nil {
		t.Fatal(err)
	}
	ds := inst.(*plugin.Datasource)
	defer ds.Dispose()
	fr := ask(t, ds, &backend.User{Login: "admin", Role: "Admin"}, map[string]any{"queryType": "reservation", "groupBy": "account"})[0]
	keys, _ := fr.FieldByName("account")
	jobs, _ := fr.FieldByName("jobs")
	total := int64(0)
	byKey := map[string]int64{}
	for i := 0; i < jobs.Len(); i++ {
		total += jobs.At(i).(int64)
		byKey[keys.At(i).(string)] += jobs.At(i).(int64)
	}
	if total != groups+3 {
		t.Errorf("the rows hold %d jobs, want %d", total, groups+3)
	}
	if byKey[""] != 1 || byKey["other"] != 4 {
		t.Errorf(`account "": %d jobs, want 1; "other": %d, want 4 (its own and the 3 past the groups)`, byKey[""], byKey["other"])
	}
}
