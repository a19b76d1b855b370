package jobagent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// fixtureSLUID is the job of agent/collector's SLUID fixture (job 4242 in
// Slurm 26.05's cgroup v2 layout, its directory named by this SLUID; built
// from Slurm's and the kernel's documented layouts, not captured).
const (
	fixtureSLUID = "s2MNKT07NV0000"
	sluidFixture = "../collector/testdata/cgroupv2-slurm26-sluid"
)

// squeueSLUID is fakeSlurm answering with a SLUID too, as SlurmLookup
// does from squeue's step_id.sluid.
type squeueSLUID struct {
	*fakeSlurm
	sluid string
}

func (s squeueSLUID) Lookup(ctx context.Context, cluster string, jobID uint64, uid uint32) (jobmodel.Job, error) {
	j, err := s.fakeSlurm.Lookup(ctx, cluster, jobID, uid)
	j.SLUID = s.sluid
	return j, err
}

// forgedSLUIDs are start messages whose sluid is not Slurm's printed form.
var forgedSLUIDs = []string{
	`{"op":"start","job_id":1,"sluid":"../../x"}`,
	`{"op":"start","job_id":1,"sluid":"../../../sys/fs/cgroup"}`,
	`{"op":"start","job_id":1,"sluid":"s2MNKT07NV00000"}`, // too long
	`{"op":"start","job_id":1,"sluid":"s2MNKT07NV000"}`,   // too short
	`{"op":"start","job_id":1,"sluid":"s2MNKT07NVU000"}`,  // U is not in Crockford's alphabet
	`{"op":"start","job_id":1,"sluid":"s2mnkt07nv0000"}`,  // Slurm prints upper case
	`{"op":"start","job_id":1,"sluid":"job_1"}`,           // the other naming is not a SLUID
	`{"op":"start","job_id":1,"sluid":"s2MNKT07NV000/"}`,  // a separator
	`{"op":"stop","job_id":1,"sluid":"s2MNKT07NV0000\n"}`, // a newline
	`{"op":"start","job_id":1,"sluid":"` + strings.Repeat("s", 5000) + `"}`,
}

// The node agent's socket refuses a message whose sluid is not a SLUID
// (it would name a path under the cgroup root), and says so.
func TestNodeAgentRefusesForgedSLUID(t *testing.T) {
	t.Parallel()
	for _, bad := range forgedSLUIDs {
		var r Request
		if err := json.Unmarshal([]byte(bad), &r); err != nil {
			t.Fatalf("%.60s: %v", bad, err)
		}
		if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "sluid") || len(err.Error()) > 200 {
			t.Errorf("%.60s: Validate = %v, want a short error naming the sluid", bad, err)
		}
	}
	for _, good := range []string{`{"op":"start","job_id":1,"sluid":"s2MNKT07NV0000"}`, `{"op":"start","job_id":1}`, `{"op":"stop","job_id":1,"sluid":"sBX9M87FEJGA00"}`} {
		var r Request
		if err := json.Unmarshal([]byte(good), &r); err != nil || r.Validate() != nil {
			t.Errorf("%s refused: %v, %v", good, err, r.Validate())
		}
	}

	slurm := &fakeSlurm{state: jobmodel.StateRunning}
	a := testAgent(t, slurm, &memOutputs{}, busySources)
	done := make(chan error, 1)
	go func() { _, err := a.Launch(context.Background(), Request{Op: "start", JobID: 5}); done <- err }()
	p := nodeFiles(a.Config.StateDir, "n1")
	waitFor(t, "the socket", func() bool { _, err := os.Stat(p.sock); return err == nil })
	for _, bad := range forgedSLUIDs[:3] {
		c, err := net.Dial("unix", p.sock)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte(bad + "\n"))
		reply, _ := io.ReadAll(c)
		c.Close()
		if got := string(reply); !strings.HasPrefix(got, "error:") || !strings.Contains(got, "sluid") {
			t.Errorf("%s answered %q, want an error naming the sluid", bad, got)
			if strings.HasPrefix(got, "ok") { // taken on: stop it, or the agent never exits
				Handover(a.Config.StateDir, "n1", Request{Op: "stop", JobID: 1})
			}
		}
	}
	slurm.set(jobmodel.StateCompleted)
	Handover(a.Config.StateDir, "n1", Request{Op: "stop", JobID: 5})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(jobFiles(a.Config.StateDir, "c", "n1", 1).lock()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a forged request's job was taken on: %v", err)
	}
}

