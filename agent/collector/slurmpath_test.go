package collector

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseSlurmPath(t *testing.T) {
	for _, tc := range []struct {
		v    Version
		rel  string
		want SlurmPath
		ok   bool
	}{
		{VersionV1, "slurm/uid_1000/job_42", SlurmPath{UID: 1000, JobID: 42}, true},
		{VersionV1, "slurm_node01/uid_1000/job_42/step_batch/task_0", SlurmPath{Host: "node01", UID: 1000, JobID: 42, Step: "batch", Task: "0"}, true},
		{VersionHybrid, "slurm/uid_0/job_7/step_extern", SlurmPath{JobID: 7, Step: "extern"}, true},
		{VersionV1, "slurm/uid_x/job_42", SlurmPath{}, false},
		{VersionV1, "system.slice/slurmstepd.scope/job_42", SlurmPath{}, false},
		{VersionV2, "system.slice/slurmstepd.scope/job_42", SlurmPath{JobID: 42}, true},
		{VersionV2, "system.slice/slurmstepd.scope/job_42/step_0/user/task_3", SlurmPath{JobID: 42, Step: "0", Task: "3"}, true},
		{VersionV2, "system.slice/slurmstepd.scope/job_42/step_extern/user/task_special", SlurmPath{JobID: 42, Step: "extern", Task: "special"}, true},
		{VersionV2, "system.slice/slurmstepd.scope/job_42/step_0/slurm", SlurmPath{JobID: 42, Step: "0", Stepd: true}, true},
		{VersionV2, "system.slice/node02_slurmstepd.scope/job_42", SlurmPath{Host: "node02", JobID: 42}, true},
		{VersionV2, "slurm.slice/sub.slice/slurmstepd.scope/job_9", SlurmPath{JobID: 9}, true},
		{VersionV2, "system.slice/slurmd.service", SlurmPath{}, false},
		{VersionV2, "system.slice/slurmstepd.scope/job_42/step_0/other", SlurmPath{}, false},
		{VersionAuto, "slurm/uid_1/job_1", SlurmPath{}, false},
	} {
		got, ok := ParseSlurmPath(tc.v, tc.rel)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseSlurmPath(%s, %q) = %+v, %v; want %+v, %v", tc.v, tc.rel, got, ok, tc.want, tc.ok)
		}
	}
}

func mkdirs(t *testing.T, root string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFindJobDirsV1(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mkdirs(t, root,
		"memory/slurm_n1/uid_1000/job_5", "cpu,cpuacct/slurm_n1/uid_1000/job_5", "cpuset/slurm_n1/uid_1000/job_5",
		"memory/slurm/uid_1000/job_6", "cpuacct/slurm/uid_1000/job_6")
	d, err := FindJobDirs(root, VersionV1, Target{UID: 1000, JobID: 5, Host: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	want := JobDirs{Version: VersionV1, Memory: filepath.Join(root, "memory/slurm_n1/uid_1000/job_5"),
		CPUAcct: filepath.Join(root, "cpu,cpuacct/slurm_n1/uid_1000/job_5"), CPUSet: filepath.Join(root, "cpuset/slurm_n1/uid_1000/job_5")}
	if d != want {
		t.Errorf("got %+v, want %+v", d, want)
	}
	// Without a host name, slurm_* directories are searched too.
	if d, err := FindJobDirs(root, VersionHybrid, Target{UID: 1000, JobID: 5}); err != nil || d.Memory != want.Memory {
		t.Errorf("no host: %+v, %v", d, err)
	}
	if d, err := FindJobDirs(root, VersionV1, Target{UID: 1000, JobID: 6}); err != nil || d.CPUSet != "" || d.CPUAcct == "" {
		t.Errorf("plain slurm dir: %+v, %v", d, err)
	}
	for _, tc := range []struct {
		uid uint32
		job uint64
	}{{1000, 7}, {1001, 5}} {
		if _, err := FindJobDirs(root, VersionV1, Target{UID: tc.uid, JobID: tc.job}); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("uid %d job %d: err = %v, want os.ErrNotExist", tc.uid, tc.job, err)
		}
	}
	if _, err := FindJobDirs(root, VersionAuto, Target{UID: 1000, JobID: 5}); err == nil {
		t.Error("VersionAuto accepted")
	}
}

func TestFindJobDirsV2(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mkdirs(t, root,
		"system.slice/slurmstepd.scope/job_1/step_0/user/task_0",
		"system.slice/n1_slurmstepd.scope/job_2", "system.slice/n2_slurmstepd.scope/job_2",
		"slurm.slice/slurmstepd.scope/job_3")
	for _, tc := range []struct {
		job  uint64
		host string
		want string
		err  error
	}{
		{1, "", "system.slice/slurmstepd.scope/job_1", nil},
		{2, "n2", "system.slice/n2_slurmstepd.scope/job_2", nil},
		{2, "", "", errAmbiguous},
		{3, "", "slurm.slice/slurmstepd.scope/job_3", nil},
		{4, "", "", os.ErrNotExist},
	} {
		d, err := FindJobDirs(root, VersionV2, Target{JobID: tc.job, Host: tc.host})
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("job %d host %q: err = %v, want %v", tc.job, tc.host, err, tc.err)
			}
			continue
		}
		if err != nil || d.Unified != filepath.Join(root, tc.want) {
			t.Errorf("job %d host %q: %+v, %v; want %s", tc.job, tc.host, d, err, tc.want)
		}
	}
}

