package slurminfo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func parseFile(t *testing.T, name string) []Job {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := Parse(b, time.UTC)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return jobs
}

func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02T15:04:05", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseCapturedRunningJob(t *testing.T) {
	jobs := parseFile(t, "running.txt")
	if len(jobs) != 1 {
		t.Fatalf("%d records, want 1", len(jobs))
	}
	j := jobs[0]
	want := Job{
		JobID: 4242, JobName: "plain", UserName: "root", UID: 0, GroupName: "root", GID: 0,
		Partition: "debug", JobState: "RUNNING", Reason: "None",
		SubmitTime: utc("2026-11-21T15:06:41"), StartTime: utc("2026-11-21T15:06:41"), EndTime: utc("2026-11-21T15:16:41"),
		TimeLimitSeconds: 600, NodeList: []string{"vm"}, NumNodes: 1, NumCPUs: 1, NumTasks: 1,
		MinMemoryNodeBytes: 300 << 20,
		TRES:               TRES{CPUs: 1, MemoryBytes: 300 << 20, Nodes: 1, Billing: 1},
	}
	if !reflect.DeepEqual(j, want) {
		t.Errorf("got  %+v\nwant %+v", j, want)
	}
}

func TestParseCapturedStates(t *testing.T) {
	for _, tc := range []struct {
		file           string
		state          string
		code, signal   int
		started, ended bool
	}{
		{"cancelled.txt", "CANCELLED", 0, 15, true, true},
		{"failed.txt", "FAILED", 3, 0, true, true},
		{"signal-killed.txt", "FAILED", 0, 9, true, true},
		{"out-of-memory.txt", "OUT_OF_MEMORY", 0, 125, true, true},
		{"pending-held.txt", "PENDING", 0, 0, false, false},
		{"array-task-cancelled.txt", "CANCELLED", 0, 15, true, true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			j := parseFile(t, tc.file)[0]
			if j.JobState != tc.state {
				t.Errorf("JobState %q, want %q", j.JobState, tc.state)
			}
			if tc.state != "OUT_OF_MEMORY" && (j.ExitCode != tc.code || j.ExitSignal != tc.signal) {
				t.Errorf("exit %d:%d, want %d:%d", j.ExitCode, j.ExitSignal, tc.code, tc.signal)
			}
			if j.StartTime.IsZero() == tc.started || j.EndTime.IsZero() == tc.ended {
				t.Errorf("start %v end %v; want started=%v ended=%v", j.StartTime, j.EndTime, tc.started, tc.ended)
			}
			if tc.state == "PENDING" && (len(j.NodeList) != 0 || !j.TimeLimitUnlimited) {
				t.Errorf("pending job: NodeList %q, unlimited %v", j.NodeList, j.TimeLimitUnlimited)
			}
		})
	}
}

func TestParseHostileAndOddNames(t *testing.T) {
	const hostile = `Name=Foo Account=x JobState=FAKE "quoted" ünïcode 😀 a=b =`
	for file, want := range map[string]struct{ name, state string }{
		"hostile-name-pending.txt":   {hostile, "PENDING"},
		"hostile-name-completed.txt": {hostile, "COMPLETED"},
		"newline-name-pending.txt":   {"new\nline", "PENDING"},
		"newline-name-completed.txt": {"new\nline", "COMPLETED"},
		"long-name-pending.txt":      {strings.Repeat("L", 300), "PENDING"},
	} {
		j := parseFile(t, file)
		if len(j) != 1 {
			t.Fatalf("%s: %d records, want 1", file, len(j))
		}
		if j[0].JobName != want.name || j[0].JobState != want.state || j[0].Account != "" || j[0].UserName != "root" {
			t.Errorf("%s: name %q state %q account %q user %q; want name %q state %q, no account, user root",
				file, j[0].JobName, j[0].JobState, j[0].Account, j[0].UserName, want.name, want.state)
		}
	}
}

func TestParseArrayHetAndGPU(t *testing.T) {
	all := parseFile(t, "array-all.txt")
	if len(all) != 2 || all[0].ArrayTaskID != "2-3" || all[1].ArrayTaskID != "1" || all[1].ArrayJobID != 4243 || all[1].JobID != 4252 {
		t.Errorf("array records: %+v", all)
	}
	het := parseFile(t, "hetjob-pending.txt")
	if len(het) != 2 || het[0].HetJobID != 4250 || het[1].HetJobOffset != 1 || het[1].JobName != "het" {
		t.Errorf("het records: %+v", het)
	}
	gpu := parseFile(t, "gpu-running.txt")[0]
	if gpu.TRES.GPUs != 1 || gpu.TRES.GRES["gpu"] != 1 || gpu.TresPerNode != "gres:gpu:1" {
		t.Errorf("gpu job: TRES %+v TresPerNode %q", gpu.TRES, gpu.TresPerNode)
	}
}

