package collector

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The trees in this file, and testdata/cgroupv2-slurm26-sluid, are built
// from Slurm 26.05's and the kernel's documented layouts (Slurm's
// cgroup_p_step_create: <slice>/[<node>_]slurmstepd.scope/<SLUID>, or
// job_<id> with CgroupJobIdPaths=yes, then step_<x>/{slurm,user/task_<n>};
// the kernel's Documentation/admin-guide/cgroup-v2.rst file formats), not
// captured from a real v2 host: the project's machines have no v2 cpu and
// memory controllers.

const (
	fixtureSLUID = "s2MNKT07NV0000" // the fixture job's (job 4242)
	otherSLUID   = "s2MNKT07NV0001" // the job after it, beside it in the tree
)

func TestValidSLUID(t *testing.T) {
	for _, s := range []string{fixtureSLUID, otherSLUID, "sBX9M87FEJGA00", "s0000000000000", "sFZZZZZZZZZZZZ"} {
		if !ValidSLUID(s) {
			t.Errorf("ValidSLUID(%q) = false", s)
		}
	}
	for _, s := range []string{
		// length; prefix; lower case (Slurm prints upper case)
		"", "s", "sBX9M87FEJGA0", "sBX9M87FEJGA000",
		"SBX9M87FEJGA00", "xBX9M87FEJGA00", "BX9M87FEJGA00s",
		"sbx9m87fejga00",
		// not in Crockford's alphabet; more than 64 bits
		"sBX9M87FEJGAI0", "sBX9M87FEJGAL0", "sBX9M87FEJGAO0", "sBX9M87FEJGAU0",
		"sGX9M87FEJGA00", "sZZZZZZZZZZZZZ",
		// path and other characters
		"s../../x000000", "sBX9M87FEJGA0/", "sBX9M87FEJGA0\n", "sBX9M87FEJ A00",
	} {
		if ValidSLUID(s) {
			t.Errorf("ValidSLUID(%q) = true", s)
		}
	}
}

func TestParseSlurmPathSLUID(t *testing.T) {
	for _, tc := range []struct {
		rel  string
		want SlurmPath
		ok   bool
	}{
		{"system.slice/slurmstepd.scope/" + fixtureSLUID, SlurmPath{SLUID: fixtureSLUID}, true},
		{"system.slice/slurmstepd.scope/" + fixtureSLUID + "/step_batch/user/task_0", SlurmPath{SLUID: fixtureSLUID, Step: "batch", Task: "0"}, true},
		{"system.slice/slurmstepd.scope/" + fixtureSLUID + "/step_extern/user/task_special", SlurmPath{SLUID: fixtureSLUID, Step: "extern", Task: "special"}, true},
		{"system.slice/slurmstepd.scope/" + fixtureSLUID + "/step_0/slurm", SlurmPath{SLUID: fixtureSLUID, Step: "0", Stepd: true}, true},
		{"system.slice/slurmstepd.scope/" + fixtureSLUID + "/step_interactive/user", SlurmPath{SLUID: fixtureSLUID, Step: "interactive"}, true},
		{"system.slice/node02_slurmstepd.scope/" + fixtureSLUID + "/step_1", SlurmPath{Host: "node02", SLUID: fixtureSLUID, Step: "1"}, true},
		{"slurm.slice/sub.slice/slurmstepd.scope/sBX9M87FEJGA00", SlurmPath{SLUID: "sBX9M87FEJGA00"}, true},
		// CgroupJobIdPaths=yes on 26.05: as before.
		{"system.slice/slurmstepd.scope/job_42/step_0/user/task_3", SlurmPath{JobID: 42, Step: "0", Task: "3"}, true},
		// Not SLUIDs: nothing of these is a job's directory.
		{"system.slice/slurmstepd.scope/sbx9m87fejga00", SlurmPath{}, false},
		{"system.slice/slurmstepd.scope/sBX9M87FEJGA0", SlurmPath{}, false},
		{"system.slice/slurmstepd.scope/sBX9M87FEJGA000", SlurmPath{}, false},
		{"system.slice/slurmstepd.scope/sBX9M87FEJGAU0", SlurmPath{}, false},
		{"system.slice/slurmstepd.scope/sBX9M87FEJGAO0/step_0", SlurmPath{}, false},
		{"system.slice/slurmstepd.scope/sGX9M87FEJGA00", SlurmPath{}, false},
		{"system.slice/slurmstepd.scope/SBX9M87FEJGA00", SlurmPath{}, false},
		{"system.slice/slurmstepd.scope/job_sBX9M87FEJGA00", SlurmPath{}, false},
		{"system.slice/slurmstepd.scope/job_42" + fixtureSLUID, SlurmPath{}, false},
		{"system.slice/slurmstepd.scope/" + fixtureSLUID + "/step_0/other", SlurmPath{}, false},
		{"system.slice/slurmstepd.scope/system", SlurmPath{}, false},
	} {
		got, ok := ParseSlurmPath(VersionV2, tc.rel)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseSlurmPath(v2, %q) = %+v, %v; want %+v, %v", tc.rel, got, ok, tc.want, tc.ok)
		}
	}
	// v1 never names jobs by SLUID.
	if _, ok := ParseSlurmPath(VersionV1, "slurm/uid_1000/"+fixtureSLUID); ok {
		t.Error("v1 path with a SLUID accepted")
	}
}