func TestVersionFromMagic(t *testing.T) {
	for _, tc := range []struct {
		root, unified int64
		unifiedOK     bool
		want          Version
		bad           bool
	}{
		{cgroup2SuperMagic, 0, false, VersionV2, false},
		{tmpfsMagic, cgroup2SuperMagic, true, VersionHybrid, false},
		{tmpfsMagic, 0, false, VersionV1, false},
		{tmpfsMagic, 0xEF53, true, VersionV1, false},
		{cgroupSuperMagic, 0, false, VersionAuto, true},
		{0xEF53, 0, false, VersionAuto, true},
	} {
		got, err := versionFromMagic(tc.root, tc.unified, tc.unifiedOK)
		if got != tc.want || (err != nil) != tc.bad {
			t.Errorf("versionFromMagic(%#x, %#x, %v) = %s, %v", tc.root, tc.unified, tc.unifiedOK, got, err)
		}
	}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	if _, err := Detect(t.TempDir()); err == nil {
		t.Error("a plain directory was taken for a cgroup root")
	}
	if _, err := Detect(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing root: err = %v, want os.ErrNotExist", err)
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
			t.Skip("no cgroup file system on this host")
		}
	}
	v, err := Detect("/sys/fs/cgroup")
	if err != nil || v == VersionAuto {
		t.Errorf("Detect(/sys/fs/cgroup) = %s, %v", v, err)
	}
	t.Logf("this host: %s", v)
}

func TestParseVersion(t *testing.T) {
	for _, v := range []Version{VersionAuto, VersionV1, VersionV2, VersionHybrid} {
		if got, err := ParseVersion(v.String()); got != v || err != nil {
			t.Errorf("ParseVersion(%s) = %s, %v", v, got, err)
		}
	}
	if _, err := ParseVersion("v3"); err == nil {
		t.Error("v3 accepted")
	}
}

// In steady state (no rescan due) a pass allocates nothing.
func TestCollectDoesNotAllocate(t *testing.T) {
	for _, tc := range []struct {
		dir string
		v   Version
	}{{fixtureV1, VersionV1}, {fixtureV2, VersionV2}, {fixtureV2SLUID, VersionV2}} {
		e := loadExpected(t, tc.dir)
		cfg := fixtureConfig(tc.dir, tc.v)
		cfg.RescanEvery = -1
		set, err := New(cfg, e.target())
		if err != nil {
			t.Fatal(err)
		}
		var s Sample
		now := time.Unix(1, 0)
		allocs := testing.AllocsPerRun(50, func() {
			s.Reset(now)
			if err := set.Collect(&s); err != nil {
				t.Fatal(err)
			}
		})
		set.Close()
		if allocs != 0 {
			t.Errorf("%s: %v allocations per pass, want 0", tc.v, allocs)
		}
	}
}
