package slurm

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pollLine builds one line of the narrow answer as squeue prints it
// (print.c: each field, then its suffix, the separator).
func pollLine(fields ...string) string {
	return strings.Join(fields, pollSep) + pollSep + "\n"
}

func TestNarrowAnswerReadsEveryKindOfRecord(t *testing.T) {
	out := pollLine("101", "101", "RUNNING", "debug", "4", "1", "4", "cpu=4,mem=400M,node=1,billing=4,gres/gpu=2,gres/gpu:a100=2", "N/A", "gres/gpu:a100:2", "N/A", "N/A", "1764355200", "csnode1", "None") +
		pollLine("102", "102_[1-4%2]", "PENDING", "debug,multi", "1", "1", "1", "cpu=1,mem=100M,node=1,billing=1", "N/A", "N/A", "N/A", "N/A", "N/A", "", "Priority") +
		pollLine("107", "102_5", "PENDING", "debug", "1", "1", "1", "cpu=1,mem=100M,node=1,billing=1", "N/A", "N/A", "N/A", "N/A", "N/A", "", "JobHeldAdmin") +
		pollLine("110", "110+1", "PENDING", "multi", "2", "1", "2", "cpu=2,mem=200M,node=1,billing=2,gres/gpu=1", "gres/gpu:1", "N/A", "N/A", "N/A", "N/A", "(null)", "ReqNodeNotAvail, UnavailableNodes:csnode3") +
		pollLine("111", "111", "CONFIGURING", "debug", "1", "1", "1", "cpu=1,mem=100M,node=1,billing=1", "N/A", "N/A", "N/A", "N/A", "1764355300", "csnode2", "None")
	a, err := DecodeSqueueText([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Jobs) != 5 {
		t.Fatalf("%d records, want 5", len(a.Jobs))
	}
	run, arr, task, het, cfg := a.Jobs[0], a.Jobs[1], a.Jobs[2], a.Jobs[3], a.Jobs[4]
	if run.JobID != 101 || run.ArrayJobID != 0 || run.JobState != "RUNNING" || run.CPUs != 4 || run.Nodes != "csnode1" ||
		run.StartTime != 1764355200 || !strings.Contains(run.TRESAlloc, "gres/gpu=2") || run.TRESReq != "" || run.TRESPerNode != "gres/gpu:a100:2" {
		t.Errorf("running job: %+v", run)
	}
	if arr.ArrayJobID != 102 || arr.ArrayTaskID != nil || arr.ArrayTaskString != "1-4%2" || arr.JobCount() != 4 ||
		arr.Partition != "debug,multi" || arr.TRESReq == "" || arr.StartTime != 0 || arr.Nodes != "" || arr.StateReason != "Priority" {
		t.Errorf("pending array: %+v (counts %d)", arr, arr.JobCount())
	}
	if task.ArrayJobID != 102 || task.ArrayTaskID == nil || *task.ArrayTaskID != 5 || task.JobCount() != 1 || task.StateReason != "JobHeldAdmin" {
		t.Errorf("array task: %+v", task)
	}
	if het.HetJobID != 110 || het.HetJobOffset != 1 || het.JobID != 110 || het.TRESPerJob != "gres/gpu:1" || het.Nodes != "" || het.StateReason != "ReqNodeNotAvail" {
		t.Errorf("het component: %+v", het)
	}
	if cfg.JobState != "RUNNING,CONFIGURING" || baseState(cfg.JobState) != "RUNNING" {
		t.Errorf("a configuring job's state %q, want it read as RUNNING,CONFIGURING", cfg.JobState)
	}
}

// A sparse array's expression in full (SLURM_BITSTR_LEN=0) counts every
// task; squeue's default cut ("1,3,5,...") would count one.
func TestNarrowAnswerCountsASparseArraysTasks(t *testing.T) {
	var idx []string
	for i := 1; i < 200; i += 2 {
		idx = append(idx, strconv.Itoa(i))
	}
	expr := strings.Join(idx, ",")
	a, err := DecodeSqueueText([]byte(pollLine("5", "5_["+expr+"]", "PENDING", "p", "1", "1", "1", "cpu=1", "N/A", "N/A", "N/A", "N/A", "N/A", "", "Priority")))
	if err != nil {
		t.Fatal(err)
	}
	if n := a.Jobs[0].JobCount(); n != 100 {
		t.Errorf("sparse array of 100 tasks counts %d", n)
	}
	if !slices.Contains(PollEnv, "SLURM_BITSTR_LEN=0") {
		t.Errorf("the narrow answer's environment %v does not ask for whole task expressions", PollEnv)
	}
}

// Whatever a line holds that is not a whole record refuses the whole
// answer, naming the line: the collector keeps its last good state.
func TestNarrowAnswerRefusesWhatIsNotAWholeRecord(t *testing.T) {
	good := pollLine("101", "101", "RUNNING", "debug", "4", "1", "4", "cpu=4", "N/A", "N/A", "N/A", "N/A", "1764355200", "n1", "None")
	for name, c := range map[string]struct{ out, want string }{
		"a cut last line":              {good + good[:len(good)/2], "line 2: 8 fields, want 15"},
		"a separator in a reason":      {good + strings.TrimSuffix(good, pollSep+"\n") + pollSep + "x" + pollSep + "\n", "line 2: 16 fields"},
		"a line break in a reason":     {good + strings.Replace(good, "None", "a\nb", 1), "line 2:"},
		"another field list":           {"JOBID STATE\n", "line 1: 0 fields, want 15"},
		"a job id that is not one":     {strings.Replace(good, "101"+pollSep+"101", "x"+pollSep+"101", 1), `JobId "x"`},
		"an array id of another shape": {strings.Replace(good, pollSep+"101"+pollSep, pollSep+"101_[]"+pollSep, 1), "JobArrayId"},
		"a count that is not one":      {strings.Replace(good, pollSep+"4"+pollSep+"1", pollSep+"four"+pollSep+"1", 1), "NumCPUs"},
		"a start time in local time":   {strings.Replace(good, "1764355200", "2026-11-28T20:00:00", 1), "StartTime"},
	} {
		_, err := DecodeSqueueText([]byte(c.out))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, c.want)
		}
	}
	if a, err := DecodeSqueueText(nil); err != nil || len(a.Jobs) != 0 {
		t.Errorf("no jobs: %v %v", a, err)
	}
}