func FuzzParseSlurmPath(f *testing.F) {
	for _, s := range []string{
		"system.slice/slurmstepd.scope/" + fixtureSLUID + "/step_0/user/task_3",
		"system.slice/n1_slurmstepd.scope/job_42/step_extern/slurm",
		"slurm_n1/uid_1000/job_42/step_batch/task_0",
		"system.slice/slurmstepd.scope/sBX9M87FEJGAU0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		for _, v := range []Version{VersionV1, VersionV2, VersionHybrid} {
			p, ok := ParseSlurmPath(v, rel)
			if !ok {
				if p != (SlurmPath{}) {
					t.Fatalf("%s %q: not a Slurm path but %+v", v, rel, p)
				}
				continue
			}
			if p.SLUID != "" && (v != VersionV2 || !ValidSLUID(p.SLUID) || p.JobID != 0) {
				t.Fatalf("%s %q: SLUID %q with job id %d", v, rel, p.SLUID, p.JobID)
			}
			for _, s := range []string{p.Host, p.SLUID, p.Step, p.Task} {
				if strings.Contains(s, "/") {
					t.Fatalf("%s %q: a field spans directories: %+v", v, rel, p)
				}
			}
			if p.Task != "" && p.Step == "" || p.Stepd && (v != VersionV2 || p.Task != "") {
				t.Fatalf("%s %q: inconsistent %+v", v, rel, p)
			}
		}
	})
}

