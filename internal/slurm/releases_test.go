package slurm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The answers of every supported release, captured from real clusters
// (testdata/README.md says how), read field by field: every record of
// every fixture is complete (nothing Missing), and each job reads the same
// whichever data parser wrote it.

// wantJob is what a captured job must read as.
type wantJob struct {
	state        string
	code, signal int
	array        uint32
	task         string
	limit        int64
	unlimited    bool
	gpus         int
}

func TestEveryReleaseFixtureReadsWhole(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/squeue-*.json")
	if err != nil || len(files) < 6 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ans, err := DecodeSqueue(b)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if ans.Meta.Release == "" || ans.Meta.DataParser == "" {
			t.Errorf("%s: meta %+v, want release and data parser", f, ans.Meta)
		}
		jobs, err := ParseSqueueJSON(b)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(jobs) != len(ans.Jobs) || len(jobs) == 0 {
			t.Errorf("%s: %d jobs of %d records", f, len(jobs), len(ans.Jobs))
		}
		for id, j := range jobs {
			if len(j.Missing) > 0 || j.JobState == "" || j.SubmitTime.IsZero() || j.UserName == "" || j.UID < 0 {
				t.Errorf("%s job %d: missing %v, state %q, submit %v, user %q/%d", f, id, j.Missing, j.JobState, j.SubmitTime, j.UserName, j.UID)
			}
			// 26.05 gives every job its SLUID, at step_id.sluid from
			// v0.0.44 on.
			if sluidExpected(ans.Meta) && !validSLUIDForTest(j.SLUID) {
				t.Errorf("%s job %d: SLUID %q", f, id, j.SLUID)
			}
		}
	}
}

func sluidExpected(m Meta) bool {
	return strings.HasPrefix(m.Release, "26.") && m.DataParser >= "data_parser/v0.0.44"
}

func validSLUIDForTest(s string) bool {
	return len(s) == 14 && s[0] == 's' && strings.Trim(s[1:], "0123456789ABCDEFGHJKMNPQRSTVWXYZ") == ""
}

// The same jobs, whichever data parser of 26.05 wrote them, and 22.05's
// corresponding jobs, read alike.
func TestReleasesReadAlike(t *testing.T) {
	t.Parallel()
	ended26 := map[uint32]wantJob{
		563642: {"FAILED", 3, 0, 0, "", 0, true, 0},          // exit 3
		563643: {"FAILED", 0, 9, 0, "", 0, true, 0},          // kill -9 $$
		563636: {"CANCELLED", 0, 15, 0, "", 0, true, 2},      // scancel; GPUs from the request
		563641: {"COMPLETED", 0, 0, 0, "", 300, false, 0},    // --time=5
		563645: {"COMPLETED", 0, 0, 563644, "3", 0, true, 0}, // array task 3
		563644: {"COMPLETED", 0, 0, 563644, "4", 0, true, 0}, // array task 4 (the array's own id)
	}
	for _, tc := range []struct {
		file string
		want map[uint32]wantJob
	}{
		{"squeue-22.05-ended.json", map[uint32]wantJob{
			754242: {"FAILED", 3, 0, 0, "", 180, false, 0},
			754243: {"FAILED", 0, 9, 0, "", 0, true, 0},
			754236: {"CANCELLED", 0, 15, 0, "", 0, true, 2},
			754241: {"COMPLETED", 0, 0, 0, "", 300, false, 1}, // --gres=gpu:1
			754245: {"COMPLETED", 0, 0, 754244, "3", 0, true, 0},
		}},
		{"squeue-26.05-ended.json", ended26},
		{"squeue-26.05-v0.0.42-ended.json", ended26},
		{"squeue-26.05-running.json", map[uint32]wantJob{
			563636: {"RUNNING", 0, 0, 0, "", 0, true, 2},
			563638: {"RUNNING", 0, 0, 563637, "1", 0, true, 0},
			563637: {"PENDING", 0, 0, 563637, "", 0, true, 0}, // the pending rest of the array
		}},
	} {
		b, err := os.ReadFile("testdata/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := ParseSqueueJSON(b)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		for id, w := range tc.want {
			j := jobs[id]
			if j == nil {
				t.Errorf("%s: job %d not found", tc.file, id)
				continue
			}
			got := wantJob{j.JobState, j.ExitCode, j.ExitSignal, j.ArrayJobID, j.ArrayTaskID, j.TimeLimitSeconds, j.TimeLimitUnlimited, j.TRES.GPUs}
			if got != w {
				t.Errorf("%s job %d:\n got %+v\nwant %+v", tc.file, id, got, w)
			}
		}
	}
	// The forged name of 26.05's capture forges nothing either.
	b, _ := os.ReadFile("testdata/squeue-26.05-running.json")
	jobs, _ := ParseSqueueJSON(b)
	j := jobs[563636]
	if j == nil || !strings.HasPrefix(j.JobName, "x UserId=root(0)") || j.Account != "" || j.Partition != "debug" ||
		!slices.Equal(j.NodeList, []string{"vm"}) || j.TRES.CPUs != 1 || j.TRES.MemoryBytes != 100<<20 || j.ClusterName != "jobsight-dev" ||
		j.MinMemoryNodeBytes != 100<<20 || j.TresPerNode != "gres/gpu:2" && j.TresPerNode != "gres:gpu:2" || j.SLUID != "s4Q1M8AT9N7Q00" {
		t.Errorf("26.05 forged-name job: %+v", j)
	}
	if j != nil && j.Source != "Slurm 26.05.3, data_parser/v0.0.45" {
		t.Errorf("source %q", j.Source)
	}
}

