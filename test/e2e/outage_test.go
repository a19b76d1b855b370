package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// The store is down from mid-job until after the job has ended: the final
// job and node documents arrive soon after it returns, although no other
// job starts on the node (the agent stays to deliver its spool). Not
// parallel: the store is shared by every test.
func TestFinalDocumentsArriveAfterAnOutageWithNoOtherJob(t *testing.T) {
	e := need(t)
	if e.st.Elasticsearch.External {
		t.Skip("the Elasticsearch under test is external; it cannot be stopped here")
	}
	id := e.submit(t, "-J", "outage", "-c", "1", "--mem=64M", "--wrap", "sleep 12")
	ctx, cancel := context.WithTimeout(context.Background(), jobWait)
	defer cancel()
	if _, err := e.st.Slurm.WaitJobState(ctx, id, "RUNNING"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // the running documents are in
	if err := e.st.Elasticsearch.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			_ = e.st.Elasticsearch.Restart(context.Background())
		}
	}()
	if _, err := e.st.Slurm.WaitJobState(ctx, id, "COMPLETED"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(15 * time.Second) // the agent finalized into the spool and waits
	if err := e.st.Elasticsearch.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	restarted = true
	back := time.Now()
	job := e.finalJob(t, e.docID(id), time.Minute)
	t.Logf("final job document %s %v after the store came back", job.DocID, time.Since(back).Round(time.Second))
	if job.State != jobmodel.StateCompleted || job.CPU == nil || job.Sampling.Count < 5 {
		t.Errorf("job document: state %s cpu %+v samples %d", job.State, job.CPU, job.Sampling.Count)
	}
	if node := e.nodeDoc(t, job.DocID); node.AgentState != jobmodel.AgentFinished {
		t.Errorf("node document agent_state %q", node.AgentState)
	}
}