func TestFindJobDirsV2SLUID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		dirs []string
		job  Target
		want string // "" with err
		err  error
		msg  string // in the error
	}{
		// (a) Slurm 26.05's default: named by SLUID.
		{"sluid", []string{"system.slice/slurmstepd.scope/" + fixtureSLUID + "/step_0/user/task_0", "system.slice/slurmstepd.scope/" + otherSLUID},
			Target{JobID: 7, SLUID: fixtureSLUID}, "system.slice/slurmstepd.scope/" + fixtureSLUID, nil, ""},
		{"sluid, nested slice", []string{"slurm.slice/sub.slice/slurmstepd.scope/" + fixtureSLUID},
			Target{JobID: 7, SLUID: fixtureSLUID}, "slurm.slice/sub.slice/slurmstepd.scope/" + fixtureSLUID, nil, ""},
		// The SLUID unknown on a node that names jobs by SLUID: not found,
		// and the error says why; the other jobs' directories are not
		// candidates.
		{"sluid unknown", []string{"system.slice/slurmstepd.scope/" + fixtureSLUID},
			Target{JobID: 7}, "", os.ErrNotExist, "the job's SLUID is needed"},
		{"another job's sluid", []string{"system.slice/slurmstepd.scope/" + otherSLUID},
			Target{JobID: 7, SLUID: fixtureSLUID}, "", os.ErrNotExist, fixtureSLUID},
		// A job_<id> left by a job before an upgrade loses to the SLUID.
		{"sluid over a leftover job_<id>", []string{"system.slice/slurmstepd.scope/job_7", "system.slice/slurmstepd.scope/" + fixtureSLUID},
			Target{JobID: 7, SLUID: fixtureSLUID}, "system.slice/slurmstepd.scope/" + fixtureSLUID, nil, ""},
		// (b) CgroupJobIdPaths=yes (or Slurm before 26.05): job_<id>,
		// whether the SLUID is known or not.
		{"job id paths, sluid known", []string{"system.slice/slurmstepd.scope/job_7/step_batch/user/task_0"},
			Target{JobID: 7, SLUID: fixtureSLUID}, "system.slice/slurmstepd.scope/job_7", nil, ""},
		{"job id paths", []string{"system.slice/slurmstepd.scope/job_7"},
			Target{JobID: 7}, "system.slice/slurmstepd.scope/job_7", nil, ""},
		{"job id paths, not there", []string{"system.slice/slurmstepd.scope/job_8"},
			Target{JobID: 7, SLUID: fixtureSLUID}, "", os.ErrNotExist, "job_7"},
		// (c) several slurmd on one host: one job on two of its nodes has
		// the same SLUID under each slurmd's scope.
		{"several slurmd, sluid", []string{"system.slice/n1_slurmstepd.scope/" + fixtureSLUID, "system.slice/n2_slurmstepd.scope/" + fixtureSLUID},
			Target{JobID: 7, SLUID: fixtureSLUID, Host: "n2"}, "system.slice/n2_slurmstepd.scope/" + fixtureSLUID, nil, ""},
		{"several slurmd, sluid, no host", []string{"system.slice/n1_slurmstepd.scope/" + fixtureSLUID, "system.slice/n2_slurmstepd.scope/" + fixtureSLUID},
			Target{JobID: 7, SLUID: fixtureSLUID}, "", errAmbiguous, ""},
		{"several slurmd, sluid on the other node only", []string{"system.slice/n1_slurmstepd.scope/" + fixtureSLUID},
			Target{JobID: 7, SLUID: fixtureSLUID, Host: "n2"}, "", os.ErrNotExist, ""},
		{"several slurmd, job id paths", []string{"system.slice/n1_slurmstepd.scope/job_7", "system.slice/n2_slurmstepd.scope/job_7"},
			Target{JobID: 7, SLUID: fixtureSLUID, Host: "n1"}, "system.slice/n1_slurmstepd.scope/job_7", nil, ""},
		{"several slurmd, sluid unknown", []string{"system.slice/n1_slurmstepd.scope/" + otherSLUID},
			Target{JobID: 7, Host: "n1"}, "", os.ErrNotExist, "SLUID is needed"},
	} {
		root := t.TempDir()
		mkdirs(t, root, tc.dirs...)
		d, err := FindJobDirs(root, VersionV2, tc.job)
		if tc.err != nil {
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%s: err = %v, want %v naming %q", tc.name, err, tc.err, tc.msg)
			}
			continue
		}
		if err != nil || d.Unified != filepath.Join(root, tc.want) {
			t.Errorf("%s: %+v, %v; want %s", tc.name, d, err, tc.want)
		}
	}
}

// A SLUID that is not one is refused before it is joined into a path,
// even where a directory of that name exists.
func TestFindJobDirsV2BadSLUID(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mkdirs(t, root, "system.slice/slurmstepd.scope/job_7", "x", "system.slice/slurmstepd.scope/sbx9m87fejga00")
	for _, bad := range []string{"../../x", "sbx9m87fejga00", "*", "s2MNKT07NV00000"} {
		if d, err := FindJobDirs(root, VersionV2, Target{JobID: 7, SLUID: bad}); err == nil || errors.Is(err, os.ErrNotExist) {
			t.Errorf("SLUID %q: %+v, %v; want an error naming the bad SLUID", bad, d, err)
		}
	}
	// v1 ignores the SLUID.
	mkdirs(t, root, "memory/slurm/uid_1/job_7", "cpuacct/slurm/uid_1/job_7")
	if _, err := FindJobDirs(root, VersionV1, Target{JobID: 7, UID: 1, SLUID: fixtureSLUID}); err != nil {
		t.Errorf("v1 with a SLUID: %v", err)
	}
}