func TestSinfoEveryRelease(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/sinfo-*.json")
	if len(files) < 4 {
		t.Fatalf("sinfo fixtures: %v", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		a, err := DecodeSinfo(b)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(a.Nodes) != 1 || a.Grouped {
			t.Errorf("%s: nodes %+v grouped %v", f, a.Nodes, a.Grouped)
			continue
		}
		n := a.Nodes[0]
		if n.Name != "vm" || n.CPUs != 2 || n.RealMemory <= 0 || n.Gres != "gpu:8" || !slices.Equal(n.Partitions, []string{"debug"}) || len(n.Unknown) > 0 {
			t.Errorf("%s: %+v", f, n)
		}
		if strings.Contains(f, "drain") {
			if n.Reason != "disk replaced Account=x" || !slices.Contains(n.StateFlags, "DRAIN") {
				t.Errorf("%s: drained node %+v", f, n)
			}
		}
	}
	// Without -N, a v0.0.40+ record may hold several nodes: their figures
	// cannot be split and are named, not shared out.
	a, err := DecodeSinfo([]byte(`{"sinfo":[{"nodes":{"nodes":["a","b"]},"node":{"state":["IDLE"]},"cpus":{"total":8,"allocated":0},"partition":{"name":"p"}}]}`))
	if err != nil || !a.Grouped || len(a.Nodes) != 2 || a.Nodes[0].CPUs != 0 || !slices.Contains(a.Nodes[1].Unknown, "cpus") {
		t.Errorf("grouped: %+v %v", a, err)
	}
}

func FuzzDecodeSinfo(f *testing.F) {
	files, _ := filepath.Glob("testdata/sinfo-*.json")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"nodes":[{"name":"n","state":["IDLE","DRAIN"],"cpus":{"set":true,"number":4}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeSinfo(b)
		if err != nil {
			return
		}
		for _, n := range a.Nodes {
			if n.CPUs < 0 && !slices.Contains(n.Unknown, "cpus") && n.CPUs != 0 {
				_ = n // negative counts are the collector's to clamp; decoding must only not crash
			}
		}
	})
}

// Every release's "ended" capture holds the same jobs
// (scripts/capture-slurm-fixtures.sh): whichever release and data parser
// wrote them, they read as the same exit code, signal, time limit, GPUs
// and array tasks.
func TestEndedJobsOfEveryRelease(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/squeue-*-ended.json")
	if len(files) < 10 {
		t.Fatalf("ended captures: %v", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := ParseSqueueJSON(b)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		var exit3, kill9, limited, forged, tasks int
		for _, j := range jobs {
			switch {
			case j.JobState == "FAILED" && j.ExitCode == 3 && j.ExitSignal == 0:
				exit3++
			case j.JobState == "FAILED" && j.ExitSignal == 9:
				kill9++
			case j.JobState == "COMPLETED" && j.TimeLimitSeconds == 300 && !j.TimeLimitUnlimited:
				limited++
			case j.JobState == "CANCELLED" && strings.HasPrefix(j.JobName, "x UserId=root(0)") && j.ExitSignal == 15 && j.TRES.GPUs == 2:
				forged++
			case j.JobState == "COMPLETED" && j.ArrayJobID != 0 && (j.ArrayTaskID == "3" || j.ArrayTaskID == "4"):
				tasks++
			}
		}
		if exit3 != 1 || kill9 != 1 || limited != 1 || forged != 1 || tasks != 2 {
			t.Errorf("%s: exit 3: %d, signal 9: %d, --time=5: %d, forged name cancelled: %d, array tasks 3 and 4: %d; want 1, 1, 1, 1, 2",
				f, exit3, kill9, limited, forged, tasks)
		}
	}
}