func TestPollFormatAsksForEveryFieldUncutAndSeparated(t *testing.T) {
	f := PollFormat()
	if n := strings.Count(f, ":0"+pollSep); n != len(PollFields) {
		t.Errorf("PollFormat %q: %d fields of width 0 with the separator, want %d", f, n, len(PollFields))
	}
	if PollFields[len(PollFields)-1] != "Reason" {
		t.Errorf("the reason (which may hold a description) must come last: %v", PollFields)
	}
	for _, user := range []string{"Name", "Comment", "Command", "WorkDir", "UserName", "StdOut"} {
		if slices.Contains(PollFields, user) {
			t.Errorf("PollFields asks for %s, which a user writes", user)
		}
	}
}

func FuzzDecodeSqueueText(f *testing.F) {
	f.Add([]byte(pollLine("101", "102_[1-4%2]", "PENDING", "debug", "1", "1", "1", "cpu=1", "N/A", "N/A", "N/A", "N/A", "N/A", "", "Priority")))
	f.Add([]byte(pollLine("110", "110+1", "CONFIGURING", "multi", "2", "1", "2", "cpu=2", "gres/gpu:1", "N/A", "N/A", "N/A", "17", "n[1-2]", "None")))
	if b, err := os.ReadFile("testdata/squeue-26.05-poll.txt"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeSqueueText(b)
		if err != nil {
			return
		}
		for _, j := range a.Jobs {
			if j.JobID == 0 {
				t.Fatalf("a record without a job id was read: %+v", j)
			}
			if n := j.JobCount(); n < 1 || n > maxArrayTasks {
				t.Fatalf("a record counts %d jobs", n)
			}
		}
	})
}
