package feedback

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/test/stack"
)

// `jobsight analyze` over a past range gives the documents of agents
// before 0.2 their totals, where they are stored (the pre-0.2 single
// index included), so that the grouped panels stop counting them as
// lacking every figure. On a real ZincSearch.
func TestReanalyseBackfillsTotals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	es, err := stack.StartZinc(ctx, t.TempDir())
	if err != nil {
		stack.Unavailable(t, "ZincSearch: %v", err)
	}
	defer es.Stop()
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{es.URL}, Username: es.User, Password: es.Password})
	if err != nil {
		t.Fatal(err)
	}
	st := &Store{ES: c, Indices: Indices{Job: "jobsight-jobs", Result: "jobsight-results", History: "jobsight-history"}}
	if err := st.EnsureIndices(ctx); err != nil {
		t.Fatal(err)
	}
	// The old single index, as 0.1 created it.
	if err := c.EnsureIndex(ctx, "jobsight-jobs", jobmodel.JobMapping()); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	cpus := int64(4)
	old := jobmodel.Job{DocID: "c:1", Cluster: "c", JobID: "1", User: "u", Final: true, State: jobmodel.StateCompleted,
		SubmitTime: jobmodel.At(end.Add(-3 * time.Hour)), StartTime: jobmodel.At(end.Add(-2 * time.Hour)), EndTime: jobmodel.At(end),
		ElapsedSeconds: jobmodel.Ptr(7200.0), Requested: jobmodel.Request{CPUs: &cpus},
		Usage: jobmodel.Usage{CPU: &jobmodel.CPUUsage{CoreSeconds: jobmodel.Ptr(3 * 7200.0)}}}
	body, _ := json.Marshal(old)
	if fails, err := c.Bulk(ctx, []store.Doc{{Kind: store.KindJobDoc, Index: "jobsight-jobs", ID: old.DocID, Body: body}}); err != nil || len(fails) > 0 {
		t.Fatalf("indexing: %v %v", err, fails)
	}
	site := &Site{Store: st, Log: slog.Default()}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := site.Reanalyse(ctx, end.Add(-time.Hour), end.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("analysed %d jobs, want 1", n)
		}
		time.Sleep(500 * time.Millisecond)
	}
	want := jobmodel.TotalsOf(&old)
	for {
		got, err := st.Job(ctx, old.DocID)
		if err == nil && got.Totals != nil {
			if !reflect.DeepEqual(got.Totals, want) {
				t.Errorf("totals %+v, want %+v", got.Totals, want)
			}
			if idx := st.where[old.DocID]; idx != "jobsight-jobs" {
				t.Errorf("the document is now in %q, want it rewritten where it was (jobsight-jobs)", idx)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no totals after the analysis: %v %+v", err, got.Totals)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
