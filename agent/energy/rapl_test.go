package energy

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// copyTree copies a fixture tree into a temporary directory.
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestRAPLTwoSocketsWithWrapAround(t *testing.T) {
	t.Parallel()
	root := copyTree(t, "testdata/powercap/intel-xeon-2s")
	r := NewRAPL(root)
	defer r.Close()
	if r.Parts() != PartCPU|PartDRAM {
		t.Fatalf("parts = %v, want energy_cpu+energy_dram; unavailable %v", r.Parts(), r.Unavailable())
	}
	if len(r.zones) != 4 {
		t.Fatalf("zones = %d, want 4 (intel-rapl-mmio left out)", len(r.zones))
	}
	var rd Reading
	rd.Reset()
	if err := r.Read(&rd); err != nil {
		t.Fatal(err)
	}
	if !rd.Has(PartCPU|PartDRAM) || rd.CPUJoules != 0 || rd.DRAMJoules != 0 {
		t.Fatalf("first read %+v: want both parts at 0 J (the baseline)", rd)
	}
	// The next read: package 0 wrapped around max_energy_range_uj.
	wrapped := "testdata/powercap/intel-xeon-2s-wrapped/class/powercap"
	zones, _ := os.ReadDir(wrapped)
	for _, z := range zones {
		b, err := os.ReadFile(filepath.Join(wrapped, z.Name(), "energy_uj"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "class/powercap", z.Name(), "energy_uj"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rd.Reset()
	if err := r.Read(&rd); err != nil {
		t.Fatal(err)
	}
	if want := 1.32885 + 1; !near(rd.CPUJoules, want) {
		t.Errorf("cpu = %v J, want %v (package 0 wrapped: 328850 µJ to its range, then 1 J)", rd.CPUJoules, want)
	}
	if !near(rd.DRAMJoules, 1) {
		t.Errorf("dram = %v J, want 1", rd.DRAMJoules)
	}
	// Readings are cumulative: a third read with no change adds nothing.
	rd.Reset()
	_ = r.Read(&rd)
	if !near(rd.CPUJoules, 2.32885) {
		t.Errorf("cpu after an idle read = %v", rd.CPUJoules)
	}
}

func TestRAPLCounterWrapsOnce(t *testing.T) {
	t.Parallel()
	c := raplCounter{max: 1000}
	for _, v := range []uint64{900, 990, 10, 500} {
		c.observe(v)
	}
	if c.totalUJ != 90+20+490 {
		t.Errorf("total = %d µJ, want 600", c.totalUJ)
	}
	u := raplCounter{} // range unknown: a decrease counts from the restart
	for _, v := range []uint64{900, 10} {
		u.observe(v)
	}
	if u.totalUJ != 10 {
		t.Errorf("unknown range: total = %d, want 10", u.totalUJ)
	}
}

// An energy_uj only root may read (Linux ≥ 5.10) is a clear "missing",
// not a zero.
func TestRAPLUnreadableIsMissingNotZero(t *testing.T) {
	t.Parallel()
	root := copyTree(t, "testdata/powercap/amd-epyc-1s")
	open := func(p string) (int, error) {
		if strings.HasSuffix(p, "energy_uj") {
			return -1, unix.EACCES
		}
		return openReadOnly(p)
	}
	if os.Geteuid() != 0 { // a real permission failure where the test can make one
		if err := os.Chmod(filepath.Join(root, "class/powercap/intel-rapl:0/energy_uj"), 0); err != nil {
			t.Fatal(err)
		}
		open = openReadOnly
	}
	r := newRAPL(root, open)
	defer r.Close()
	if r.Parts() != 0 {
		t.Fatalf("parts = %v, want none", r.Parts())
	}
	why := strings.Join(r.Unavailable(), "\n")
	for _, want := range []string{"intel-rapl:0 (package-0)", "readable only by root", "no dram domain"} {
		if !strings.Contains(why, want) {
			t.Errorf("unavailable %q does not say %q", why, want)
		}
	}
	var rd Reading
	rd.Reset()
	if err := r.Read(&rd); err != nil {
		t.Fatal(err)
	}
	if rd.Has(PartCPU) || rd.Has(PartDRAM) {
		t.Errorf("reading %+v: cpu and dram must stay missing", rd)
	}
}

// One socket unreadable makes the whole part missing: a sum over the
// other sockets would be an undercount that looks whole.
func TestRAPLPartMissingWhenOneSocketFails(t *testing.T) {
	t.Parallel()
	root := copyTree(t, "testdata/powercap/intel-xeon-2s")
	r := newRAPL(root, func(p string) (int, error) {
		if strings.Contains(p, "intel-rapl:1/") {
			return -1, unix.EACCES
		}
		return openReadOnly(p)
	})
	defer r.Close()
	if r.Parts() != PartDRAM {
		t.Fatalf("parts = %v, want only energy_dram", r.Parts())
	}
}

func TestRAPLAbsent(t *testing.T) {
	t.Parallel()
	r := NewRAPL(t.TempDir())
	if r.Parts() != 0 || len(r.Unavailable()) != 1 || !strings.Contains(r.Unavailable()[0], "no powercap interface") {
		t.Fatalf("parts %v, unavailable %v", r.Parts(), r.Unavailable())
	}
	var rd Reading
	rd.Reset()
	if err := r.Read(&rd); err != nil || rd.Missing != AllParts {
		t.Fatalf("read: %v, %+v", err, rd)
	}
}

func TestRAPLReadErrorNamesTheFile(t *testing.T) {
	t.Parallel()
	root := copyTree(t, "testdata/powercap/amd-epyc-1s")
	r := NewRAPL(root)
	defer r.Close()
	var rd Reading
	rd.Reset()
	_ = r.Read(&rd)
	if err := os.WriteFile(filepath.Join(root, "class/powercap/intel-rapl:0/energy_uj"), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rd.Reset()
	err := r.Read(&rd)
	if err == nil || !strings.Contains(err.Error(), "intel-rapl:0/energy_uj") || rd.Has(PartCPU) {
		t.Fatalf("err %v, reading %+v", err, rd)
	}
	if !slices.Contains(PartCPU.Names(), "energy_cpu") || errors.Is(err, os.ErrNotExist) {
		t.Fatal("unexpected")
	}
}

func TestRAPLReadDoesNotAllocate(t *testing.T) {
	root := copyTree(t, "testdata/powercap/intel-xeon-2s")
	r := NewRAPL(root)
	defer r.Close()
	var rd Reading
	if n := testing.AllocsPerRun(100, func() { rd.Reset(); _ = r.Read(&rd) }); n != 0 {
		t.Errorf("Read allocates %v times per call", n)
	}
}
