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

// TestWriteFile: the file is 0600 whatever the umask, replaces a symbolic
// link at its name instead of writing through it, and leaves no temporary
// file behind.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "doc.json")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, ".tmp-*", []byte("new")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSymlink != 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want a 0600 file", path, fi.Mode())
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target was written: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d entries left, want 2", len(ents))
	}
}
