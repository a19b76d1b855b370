package slurm

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func loadSqueue(t testing.TB, name string) map[uint32]*Job {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := ParseSqueueJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// The forged name of the issue: every field it imitates keeps its real
// value, the name stays a name.
func TestSqueueJSONForgedNameForgesNothing(t *testing.T) {
	t.Parallel()
	j := loadSqueue(t, "squeue-22.05-running.json")[754236]
	if j == nil {
		t.Fatal("job 754236 not found")
	}
	if !strings.HasPrefix(j.JobName, "x UserId=root(0)") || !strings.Contains(j.JobName, "NodeList=othernode TRES=cpu=1,mem=1M") {
		t.Errorf("name %q", j.JobName)
	}
	if j.Account != "" || j.Partition != "debug" || j.JobState != "RUNNING" || !slices.Equal(j.NodeList, []string{"vm"}) ||
		j.UID != 0 || j.UserName != "root" || j.TRES.CPUs != 1 || j.TRES.MemoryBytes != 100<<20 || j.TRES.GPUs != 2 ||
		j.SubmitTime.Unix() != 1795451367 || j.ClusterName != "jobsight-dev" || j.ArrayJobID != 0 {
		t.Errorf("forged fields leaked: %+v", j)
	}
	if j.MinMemoryNodeBytes != 100<<20 || j.NumCPUs != 1 || j.TresPerNode != "gres:gpu:2" {
		t.Errorf("request: %+v", j)
	}
}

func TestSqueueJSONEndedJobs(t *testing.T) {
	t.Parallel()
	jobs := loadSqueue(t, "squeue-22.05-ended.json")
	for _, tc := range []struct {
		id           uint32
		state        string
		code, signal int
		array        uint32
		task         string
		limit        int64
		unlimited    bool
	}{
		{754242, "FAILED", 3, 0, 0, "", 180, false},       // exit 3
		{754243, "FAILED", 0, 9, 0, "", 0, true},          // kill -9 $$
		{754236, "CANCELLED", 0, 15, 0, "", 0, true},      // scancel
		{754241, "COMPLETED", 0, 0, 0, "", 300, false},    // --time=5
		{754245, "COMPLETED", 0, 0, 754244, "3", 0, true}, // array task 3
		{754244, "COMPLETED", 0, 0, 754244, "4", 0, true}, // array task 4 (the array's own id)
	} {
		j := jobs[tc.id]
		if j == nil {
			t.Errorf("job %d not found", tc.id)
			continue
		}
		if j.JobState != tc.state || j.ExitCode != tc.code || j.ExitSignal != tc.signal || j.ArrayJobID != tc.array ||
			j.ArrayTaskID != tc.task || j.TimeLimitSeconds != tc.limit || j.TimeLimitUnlimited != tc.unlimited {
			t.Errorf("job %d: state %s exit %d signal %d array %d/%q limit %d unlimited %v", tc.id, j.JobState, j.ExitCode,
				j.ExitSignal, j.ArrayJobID, j.ArrayTaskID, j.TimeLimitSeconds, j.TimeLimitUnlimited)
		}
		if j.EndTime.IsZero() || j.EndTime.Before(j.StartTime) || j.EndTime.Location() != time.UTC {
			t.Errorf("job %d: start %v end %v", tc.id, j.StartTime, j.EndTime)
		}
	}
	// An ended job has no allocated gres left: its GPUs come from the request.
	if j := jobs[754236]; j == nil || j.TRES.GPUs != 2 {
		t.Errorf("ended GPU job: %+v", j)
	}
	for spec, want := range map[string]int{"gres:gpu:4": 4, "gres:gpu:a100:2,gres:shard:1": 2, "gres/gpu=3": 3, "": 0, "gres:mps:100": 0} {
		if got, err := gpusIn(spec); err != nil || got != want {
			t.Errorf("gpusIn(%q) = %d, %v; want %d", spec, got, err, want)
		}
	}
	if _, err := gpusIn("gres:gpu:x"); err == nil {
		t.Error("gpusIn accepted a non-number")
	}
	// Heterogeneous components keep their het ids.
	if j := jobs[754240]; j == nil || j.HetJobID != 754239 || j.HetJobOffset != 1 {
		t.Errorf("het component: %+v", j)
	}
}

func TestSqueueJSONBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`not json`, "squeue --json"},
		{`{"meta":{}}`, `no "jobs" list`},
		{`{"errors":[{"error":"Unable to contact slurm controller"}]}`, "Unable to contact"},
		{`{"jobs":[{"job_id":5},{"job_id":5}]}`, "twice"},
		{`{"jobs":[17]}`, "job record"},
	} {
		_, err := ParseSqueueJSON([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.want)
		}
	}
	_, err := ParseSqueueJSON([]byte(`{"jobs":[{"job_id":5},{"job_id":5}]}`))
	if !errors.Is(err, ErrAmbiguous) {
		t.Errorf("duplicate record: %v, want ErrAmbiguous", err)
	}
}

