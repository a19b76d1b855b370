package feedback

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

func result(user, account, kind, class string, score float64) jobmodel.Result {
	a := jobmodel.Analysis{Kind: kind, Class: class, Score: jobmodel.Ptr(score),
		Figures: jobmodel.AnalysisFigures{GPUHours: jobmodel.Ptr(2.0), GPUHoursWasted: jobmodel.Ptr(2 * (1 - score))}}
	if kind == jobmodel.KindGPU {
		a.Figures.GPUUtilization = jobmodel.Ptr(score)
	} else {
		a.Figures.CPUEfficiency = jobmodel.Ptr(score)
	}
	return jobmodel.Result{Cluster: "hpc1", User: user, Account: account, Analysis: a}
}

func repeat(r jobmodel.Result, n int) []jobmodel.Result {
	out := make([]jobmodel.Result, n)
	for i := range out {
		out[i] = r
	}
	return out
}

func TestRollupCountsMediansAndAdvisory(t *testing.T) {
	t.Parallel()
	end := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	start := end.Add(-24 * time.Hour)
	// alice: 6 judged GPU jobs, 4 wasted, twice in a row → advisory.
	cur := append(repeat(result("alice", "physics", jobmodel.KindGPU, jobmodel.ClassWasted, 0.05), 4),
		result("alice", "physics", jobmodel.KindGPU, jobmodel.ClassEfficient, 0.9),
		result("alice", "physics", jobmodel.KindGPU, jobmodel.ClassAcceptable, 0.5),
		result("alice", "physics", jobmodel.KindGPU, jobmodel.ClassShort, 0))
	prev := repeat(result("alice", "physics", jobmodel.KindGPU, jobmodel.ClassInefficient, 0.2), 5)
	// bob: as wasteful, but only this period → no advisory; carol: too few jobs.
	cur = append(cur, repeat(result("bob", "chem", jobmodel.KindCPU, jobmodel.ClassWasted, 0.1), 6)...)
	cur = append(cur, repeat(result("carol", "chem", jobmodel.KindCPU, jobmodel.ClassWasted, 0.1), 2)...)
	prev = append(prev, repeat(result("carol", "chem", jobmodel.KindCPU, jobmodel.ClassWasted, 0.1), 2)...)

	hs := Rollup("hpc1", start, end, cur, prev, DefaultAdvisory, end)
	by := map[string]jobmodel.History{}
	for _, h := range hs {
		by[h.Kind+":"+h.Name] = h
	}
	if len(hs) != 5 { // 3 users, 2 accounts
		t.Fatalf("%d entries: %v", len(hs), by)
	}
	a := by["user:alice"]
	if a.Jobs != 7 || a.Judged != 6 || a.Classes.Wasted != 4 || a.Classes.Short != 1 || !a.Advisory || a.AdvisoryReason == "" {
		t.Errorf("alice = %+v", a)
	}
	if math.Abs(*a.MedianGPUUtilization-0.05) > 1e-9 || a.MedianCPUEfficiency != nil || math.Abs(*a.Trend-(0.05-0.2)) > 1e-9 {
		t.Errorf("alice medians gpu %v cpu %v trend %v", a.MedianGPUUtilization, a.MedianCPUEfficiency, a.Trend)
	}
	if math.Abs(a.Shares.Wasted-4.0/6) > 1e-9 || a.DocID != "hpc1:user:alice:2026-11-23T00:00Z" {
		t.Errorf("alice shares %+v id %s", a.Shares, a.DocID)
	}
	if b := by["user:bob"]; b.Advisory || b.Trend != nil {
		t.Errorf("bob flagged without a previous period: %+v", b)
	}
	if c := by["user:carol"]; c.Advisory {
		t.Errorf("carol flagged with 2 jobs: %+v", c)
	}
	if ch := by["account:chem"]; ch.Jobs != 8 || !(math.Abs(*ch.GPUHours-16) < 1e-9) {
		t.Errorf("account chem = %+v", ch)
	}
	if err := (AdvisoryRule{MinJudged: 0, MinBadShare: 0.5}).Validate(); err == nil || !strings.Contains(err.Error(), "min_judged") {
		t.Errorf("validate: %v", err)
	}
}

func TestExportCSVAndJSON(t *testing.T) {
	t.Parallel()
	r := result("=HYPERLINK(\"x\")", "a,b", jobmodel.KindGPU, jobmodel.ClassWasted, 0.05)
	r.JobID, r.EndTime = "42", jobmodel.At(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	r.Analysis.Causes = []jobmodel.Cause{{ID: "gpus_held_idle"}, {ID: "parallelism_mismatch"}}
	empty := jobmodel.Result{Cluster: "hpc1", JobID: "43", Analysis: jobmodel.Analysis{Class: jobmodel.ClassUnknown}}
	var b bytes.Buffer
	if err := WriteCSV(&b, []jobmodel.Result{r, empty}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 3 || len(rows[0]) != len(ExportColumns) {
		t.Fatalf("rows %v err %v", rows, err)
	}
	col := func(row []string, name string) string {
		for i, c := range ExportColumns {
			if c == name {
				return row[i]
			}
		}
		t.Fatalf("no column %s", name)
		return ""
	}
	if u := col(rows[1], "user"); !strings.HasPrefix(u, "'=") {
		t.Errorf("formula not defused: %q", u)
	}
	if col(rows[1], "account") != "a,b" || col(rows[1], "causes") != "gpus_held_idle;parallelism_mismatch" || col(rows[1], "end_time") != "2026-11-22T10:00:00Z" {
		t.Errorf("row %v", rows[1])
	}
	if col(rows[2], "score") != "" || col(rows[2], "gpu_utilization") != "" {
		t.Errorf("absent figures exported as %q / %q, want empty", col(rows[2], "score"), col(rows[2], "gpu_utilization"))
	}
	b.Reset()
	if err := WriteJSON(&b, nil); err != nil || strings.TrimSpace(b.String()) != "[]" {
		t.Errorf("empty JSON export %q %v", b.String(), err)
	}
	b.Reset()
	_ = WriteJSON(&b, []jobmodel.Result{r})
	var back []jobmodel.Result
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back[0].User != r.User {
		t.Errorf("JSON round trip: %v", err)
	}
}