// TestNeverKeepsPathsOrCommands: Command, WorkDir, Std* and Comment values
// must not appear anywhere in the parsed job.
func TestNeverKeepsPathsOrCommands(t *testing.T) {
	rec := strings.Replace(mustRead(t, "running.txt"), "Command=(null) WorkDir=/tmp StdErr=/dev/null",
		"Command=/secret/cmd --token=abc WorkDir=/secret/dir Comment=secret comment StdErr=/secret/err", 1)
	jobs, err := Parse([]byte(rec), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%#v", jobs); strings.Contains(s, "secret") || strings.Contains(s, "/dev/null") {
		t.Errorf("parsed job keeps a command, path or comment: %s", s)
	}
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseGarbage(t *testing.T) {
	for in, want := range map[string]string{
		"":                           "no job record",
		"hello world":                "no job record",
		"garbage\nJobId=1 JobName=x": "unexpected text before",
		"JobId=1 JobName=x Foo=bar":  "UserId=<user>(<uid>)",
		"JobId=1 Foo JobName=x":      "malformed field",
		strings.Replace(mustRead(t, "running.txt"), "TimeLimit=00:10:00", "TimeLimit=ten", 1):             "TimeLimit",
		strings.Replace(mustRead(t, "running.txt"), "NodeList=vm", "NodeList=vm[3-1]", 1):                 "NodeList",
		strings.Replace(mustRead(t, "running.txt"), "StartTime=2026-11-21T15:06:41", "StartTime=soon", 1): "StartTime",
	} {
		_, err := Parse([]byte(in), time.UTC)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) error %v, want one containing %q", clip(in), err, want)
		}
	}
}

func TestExpandHostlist(t *testing.T) {
	for in, want := range map[string][]string{
		"vm":                 {"vm"},
		"node[01-03,7],gpu1": {"node01", "node02", "node03", "node7", "gpu1"},
		"rack[1-2]-n[1-2]":   {"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"},
		"a[8-10]":            {"a8", "a9", "a10"},
		"x[001-002],y[9]":    {"x001", "x002", "y9"},
	} {
		got, err := ExpandHostlist(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ExpandHostlist(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"n[1-", "n[a-b]", "n]", "n[5-1]", "n[0-99999999]"} {
		if _, err := ExpandHostlist(bad); err == nil {
			t.Errorf("ExpandHostlist(%q) gave no error", bad)
		}
	}
}

func TestParseTimeLimit(t *testing.T) {
	for in, want := range map[string]int64{
		"1-02:03:04": 93784, "00:10:00": 600, "30:00": 1800, "5": 300, "2-12": 216000, "1-00:30": 88200,
	} {
		got, unl, err := ParseTimeLimit(in)
		if err != nil || got != want || unl {
			t.Errorf("ParseTimeLimit(%q) = %d, %v, %v; want %d", in, got, unl, err, want)
		}
	}
	if _, unl, err := ParseTimeLimit("UNLIMITED"); !unl || err != nil {
		t.Errorf("UNLIMITED: %v %v", unl, err)
	}
	for _, bad := range []string{"1:2:3:4", "x", "-1", "1-a"} {
		if _, _, err := ParseTimeLimit(bad); err == nil {
			t.Errorf("ParseTimeLimit(%q) gave no error", bad)
		}
	}
}

func TestParseTRES(t *testing.T) {
	got, err := ParseTRES("cpu=2,mem=1.50G,node=1,billing=2,gres/gpu=1,gres/gpu:a100=1")
	want := TRES{CPUs: 2, MemoryBytes: 3 << 29, Nodes: 1, Billing: 2, GPUs: 1, GRES: map[string]int64{"gpu": 1, "gpu:a100": 1}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseTRES = %+v, %v; want %+v", got, err, want)
	}
	if _, err := ParseTRES("cpu=two"); err == nil || !strings.Contains(err.Error(), "cpu") {
		t.Errorf("ParseTRES(cpu=two) error %v", err)
	}
}

// TestLookup runs a stand-in scontrol that prints a captured record or the
// captured error of an unknown job.
func TestLookup(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "scontrol")
	abs, _ := filepath.Abs("testdata")
	body := fmt.Sprintf(`#!/bin/sh
case "$5" in
4243_1) cat %[1]s/array-all.txt ;;
4242) cat %[1]s/running.txt ;;
4300) cat %[1]s/forged-record.txt ;;
*) cat %[1]s/gone.stderr >&2; exit 1 ;;
esac
`, abs)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := Options{Scontrol: script, Location: time.UTC}
	ctx := context.Background()
	j, err := Lookup(ctx, "4242", opts)
	if err != nil || j.JobName != "plain" {
		t.Errorf("Lookup(4242) = %+v, %v", j, err)
	}
	j, err = Lookup(ctx, "4243_1", opts)
	if err != nil || j.JobID != 4252 {
		t.Errorf("Lookup(4243_1) = %+v, %v; want job 4252", j, err)
	}
	if j, err := Lookup(ctx, "4300", opts); !errors.Is(err, ErrAmbiguous) {
		t.Errorf("Lookup of output with a forged record = %+v, %v; want ErrAmbiguous", j, err)
	}
	if _, err := Lookup(ctx, "999999", opts); !errors.Is(err, ErrJobNotFound) {
		t.Errorf("Lookup(unknown) error %v, want ErrJobNotFound", err)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		jobs, err := Parse(b, time.UTC)
		if err == nil && len(jobs) == 0 {
			t.Errorf("no error and no jobs for %q", b)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	in, _ := os.ReadFile("testdata/gpu-running.txt")
	for b.Loop() {
		if _, err := Parse(in, time.UTC); err != nil {
			b.Fatal(err)
		}
	}
}
