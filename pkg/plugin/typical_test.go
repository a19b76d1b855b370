package plugin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/analysis"
	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/site/advise"
)

// TestTypicalRequestIsTheCommandsAdvice: the "typical request against
// typical use" panel on a real ZincSearch. alice's over-asking "train"
// jobs must show the #SBATCH lines `jobsight advise` prints for a new
// train job (advise.Advise on the same documents), with her figures
// only: bob's jobs of the same name (and his hostile one) never enter her
// row, a forged user filter shows her nothing of his, and an admin sees
// both users' kinds.
func TestTypicalRequestIsTheCommandsAdvice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const index = "jobsight-jobs-typical"
	st, c := stackWithJobIndex(t, ctx, index)
	now := time.Now().Truncate(time.Second)
	mk := func(i int, user, name string, cpus, mem int64, limit time.Duration, cores float64, peak int64, ran time.Duration) jobmodel.Job {
		end := now.Add(-time.Duration(40-i) * time.Hour)
		el, lim := ran.Seconds(), int64(limit.Seconds())
		uid := uint32(1000 + len(user))
		j := jobmodel.Job{DocID: fmt.Sprintf("c:%d", 500+i), SchemaVersion: jobmodel.SchemaVersion, Cluster: "c",
			JobID: fmt.Sprint(500 + i), SlurmJobID: uint64(500 + i), Name: name, User: user, UID: &uid, Account: "physics",
			Partition: "cpu", State: jobmodel.StateCompleted, Final: true, NodeCount: 1,
			SubmitTime: jobmodel.At(end.Add(-ran)), StartTime: jobmodel.At(end.Add(-ran)), EndTime: jobmodel.At(end), UpdatedAt: jobmodel.At(end),
			ElapsedSeconds: &el, TimeLimitSeconds: &lim,
			Requested: jobmodel.Request{CPUs: &cpus, MemoryBytes: &mem, MemoryPerNodeBytes: &mem, Nodes: jobmodel.Ptr(int64(1)), Tasks: jobmodel.Ptr(int64(1))},
			Usage: jobmodel.Usage{
				CPU:    &jobmodel.CPUUsage{P95Cores: &cores, AvgCores: &cores, CoreSeconds: jobmodel.Ptr(cores * el)},
				Memory: &jobmodel.MemoryUsage{PeakBytes: &peak, MaxNodePeakBytes: &peak},
			}}
		j.Totals = jobmodel.TotalsOf(&j)
		return j
	}
	gib := int64(jobmodel.GiB)
	var alice, bob []jobmodel.Job
	for i := range 12 {
		alice = append(alice, mk(i, "alice", "train", 16, 64*gib, 8*time.Hour, 2.6+0.1*float64(i%3), 5*gib+int64(i%4)*gib/8, 2*time.Hour+time.Duration(i)*time.Minute))
	}
	for i := range 4 {
		alice = append(alice, mk(12+i, "alice", "eval", 4, 8*gib, time.Hour, 3.6, 6*gib, 50*time.Minute))
	}
	for i := range 5 { // bob's train jobs use all they ask for: they would hide alice's advice
		bob = append(bob, mk(20+i, "bob", "train", 16, 64*gib, 8*time.Hour, 16, 60*gib, 7*time.Hour))
	}
	hostile := `"><img src=x onerror=alert(1)>{{7*7}}`
	for i := range 3 {
		bob = append(bob, mk(25+i, "bob", hostile, 2, 2*gib, time.Hour, 0.1, gib/8, 40*time.Minute))
	}
	bulkJobs(t, ctx, c, index, append(append([]jobmodel.Job{}, alice...), bob...)...)
	ds := newDatasource(t, servers{es: st.Elasticsearch, prom: st.Prometheus}, index, map[string]any{
		"timeoutSeconds": 30, "identitySource": "unverifiedLogin", "fullAccessRoles": []string{"Admin"}})

	from, to := now.Add(-7*24*time.Hour), now
	run := func(login, role string, model map[string]any) *data.Frame {
		t.Helper()
		dr := askRange(t, ds, &backend.User{Login: login, Role: role}, model, from, to, 100)
		if dr.Error != nil {
			t.Fatalf("%s %v: %v", login, model, dr.Error)
		}
		if len(dr.Frames) != 1 {
			t.Fatalf("%d frames", len(dr.Frames))
		}
		return dr.Frames[0]
	}
	rows := func(fr *data.Frame) map[string]map[string]any {
		out := map[string]map[string]any{}
		for i := 0; i < fr.Rows(); i++ {
			r := map[string]any{}
			for _, f := range fr.Fields {
				v, _ := f.ConcreteAt(i)
				r[f.Name] = v
			}
			out[fmt.Sprint(r["user"], "/", r["kind"])] = r
		}
		return out
	}
	model := map[string]any{"queryType": "typicalRequest"}
	var got map[string]map[string]any
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(300 * time.Millisecond) {
		got = rows(run("admin", "Admin", model))
		if len(got) == 4 || time.Now().After(deadline) {
			break
		}
	}
	for _, k := range []string{"alice/train", "alice/eval", "bob/train", "bob/" + hostile} {
		if got[k] == nil {
			t.Fatalf("admin: no row %q in %d rows", k, len(got))
		}
	}

	// alice sees her kinds only, and her train row is the command's advice.
	mine := rows(run("alice", "Viewer", model))
	if len(mine) != 2 || mine["alice/train"] == nil || mine["alice/eval"] == nil {
		t.Fatalf("alice sees %d rows: %v", len(mine), keys(mine))
	}
	var past []advise.Past
	for _, j := range alice {
		past = append(past, advise.PastOf(j, analysis.Default()))
	}
	req := advise.Request{CPUsPerTask: 16, Tasks: 1, MemPerNodeBytes: 64 * gib, TimeLimitSeconds: 8 * 3600,
		Partition: "cpu", Account: "physics", Name: "train"}
	want := advise.Advise(req, past, advise.Default())
	tr := mine["alice/train"]
	if len(want.Changes) < 3 || tr["advice"] != strings.Join(want.SBATCH(), "  ") {
		t.Errorf("alice's train advice %q, the command's %q", tr["advice"], want.SBATCH())
	}
	if tr["jobs"] != int64(12) || tr["cpus_requested"] != 16.0 || tr["cpus_used_max"].(float64) > 2.81 ||
		tr["memory_requested"] != float64(64*gib) || tr["memory_used_max"] != float64(5*gib+3*gib/8) {
		t.Errorf("alice's train row %v: want 12 jobs, 16 CPUs asked, at most 2.8 used, 64 GiB asked, 5.375 GiB at most", tr)
	}
	if ev := mine["alice/eval"]; ev["advice"] != "" || ev["quiet"] == "" {
		t.Errorf("eval fits: %v", ev)
	}
	// A forged filter for bob's jobs shows alice nothing of his.
	if forged := rows(run("alice", "Viewer", map[string]any{"queryType": "typicalRequest", "user": []string{"bob"}})); len(forged) != 0 {
		t.Errorf("alice filtering on bob sees %v", keys(forged))
	}
	// bob's train kind is his own figures: nothing to advise.
	if bt := got["bob/train"]; bt["advice"] != "" || bt["jobs"] != int64(5) {
		t.Errorf("bob's train row %v", bt)
	}
	// The name filter is literal (the hostile name's characters included).
	named := rows(run("admin", "Admin", map[string]any{"queryType": "typicalRequest", "name": "onerror=alert(1)>{{"}))
	if len(named) != 1 || named["bob/"+hostile] == nil {
		t.Errorf("name filter: %v", keys(named))
	}
	// A range before every job: no kinds, and no error.
	dr := askRange(t, ds, &backend.User{Login: "alice", Role: "Viewer"}, model, now.Add(-30*24*time.Hour), now.Add(-20*24*time.Hour), 100)
	if dr.Error != nil || len(dr.Frames) != 1 || dr.Frames[0].Rows() != 0 {
		t.Errorf("empty range: %v, %d frames", dr.Error, len(dr.Frames))
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
