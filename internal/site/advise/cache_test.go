package advise

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCacheIsTheCallersAlone(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	uid := uint32(os.Getuid())
	c := Cache{Dir: dir, UID: uid, TTL: time.Minute}
	now := time.Now()
	jobs := []Past{{DocID: "c:1", Name: "train"}}
	if err := c.Put("k", jobs, now); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Get("k", now.Add(30*time.Second)); !ok || len(got) != 1 || got[0].DocID != "c:1" {
		t.Fatalf("fresh entry: %v %v", got, ok)
	}
	if _, ok := c.Get("k", now.Add(2*time.Minute)); ok {
		t.Error("an entry older than the TTL was used")
	}
	if _, ok := c.Get("other", now); ok {
		t.Error("another key's entry was used")
	}
	// Another owner's directory, or a file others can read or write, is
	// never used nor written.
	if _, ok := (Cache{Dir: dir, UID: uid + 1, TTL: time.Minute}).Get("k", now); ok {
		t.Error("the cache of a directory owned by another uid was used")
	}
	f := c.file("k")
	if err := os.Chmod(f, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get("k", now); ok {
		t.Error("a world-readable cache file was used")
	}
	if err := os.Chmod(dir, 0o770); err != nil {
		t.Fatal(err)
	}
	if err := c.Put("k2", jobs, now); err == nil {
		t.Error("written into a group-writable directory")
	}
	// A link planted in place of the file is not followed.
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, []byte(`{"key":"k3","at":"`+now.Format(time.RFC3339Nano)+`","jobs":[{"DocID":"forged"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, c.file("k3")); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Get("k3", now); ok {
		t.Errorf("a planted link was followed: %v", got)
	}
	// No directory, no TTL: nothing cached, no error.
	if err := (Cache{Dir: filepath.Join(dir, "missing"), UID: uid, TTL: 0}).Put("k", jobs, now); err != nil {
		t.Errorf("TTL 0: %v", err)
	}
}

func TestConfigProblemsNameTheirOption(t *testing.T) {
	c := Default()
	c.MinJobs, c.MaxSpread, c.MinSaving, c.Timeout = 0, 0.5, 1, 0
	var got []string
	c.Validate(func(option, format string, args ...any) { got = append(got, option) })
	want := map[string]bool{"advise.min_jobs": true, "advise.max_spread": true, "advise.min_saving": true, "advise.timeout": true}
	for _, o := range got {
		delete(want, o)
	}
	if len(want) != 0 {
		t.Errorf("problems named %v; missing %v", got, want)
	}
	var none []string
	Default().Validate(func(option, format string, args ...any) { none = append(none, option) })
	if len(none) != 0 {
		t.Errorf("the defaults have problems: %v", none)
	}
}

func TestCachePrunesExpiredHistories(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	uid := uint32(os.Getuid())
	c := Cache{Dir: dir, UID: uid, TTL: time.Minute}
	jobs := []Past{{DocID: "c:1"}}
	now := time.Now()
	for _, k := range []string{"old", "fresh"} {
		if err := c.Put(k, jobs, now); err != nil {
			t.Fatal(err)
		}
	}
	old := now.Add(-2 * time.Minute)
	if err := os.Chtimes(c.file("old"), old, old); err != nil {
		t.Fatal(err)
	}
	// Another program's file in the runtime directory is never touched.
	other := filepath.Join(dir, "pulse-cookie.json")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(other, old, old); err != nil {
		t.Fatal(err)
	}
	if err := c.Put("new", jobs, now); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]bool{"old": false, "fresh": true, "new": true} {
		if _, err := os.Stat(c.file(k)); (err == nil) != want {
			t.Errorf("cache file of %q: present %v, want %v", k, err == nil, want)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another program's file was removed: %v", err)
	}
}