// The SLUID reaches the collector: the start request's, else squeue's; a
// SLUID from squeue that is not one is dropped. On the SLUID fixture the
// job's cgroup is found exactly when the SLUID is known; the checkpoint
// keeps it, and a next agent's resumed request carries it.
func TestSLUIDReachesTheCollector(t *testing.T) {
	t.Parallel()
	cfg := collector.Config{CgroupRoot: filepath.Join(sluidFixture, "cgroup"), ProcRoot: filepath.Join(sluidFixture, "proc"), Version: collector.VersionV2}
	for _, tc := range []struct {
		name          string
		request, from string // the start request's SLUID, squeue's
		want          string
	}{
		{"from the SPANK plugin", fixtureSLUID, "", fixtureSLUID},
		{"from squeue", "", fixtureSLUID, fixtureSLUID},
		{"the plugin's over squeue's", fixtureSLUID, "sBX9M87FEJGA00", fixtureSLUID},
		{"squeue's not a SLUID", "", "../../x", ""},
		{"none", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			type found struct {
				target collector.Target
				err    error
			}
			rec := make(chan found, 1)
			sources := func(ctx context.Context, target collector.Target) (collector.Collector, error) {
				c, err := CgroupSources(cfg, 0)(ctx, target)
				rec <- found{target, err}
				return c, err
			}
			slurm := &fakeSlurm{state: jobmodel.StateRunning}
			a := testAgent(t, slurm, &memOutputs{}, sources)
			a.Slurm = squeueSLUID{slurm, tc.from}
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- a.StartJob(ctx, Request{Op: "start", JobID: 4242, UID: 1000, SLUID: tc.request, Nodes: "n[1-2]"})
			}()
			var got found
			select {
			case got = <-rec:
			case <-time.After(10 * time.Second):
				t.Fatal("no collector was built")
			}
			if got.target.SLUID != tc.want {
				t.Errorf("collector target SLUID %q, want %q", got.target.SLUID, tc.want)
			}
			switch {
			case tc.want != "" && got.err != nil:
				t.Errorf("job not found by its SLUID: %v", got.err)
			case tc.want == "" && (!errors.Is(got.err, os.ErrNotExist) || !strings.Contains(got.err.Error(), "SLUID is needed")):
				t.Errorf("without a SLUID: err = %v, want not found, saying the SLUID is needed", got.err)
			}
			if tc.want != "" {
				ck, err := a.jobFiles(4242).loadCheckpoint()
				if err != nil || ck.SLUID != tc.want {
					t.Errorf("checkpoint SLUID: %v, %v", ck, err)
				}
				left := newNodeAgent(a, nodeFiles(a.Config.StateDir, "n1")).leftJobs()
				if len(left) != 1 || left[0].SLUID != tc.want || left[0].Nodes != "n[1-2]" {
					t.Errorf("a next agent resumes %+v, want job 4242 with SLUID %s and nodes n[1-2]", left, tc.want)
				}
			}
			slurm.set(jobmodel.StateCompleted)
			stop()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Which SLUID a watch uses: the request's, the checkpoint's, squeue's,
// the first that is one.
func TestWatchSLUIDChoice(t *testing.T) {
	w := newJobWatch(testAgent(t, &fakeSlurm{}, &memOutputs{}, noCgroup), nil, Request{Op: "start", JobID: 7})
	const a, b, c = "s2MNKT07NV0000", "s2MNKT07NV0001", "sBX9M87FEJGA00"
	for _, tc := range []struct{ request, checkpoint, squeue, want string }{
		{a, b, c, a},
		{"", b, c, b},
		{"", "", c, c},
		{"../x", b, c, b},
		{"", "s../../../x00", c, c},
		{"", "", "s2mnkt07nv0000", ""},
		{"", "", "", ""},
	} {
		if got := w.sluid(tc.request, tc.checkpoint, tc.squeue); got != tc.want {
			t.Errorf("sluid(%q, %q, %q) = %q, want %q", tc.request, tc.checkpoint, tc.squeue, got, tc.want)
		}
	}
}
