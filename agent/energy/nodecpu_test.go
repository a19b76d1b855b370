package energy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/procfs"
)

// The hand parser agrees with prometheus/procfs on the captured file and
// on this machine's /proc/stat.
func TestNodeCPUAgreesWithProcfs(t *testing.T) {
	t.Parallel()
	for _, root := range []string{"testdata/proc", "/proc"} {
		fs, err := procfs.NewFS(root)
		if err != nil {
			t.Fatal(err)
		}
		n, err := NewNodeCPU(root)
		if err != nil {
			t.Fatal(err)
		}
		got, err := n.Read()
		n.Close()
		if err != nil {
			t.Fatal(err)
		}
		st, err := fs.Stat()
		if err != nil {
			t.Fatal(err)
		}
		c := st.CPUTotal
		want := c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ
		// /proc moves on between the two reads: allow a second of ticks.
		if d := got - want; d < -1 || d > 1 || (root == "testdata/proc" && d != 0 && !near(got, want)) {
			t.Errorf("%s: busy = %v s, procfs says %v s", root, got, want)
		}
	}
}

func TestParseStatCPU(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint64{
		"cpu  10 1 20 1000 50 3 4 7 0 0\ncpu0 1 2 3\n": 10 + 1 + 20 + 3 + 4,
		"cpu 1 2 3 4 5 6 7\n":                          1 + 2 + 3 + 6 + 7, // a kernel without steal/guest columns
	} {
		got, err := parseStatCPU([]byte(in))
		if err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "cpu0 1 2 3 4 5 6 7\n", "cpu  1 2 3\n", "cpu  1 2 x 4 5 6 7\n", "intr 1 2\n"} {
		if _, err := parseStatCPU([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestNodeCPUMissingFileIsAnError(t *testing.T) {
	t.Parallel()
	_, err := NewNodeCPU(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "stat") {
		t.Fatalf("err = %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte("bogus\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := NewNodeCPU(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if _, err := n.Read(); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "stat")) {
		t.Fatalf("err = %v, want one naming the file", err)
	}
}
