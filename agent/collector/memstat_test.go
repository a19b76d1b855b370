package collector

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestKeyValues(t *testing.T) {
	t.Parallel()
	keys := memStatV1[:]
	for _, tc := range []struct {
		in         string
		found, bad uint32
		vals       [memStatN]uint64
	}{
		{"total_rss 1\ntotal_shmem 2\ntotal_mapped_file 3\ntotal_inactive_file 4\n", 0b1111, 0, [memStatN]uint64{1, 2, 3, 4}},
		// Order does not matter; v1's per-cgroup keys (shmem) are not the
		// hierarchical totals; a key is a whole word.
		{"shmem 9\ntotal_inactive_file 4\ntotal_shmem_x 7\ntotal_shmem 2\ntotal_rss 1", 0b1011, 0, [memStatN]uint64{1, 2, 0, 4}},
		{"", 0, 0, [memStatN]uint64{}},
		{"total_rss 1\ntotal_shmem lots\ntotal_inactive_file 4\n", 0b1001, 0b0010, [memStatN]uint64{1, 0, 0, 4}},
	} {
		var vals [memStatN]uint64
		found, bad, err := keyValues([]byte(tc.in), keys, vals[:])
		if found != tc.found || bad != tc.bad || vals != tc.vals {
			t.Errorf("%q: found %04b bad %04b vals %v, want %04b %04b %v", tc.in, found, bad, vals, tc.found, tc.bad, tc.vals)
		}
		if (err != nil) != (tc.bad != 0) || (err != nil && (!errors.Is(err, errSyntax) || !strings.Contains(err.Error(), "total_shmem"))) {
			t.Errorf("%q: err %v", tc.in, err)
		}
	}
}

// memStatSample reads a memory.stat and usage file pair as the cgroup
// collectors do.
func memStatSample(t *testing.T, dir, usageFile string, keys *memStatKeys) (Sample, error) {
	t.Helper()
	usage, stat := openKernFile(filepath.Join(dir, usageFile)), openKernFile(filepath.Join(dir, "memory.stat"))
	defer usage.close()
	defer stat.close()
	var s Sample
	s.Reset(time.Now())
	var errs errList
	buf := newBuf()
	if v, ok := readUint(&usage, &buf, &errs); ok {
		s.MemoryUsedBytes = v
		s.Missing &^= MetricMemory
	}
	readMemStat(&stat, keys, &s, &buf, &errs)
	return s, errs.err("test")
}

// The capture from a real cgroup v1 job that wrote 150 MiB into /dev/shm
// (testdata/memstat-v1-shm150m/README.md): RSS sees none of it; shared
// memory and the working set do.
func TestCapturedShmJob(t *testing.T) {
	t.Parallel()
	s, err := memStatSample(t, "testdata/memstat-v1-shm150m", "memory.usage_in_bytes", &memStatV1)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Has(memStatMetrics | MetricMemory) {
		t.Fatalf("missing %v", s.Missing)
	}
	const mib = 1 << 20
	if s.MemoryShmemBytes != 150*mib || s.MemoryRSSBytes > mib || s.MemoryMappedFileBytes != 0 {
		t.Errorf("shmem %d rss %d mapped %d, want 150 MiB, < 1 MiB, 0", s.MemoryShmemBytes, s.MemoryRSSBytes, s.MemoryMappedFileBytes)
	}
	if s.MemoryWorkingSetBytes != 158208000-94208 {
		t.Errorf("working set %d, want usage 158208000 − inactive file 94208", s.MemoryWorkingSetBytes)
	}
}

// A garbled line loses only its own metric; usage below the inactive file
// cache (two reads, v1's per-CPU batching) gives a zero working set, never
// a wrapped-around one.
func TestMemStatPartialAndClamped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "memory.current"), "1000\n")
	writeFile(t, filepath.Join(dir, "memory.stat"), "anon 10\nfile 990\nshmem x\nfile_mapped 5\ninactive_file 4096\n")
	s, err := memStatSample(t, dir, "memory.current", &memStatV2)
	if err == nil || !errors.Is(err, errSyntax) || !strings.Contains(err.Error(), "shmem") {
		t.Errorf("err %v, want one naming shmem", err)
	}
	if s.Has(MetricMemoryShmem) || !s.Has(MetricMemoryRSS|MetricMemoryMappedFile|MetricMemoryWorkingSet) {
		t.Errorf("missing %v, want memory_shmem only", s.Missing)
	}
	if s.MemoryRSSBytes != 10 || s.MemoryMappedFileBytes != 5 || s.MemoryWorkingSetBytes != 0 {
		t.Errorf("rss %d mapped %d working set %d", s.MemoryRSSBytes, s.MemoryMappedFileBytes, s.MemoryWorkingSetBytes)
	}
	// A kernel without the newer keys: those metrics are missing, with no
	// error; the working set needs the usage.
	writeFile(t, filepath.Join(dir, "memory.stat"), "anon 10\ninactive_file 100\n")
	writeFile(t, filepath.Join(dir, "memory.current"), "bad\n")
	s, err = memStatSample(t, dir, "memory.current", &memStatV2)
	if err == nil || strings.Contains(err.Error(), "memory.stat") {
		t.Errorf("err %v, want one for memory.current only", err)
	}
	if want := MetricMemory | MetricMemoryShmem | MetricMemoryMappedFile | MetricMemoryWorkingSet; s.Missing&(memStatMetrics|MetricMemory) != want {
		t.Errorf("missing %v, want %v", s.Missing&(memStatMetrics|MetricMemory), want)
	}
}

func FuzzKeyValues(f *testing.F) {
	f.Add([]byte("total_rss 1\ntotal_shmem 2\ntotal_mapped_file 3\ntotal_inactive_file 4\n"))
	f.Add([]byte("anon 1\nshmem x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var vals [memStatN]uint64
		found, bad, err := keyValues(b, memStatV2[:], vals[:])
		if found&bad != 0 || (bad != 0) != (err != nil) {
			t.Errorf("%q: found %b bad %b err %v", b, found, bad, err)
		}
	})
}

// BenchmarkMemStatParse compares finding the four memory.stat keys in one
// scan with finding total_rss alone, as before (cgroup v1 fixture).
func BenchmarkMemStatParse(b *testing.B) {
	stat, err := os.ReadFile(fixtureV1 + "/cgroup/memory/slurm_node01/uid_1000/job_4242/memory.stat")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("total_rss_only", func(b *testing.B) {
		for b.Loop() {
			if _, ok, err := keyValue(stat, "total_rss"); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("four_keys", func(b *testing.B) {
		var vals [memStatN]uint64
		for b.Loop() {
			if found, _, err := keyValues(stat, memStatV1[:], vals[:]); found != 1<<memStatN-1 || err != nil {
				b.Fatal(found, err)
			}
		}
	})
}
