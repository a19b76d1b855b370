package jobagent

import (
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// The profiles SIGUSR1 asks for are written, private to root, and name
// their node; a second CPU profile at once is refused with a reason.
func TestWriteProfiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "profiles")
	paths, err := writeProfiles(dir, "n1", 50*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() == 0 || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %d bytes, mode %v; want a profile, 0600", p, st.Size(), st.Mode().Perm())
		}
		if filepath.Dir(p) != dir || !strings.HasPrefix(filepath.Base(p), "agent@n1-") {
			t.Errorf("profile %s is not named by its node in %s", p, dir)
		}
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("profile directory mode %v, want 0700", st.Mode().Perm())
	}
	f, _ := os.Create(filepath.Join(t.TempDir(), "busy.pprof"))
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	defer pprof.StopCPUProfile()
	if _, err := writeProfiles(dir, "n1", time.Millisecond, nil); err == nil {
		t.Error("a second CPU profile while one runs: no error")
	}
}