// The sampler reads a job whose directory is named by its SLUID; the job
// beside it (the next SLUID) is not read.
func TestCgroupV2SLUIDFixture(t *testing.T) {
	t.Parallel()
	set, e := newFixtureSet(t, fixtureV2SLUID, VersionV2)
	if e.SLUID != fixtureSLUID {
		t.Fatalf("fixture SLUID %q", e.SLUID)
	}
	s, err := collect(t, set)
	if err != nil {
		t.Fatal(err)
	}
	checkSample(t, s, fullV2Sample(e))

	// Without the SLUID the job is not found, and the error says why.
	_, err = New(fixtureConfig(fixtureV2SLUID, VersionV2), Target{JobID: e.JobID, UID: e.UID, Host: e.Host})
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "SLUID is needed") {
		t.Errorf("no SLUID: err = %v, want os.ErrNotExist saying the SLUID is needed", err)
	}
}

// Several slurmd on one host, each with its own scope, and one job on two
// of their nodes: the same SLUID under node01's and node02's scopes. The
// tree is the SLUID fixture with its scope renamed to node01's, plus the
// job's directory under node02's with other counters.
func TestCgroupV2SLUIDSeveralSlurmd(t *testing.T) {
	t.Parallel()
	dir := copyTree(t, fixtureV2SLUID)
	slice := filepath.Join(dir, "cgroup", "system.slice")
	if err := os.Rename(filepath.Join(slice, "slurmstepd.scope"), filepath.Join(slice, "node01_slurmstepd.scope")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(slice, "node02_slurmstepd.scope"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The other job's small directory stands in for this job on node02.
	if err := os.Rename(filepath.Join(slice, "node01_slurmstepd.scope", otherSLUID), filepath.Join(slice, "node02_slurmstepd.scope", fixtureSLUID)); err != nil {
		t.Fatal(err)
	}
	e := loadExpected(t, dir)
	cfg := fixtureConfig(dir, VersionV2)

	set, err := New(cfg, e.target()) // node01
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	s, err := collect(t, set)
	if err != nil {
		t.Fatal(err)
	}
	checkSample(t, s, fullV2Sample(e))

	job := e.target()
	job.Host = "node02"
	set2, err := New(cfg, job)
	if err != nil {
		t.Fatal(err)
	}
	defer set2.Close()
	s2, _ := collect(t, set2)
	if s2.MemoryUsedBytes != 4096 || s2.CPUUsageNanos != 1000 {
		t.Errorf("node02: memory %d, cpu %d ns; want node02's 4096 and 1000", s2.MemoryUsedBytes, s2.CPUUsageNanos)
	}

	job.Host = ""
	if _, err := New(cfg, job); !errors.Is(err, errAmbiguous) {
		t.Errorf("no node name: err = %v, want errAmbiguous", err)
	}
}

// fullV2Sample is what the v2 fixtures' job reads as, io and pids
// controllers on.
func fullV2Sample(e expected) Sample {
	return e.v2Extras(Sample{
		CPUUsageNanos: e.CPUUsageNanos, MemoryUsedBytes: e.MemoryUsed, MemoryRSSBytes: e.MemoryRSS,
		MemoryShmemBytes: e.MemoryShmem, MemoryMappedFileBytes: e.MemoryMapped, MemoryWorkingSetBytes: e.MemoryWorkSet,
		MemoryPeakBytes: e.MemoryPeak, MemoryLimitBytes: e.MemoryLimit, CPUsAllocated: e.CPUs,
		Processes: e.Processes, Threads: e.Threads, IOReadBytes: e.IOStatRead, IOWriteBytes: e.IOStatWrite,
	})
}