// A value that cannot be read costs that field only, named in Missing: the
// rest of the record and the other records stand, and nothing is a zero
// standing in for a figure.
func TestSqueueJSONBadFieldCostsOnlyThatField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field, rec string
		check      func(*Job) bool
	}{
		{"user_id", `"user_id":-4`, func(j *Job) bool { return j.UID == -1 }},
		{"nodes", `"nodes":"n[3-1]"`, func(j *Job) bool { return j.NodeList == nil }},
		{"tres_alloc_str", `"tres_alloc_str":"cpu=x"`, func(j *Job) bool { return j.TRES.CPUs == 0 }},
		{"time_limit", `"time_limit":{"set":true,"number":"sixty"}`, func(j *Job) bool { return j.TimeLimitSeconds == 0 && !j.TimeLimitUnlimited }},
		{"time_limit", `"time_limit":[60]`, func(j *Job) bool { return j.TimeLimitSeconds == 0 && !j.TimeLimitUnlimited }},
		{"job_state", `"job_state":{"current":["RUNNING"]}`, func(j *Job) bool { return j.JobState == "" }},
		{"exit_code", `"exit_code":{"weird":1}`, func(j *Job) bool { return j.ExitCode == 0 && j.ExitSignal == 0 }},
		{"memory_per_node", `"memory_per_node":"lots"`, func(j *Job) bool { return j.MinMemoryNodeBytes == 0 }},
		{"step_id.sluid", `"step_id":{"sluid":7}`, func(j *Job) bool { return j.SLUID == "" }},
		// Neither exited nor signalled: return_code is the raw status, no exit code.
		{"exit_code", `"exit_code":{"status":["INVALID"],"return_code":{"set":true,"number":4991},"signal":{"id":{"set":false}}}`,
			func(j *Job) bool { return j.ExitCode == 0 && j.ExitSignal == 0 }},
		{"exit_code", `"exit_code":{"status":["SIGNALED"],"signal":{"id":{"set":true,"number":128}}}`, func(j *Job) bool { return j.ExitSignal == 0 }},
		{"exit_code", `"exit_code":{"status":["ERROR"],"return_code":{"set":true,"number":256}}`, func(j *Job) bool { return j.ExitCode == 0 }},
		{"exit_code", `"exit_code":70000`, func(j *Job) bool { return j.ExitCode == 0 && j.ExitSignal == 0 }},
		{"node_count", `"node_count":-3`, func(j *Job) bool { return j.NumNodes == 0 }},
	} {
		in := `{"meta":{"plugin":{"data_parser":"data_parser/v0.0.99"},"slurm":{"release":"27.05.0"}},"jobs":[` +
			`{"job_id":5,"user_name":"ann","account":"physics",` + tc.rec + `},{"job_id":6,"user_name":"bob"}]}`
		jobs, err := ParseSqueueJSON([]byte(in))
		if err != nil {
			t.Errorf("%s: %v", tc.rec, err)
			continue
		}
		j := jobs[5]
		if j == nil || !slices.Equal(j.Missing, []string{tc.field}) || !tc.check(j) || j.UserName != "ann" || j.Account != "physics" {
			t.Errorf("%s: %+v, want only %s missing", tc.rec, j, tc.field)
			continue
		}
		if j.Source != "Slurm 27.05.0, data_parser/v0.0.99" {
			t.Errorf("source %q", j.Source)
		}
		if o := jobs[6]; o == nil || o.UserName != "bob" || o.Missing != nil {
			t.Errorf("%s: the other record: %+v", tc.rec, o)
		}
	}
	// v0.0.38's NO_VAL: not set, not a figure (a pending job's exit code
	// and het offset; a pending job's null time limit is not yet set, a
	// running job's is unlimited).
	jobs, err := ParseSqueueJSON([]byte(`{"jobs":[{"job_id":5,"job_state":"PENDING","exit_code":4294967294,"het_job_offset":4294967294,"time_limit":null},` +
		`{"job_id":6,"job_state":"RUNNING","time_limit":null}]}`))
	if err != nil || jobs[5] == nil || jobs[5].ExitSignal != 0 || jobs[5].ExitCode != 0 || jobs[5].HetJobOffset != 0 ||
		jobs[5].TimeLimitUnlimited || jobs[5].Missing != nil || jobs[6] == nil || !jobs[6].TimeLimitUnlimited {
		t.Errorf("NO_VAL: %+v %+v %v", jobs[5], jobs[6], err)
	}
	// A record whose job id cannot be read cannot be told apart: skipped.
	jobs, err = ParseSqueueJSON([]byte(`{"jobs":[{"job_id":0},{"job_id":"x"},{"job_id":7}]}`))
	if err != nil || len(jobs) != 1 || jobs[7] == nil {
		t.Errorf("records without a job id: %v, %v", jobs, err)
	}
}

// The tasks a pending array record stands for (the cluster-state
// collector's pending demand).
func TestCountArrayTasks(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"1-4": 4, "3": 1, "1,4,7-9": 5, "1-9:2": 5, "1-105:4": 27, "0-99%5": 100, "0-4294967294": maxArrayTasks} {
		if got, err := countArrayTasks(in); err != nil || got != want {
			t.Errorf("countArrayTasks(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a-b", "5-1", "1-9:0"} {
		if _, err := countArrayTasks(in); err == nil {
			t.Errorf("countArrayTasks(%q): no error", in)
		}
	}
}

func FuzzParseSqueueJSON(f *testing.F) {
	files, _ := filepath.Glob("testdata/squeue-*.json")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"jobs":[{"job_id":1,"exit_code":-1,"time_limit":-5,"memory_per_node":-1}]}`))
	f.Add([]byte(`{"jobs":[{"job_id":{"set":true,"number":2},"exit_code":{"status":["SIGNALED"],"signal":{"id":{"set":true,"number":9}}},"time_limit":{"infinite":true},"step_id":{"sluid":"s0"}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		jobs, err := ParseSqueueJSON(b)
		if err != nil {
			return
		}
		for id, j := range jobs {
			if j.JobID != id || j.JobID == 0 || j.TimeLimitSeconds < 0 || j.MinMemoryNodeBytes < 0 || j.ExitCode < 0 {
				t.Fatalf("implausible job %+v", j)
			}
		}
	})
}
