package plugin_test

import (
	"slices"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// The agents write job documents to monthly indices ("<base>-YYYY.MM");
// documents written before 0.2 stay in the single index "<base>". In the
// real ZincSearch, the datasource's searches read both, and its health
// check finds a job index that exists only as a monthly one. Before the
// fix it searched "<base>" alone: the monthly index's job was missing and
// the health check said the job index was not found.
func TestDatasourceReadsMonthlyAndOldIndices(t *testing.T) {
	srv := startServers(t)
	base := uniqueIndex(t, "months")
	now := time.Now().UTC().Truncate(time.Second)
	mk := func(id, user string, submit time.Time) jobmodel.Job {
		j := jobmodel.Job{DocID: "c1:" + id, Cluster: "c1", JobID: id, User: user, Account: "acct", Partition: "p",
			State: "COMPLETED", Final: true, SubmitTime: jobmodel.At(submit), StartTime: jobmodel.At(submit.Add(time.Minute)),
			EndTime: jobmodel.At(submit.Add(10 * time.Minute)), ElapsedSeconds: jobmodel.Ptr(540.0),
			Sampling: jobmodel.Sampling{IntervalSeconds: 5, Count: 10}}
		j.Requested.CPUs = jobmodel.Ptr(int64(1))
		return j
	}
	monthly := mk("101", "alice", now.Add(-40*time.Minute))
	old := mk("102", "bob", now.Add(-30*time.Minute))
	indexJobs(t, srv.es, monthly.IndexOf(base, now), monthly)
	indexJobs(t, srv.es, base, old)

	ds := newDatasource(t, srv, base, nil)
	admin := &backend.User{Login: "admin", Role: "Admin"}
	fs := ask(t, ds, admin, map[string]any{"queryType": "jobs"})
	users, _ := fs[0].FieldByName("user")
	var got []string
	for i := 0; users != nil && i < users.Len(); i++ {
		v, _ := users.ConcreteAt(i)
		got = append(got, v.(string))
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"alice", "bob"}) {
		t.Fatalf("the Jobs table shows the jobs of %v, want alice's (monthly index) and bob's (pre-0.2 index)", got)
	}

	// Only a monthly index (a site that started with 0.2): healthy.
	fresh := uniqueIndex(t, "fresh")
	createIndex(t, srv.es, jobmodel.MonthlyIndex(fresh, time.Now()))
	res, details := checkHealth(t, instance(srv.es.URL, srv.es.User, fresh, srv.prom.URL, map[string]string{"elasticsearchPassword": srv.es.Password}))
	if !details.Elasticsearch.OK {
		t.Fatalf("health with only a monthly job index: %s", res.Message)
	}
	wantContains(t, details.Elasticsearch.Message, "job index "+jobmodel.MonthlyIndex(fresh, time.Now())+" found")
}
