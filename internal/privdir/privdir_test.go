package privdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnsure(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "a", "state")
	if err := Ensure(dir); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v, want 0700", fi.Mode().Perm())
	}
	loose := filepath.Join(base, "loose")
	_ = os.Mkdir(loose, 0o777)
	_ = os.Chmod(loose, 0o777)
	if err := Ensure(loose); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(loose); fi.Mode().Perm() != 0o700 {
		t.Errorf("loose directory left %v", fi.Mode().Perm())
	}
	link := filepath.Join(base, "link")
	_ = os.Symlink(loose, link)
	if err := Ensure(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("symlink: %v", err)
	}
	file := filepath.Join(base, "file")
	_ = os.WriteFile(file, nil, 0o600)
	if err := Ensure(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file: %v", err)
	}
	if os.Geteuid() == 0 {
		foreign := filepath.Join(base, "foreign")
		_ = os.Mkdir(foreign, 0o700)
		_ = os.Chown(foreign, 65534, 65534)
		if err := Ensure(foreign); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Errorf("foreign: %v", err)
		}
	}
}
