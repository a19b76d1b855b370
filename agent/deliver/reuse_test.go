package deliver

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// ClaimDocID is the agent's one question on a reused id: without create
// it decides the id and writes nothing; with create (the job's first
// node) it also writes the running document under that id, leaving the
// older job's document as it was.
func TestClaimDocIDDecidesTheIDAndCreatesOnTheFirstNode(t *testing.T) {
	fake := &versioningES{docs: map[string]json.RawMessage{}, versions: map[string]int64{}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	o := newOutputs(t, testConfig(t, srv.URL, deadURL(t), t.TempDir()))
	ctx := context.Background()

	older, _ := sampleJob("c", 3, time.Unix(1_700_000_000, 0))
	if err := o.PutJob(ctx, older); err != nil {
		t.Fatal(err)
	}
	newer, _ := sampleJob("c", 3, time.Unix(1_700_100_000, 0))
	newer.Final, newer.State, newer.EndTime = false, jobmodel.StateRunning, nil
	want := jobmodel.ReuseDocID(older.DocID, newer.SubmitTime.Time)

	id, err := o.ClaimDocID(ctx, newer, time.Unix(1_700_100_010, 0), false)
	if err != nil || id != want {
		t.Fatalf("claimed %q (%v), want the reuse id %q", id, err, want)
	}
	fake.mu.Lock()
	_, written := fake.docs[want]
	fake.mu.Unlock()
	if written {
		t.Errorf("a claim without create wrote the job's document")
	}

	if id, err = o.ClaimDocID(ctx, newer, time.Unix(1_700_100_010, 0), true); err != nil || id != want {
		t.Fatalf("claimed with create %q (%v), want %q", id, err, want)
	}
	fake.mu.Lock()
	var kept, running jobmodel.Job
	_ = json.Unmarshal(fake.docs[older.DocID], &kept)
	_ = json.Unmarshal(fake.docs[want], &running)
	fake.mu.Unlock()
	if running.DocID != want || running.State != jobmodel.StateRunning {
		t.Errorf("the running document: doc_id %q state %q", running.DocID, running.State)
	}
	if !kept.Final || !kept.SubmitTime.Equal(older.SubmitTime.Time) {
		t.Errorf("the older job's document was changed: final %v submit %v", kept.Final, kept.SubmitTime)
	}

	fresh, _ := sampleJob("c", 4, time.Unix(1_700_000_000, 0))
	if id, err := o.ClaimDocID(ctx, fresh, time.Unix(1_700_000_010, 0), true); err != nil || id != fresh.DocID {
		t.Errorf("a fresh id: claimed %q (%v), want %q", id, err, fresh.DocID)
	}
}
