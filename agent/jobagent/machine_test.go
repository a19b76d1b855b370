package jobagent

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// machineFacts reads MemTotal from /proc/meminfo (in kB; procfs multiplies
// it out): a figure past math.MaxInt64 bytes is the largest int64, not a
// negative machine size (it wrapped to -1024 here before).
func TestMachineFactsHugeMemTotal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		kb   string
		want int64
	}{
		{"65536", 64 << 20},
		{"18014398509481983", math.MaxInt64}, // (2^54-1) kB = 2^64-1024 bytes
	} {
		proc := t.TempDir()
		meminfo := "MemTotal:       " + c.kb + " kB\nMemFree:         1024 kB\n"
		if err := os.WriteFile(filepath.Join(proc, "meminfo"), []byte(meminfo), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := machineFacts(proc, "n1").MemoryBytes; got != c.want {
			t.Errorf("MemTotal %s kB: memory %d bytes, want %d", c.kb, got, c.want)
		}
	}
}
