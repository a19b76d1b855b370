package plugin_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// TestNameFilterIsLiteralEverywhere: the job-name filter is text, never a
// pattern. Names a user typed (into sbatch -J or into the panel's filter)
// that hold the wildcard and regular-expression characters of the
// stores' query languages — * ? \ . | and more — match exactly the names
// that contain that text: in the Jobs table, which reads documents, and
// in the grouped panels, which aggregate in the store without reading
// any. On a real ZincSearch. Before, the aggregations read "train*v2" as
// "train", any one character, "v2": 4 jobs instead of 1.
func TestNameFilterIsLiteralEverywhere(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	const index = "jobsight-jobs-names"
	st, c := stackWithJobIndex(t, ctx, index)
	names := []string{"train*v2", "trainXv2", "train?v2", `train\v2`, "tr.in", "train", "a|b", "a(b)", "[ab]+", "naïve ☃ run", `"q"`, "x@y&z~#<1-2>", "line1\nline2"}
	now := time.Now().Truncate(time.Second)
	var jobs []jobmodel.Job
	for i, name := range names {
		start, el, cpus := now.Add(-time.Duration(2+i)*time.Hour), 3600.0, int64(2)
		j := jobmodel.Job{DocID: fmt.Sprintf("c:%d", 500+i), SchemaVersion: jobmodel.SchemaVersion, Cluster: "c",
			JobID: fmt.Sprint(500 + i), Name: name, User: "u1", Account: "a1", Partition: "p", State: jobmodel.StateCompleted,
			NodeCount: 1, SubmitTime: jobmodel.At(start), StartTime: jobmodel.At(start), EndTime: jobmodel.At(start.Add(time.Hour)),
			ElapsedSeconds: &el, Requested: jobmodel.Request{CPUs: &cpus}, Final: true, UpdatedAt: jobmodel.At(now)}
		j.CPU = &jobmodel.CPUUsage{CoreSeconds: jobmodel.Ptr(el)}
		j.Totals = jobmodel.TotalsOf(&j)
		jobs = append(jobs, j)
	}
	bulkJobs(t, ctx, c, index, jobs...)
	ds := newDatasource(t, servers{es: st.Elasticsearch, prom: st.Prometheus}, index,
		map[string]any{"identitySource": "unverifiedLogin", "fullAccessRoles": []string{"Admin"}})
	admin := &backend.User{Login: "admin", Role: "Admin"}
	from, to := now.Add(-24*time.Hour), now
	// counts answers how many jobs the Jobs table and the reservation by
	// user (an aggregation) find for a name filter.
	counts := func(name string) (rows, aggregated int64) {
		t.Helper()
		dr := askRange(t, ds, admin, map[string]any{"queryType": "jobs", "name": name}, from, to, 100)
		if dr.Error != nil {
			t.Fatalf("jobs named %q: %v", name, dr.Error)
		}
		rows = int64(dr.Frames[0].Rows())
		dr = askRange(t, ds, admin, map[string]any{"queryType": "reservation", "groupBy": "user", "name": name}, from, to, 100)
		if dr.Error != nil {
			t.Fatalf("reservation of jobs named %q: %v", name, dr.Error)
		}
		if f, _ := dr.Frames[0].FieldByName("jobs"); f != nil {
			for i := 0; i < f.Len(); i++ {
				aggregated += f.At(i).(int64)
			}
		}
		return rows, aggregated
	}
	// ZincSearch makes writes searchable after about a second.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		if rows, agg := counts(""); rows == int64(len(names)) && agg == int64(len(names)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job documents never became searchable")
		}
	}
	for _, tc := range []struct {
		name string
		want int64
	}{
		{"train*v2", 1}, {"train?v2", 1}, {`train\v2`, 1}, {`\`, 1}, {"*", 1}, {"?", 1},
		{".", 1}, {"tr.in", 1}, {"a|b", 1}, {"(b)", 1}, {"[ab]+", 1}, {"+", 1}, {`"`, 1},
		{"@", 1}, {"&z~#<1-2>", 1}, {"naïve ☃", 1}, {"line2", 1}, {"v2", 4}, {"train", 5}, {"in", 7}, {"zzz", 0},
	} {
		rows, agg := counts(tc.name)
		if rows != tc.want || agg != tc.want {
			t.Errorf("name filter %q: %d rows in the Jobs table, %d jobs aggregated; want %d", tc.name, rows, agg, tc.want)
		}
	}
}
