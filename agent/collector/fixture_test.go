package collector

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const (
	fixtureV1 = "testdata/cgroupv1-slurm-handmade"
	fixtureV2 = "testdata/cgroupv2-slurm-kerneldoc"
	// fixtureV2SLUID is the same job as fixtureV2 with its directory
	// named by its SLUID, as Slurm 26.05 names it without
	// CgroupJobIdPaths=yes, and another job's directory beside it.
	fixtureV2SLUID = "testdata/cgroupv2-slurm26-sluid"
)

// expected is testdata/*/expected.json, written by testdata/gen together
// with the fixture files.
type expected struct {
	JobID          uint64 `json:"job_id"`
	UID            uint32 `json:"uid"`
	Host           string `json:"host"`
	SLUID          string `json:"sluid"`
	CPUUsageNanos  uint64 `json:"cpu_usage_nanos"`
	MemoryUsed     uint64 `json:"memory_used_bytes"`
	MemoryRSS      uint64 `json:"memory_rss_bytes"`
	MemoryPeak     uint64 `json:"memory_peak_bytes"`
	MemoryLimit    uint64 `json:"memory_limit_bytes"`
	MemoryShmem    uint64 `json:"memory_shmem_bytes"`
	MemoryMapped   uint64 `json:"memory_mapped_file_bytes"`
	MemoryWorkSet  uint64 `json:"memory_working_set_bytes"`
	CPUs           uint32 `json:"cpus_allocated"`
	Processes      uint32 `json:"processes"`
	Threads        uint32 `json:"threads"`
	ProcReadBytes  uint64 `json:"proc_read_bytes"`
	ProcWriteBytes uint64 `json:"proc_write_bytes"`
	IOStatRead     uint64 `json:"iostat_read_bytes"`
	IOStatWrite    uint64 `json:"iostat_write_bytes"`
	// The v2 trees' pressure totals, OOM kills and threads' kernel peak
	// (zero in the v1 tree, which has none).
	CPUStallSome    uint64 `json:"cpu_stall_some_nanos"`
	MemoryStallSome uint64 `json:"memory_stall_some_nanos"`
	MemoryStallFull uint64 `json:"memory_stall_full_nanos"`
	IOStallSome     uint64 `json:"io_stall_some_nanos"`
	IOStallFull     uint64 `json:"io_stall_full_nanos"`
	OOMKills        uint64 `json:"oom_kills"`
	ThreadsPeak     uint32 `json:"threads_peak"`
	PIDs            []int  `json:"pids"`
}

func loadExpected(t testing.TB, dir string) expected {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e expected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("%s/expected.json: %v", dir, err)
	}
	return e
}

// v1Lacks are the metrics the cgroup v1 collector never reads: pressure
// stalls (no per-cgroup PSI on v1), OOM kills (v1 counts them only in the
// killed process's own cgroup, Slurm's task cgroups) and the threads'
// kernel peak (pids.peak is v2's).
const v1Lacks = MetricPressure | MetricOOMKills | MetricThreadsPeak

// v2Extras sets in want what only the v2 trees have: the pressure
// totals, the OOM kills and the threads' kernel peak.
func (e expected) v2Extras(want Sample) Sample {
	want.CPUStallSomeNanos = e.CPUStallSome
	want.MemoryStallSomeNanos, want.MemoryStallFullNanos = e.MemoryStallSome, e.MemoryStallFull
	want.IOStallSomeNanos, want.IOStallFullNanos = e.IOStallSome, e.IOStallFull
	want.OOMKills, want.ThreadsPeak = e.OOMKills, e.ThreadsPeak
	return want
}

// target is the fixture's job.
func (e expected) target() Target {
	return Target{JobID: e.JobID, UID: e.UID, SLUID: e.SLUID, Host: e.Host}
}

// copyTree copies a fixture into a temporary directory a test may change.
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func fixtureConfig(dir string, v Version) Config {
	return Config{CgroupRoot: filepath.Join(dir, "cgroup"), ProcRoot: filepath.Join(dir, "proc"), Version: v}
}

func newFixtureSet(t testing.TB, dir string, v Version) (Set, expected) {
	t.Helper()
	e := loadExpected(t, dir)
	set, err := New(fixtureConfig(dir, v), e.target())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { set.Close() })
	return set, e
}

func collect(t testing.TB, c Collector) (Sample, error) {
	t.Helper()
	var s Sample
	s.Reset(time.Unix(1700000000, 0))
	err := c.Collect(&s)
	return s, err
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
