package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// privateTree checks every file under root: regular files 0600, and every
// directory holding a file 0700 (job documents, checkpoints, spooled items
// and logs name users, accounts and usage). except lists directories whose
// mode the agent does not own (a site's existing output_dir).
func privateTree(t *testing.T, root string, except ...string) (files int) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.Mode().IsRegular():
			files++
			if perm := info.Mode().Perm(); perm != 0o600 {
				t.Errorf("%s: mode %o, want 0600", path, perm)
			}
			dir := filepath.Dir(path)
			for _, e := range except {
				if dir == e {
					return nil
				}
			}
			if st, err := os.Stat(dir); err == nil && st.Mode().Perm() != 0o700 {
				t.Errorf("%s holds %s with mode %o, want 0700", dir, d.Name(), st.Mode().Perm())
			}
		case info.Mode()&os.ModeSocket != 0:
			// the node agent's socket: 0600, removed when it exits
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Every file the agent writes is 0600 in a 0700 directory — the job
// document of `run` without Elasticsearch included, whose output
// directory the agent creates 0700. The umask is cleared for the test, so
// nothing relies on it.
func TestEveryFileTheAgentWritesIsPrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	root := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(root, "cache"))
	t.Setenv("HOME", filepath.Join(root, "home"))

	// Without a config: state and spool in the user's cache directory.
	out := filepath.Join(root, "out", "D")
	var stdout, stderr bytes.Buffer
	if rc := run([]string{"run", "--output-dir", out, "--", "true"}, &stdout, &stderr); rc != 0 {
		t.Fatalf("run: exit %d: %s", rc, stderr.String())
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("output dir the agent created: %v %v, want mode 0700", st.Mode(), err)
	}
	if docs, _ := filepath.Glob(filepath.Join(out, "jobsight-*.json")); len(docs) != 1 {
		t.Fatalf("job documents in %s: %v", out, docs)
	}

	// With a config naming every place the agent writes to.
	cfgRoot := filepath.Join(root, "site")
	cfg := filepath.Join(root, "agent.yaml")
	conf := strings.NewReplacer("ROOT", cfgRoot).Replace(`
state_dir: ROOT/state
log_file: ROOT/log/agent.log
log_level: debug
output_dir: ROOT/out
cpu_profile_dir: ROOT/profiles
spool:
  dir: ROOT/spool
`)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if rc := run([]string{"run", "--config", cfg, "--", "true"}, &stdout, &stderr); rc != 0 {
		t.Fatalf("run --config: exit %d: %s", rc, stderr.String())
	}
	if n := privateTree(t, filepath.Join(root, "cache"), filepath.Join(root, "out", "D")); n == 0 {
		t.Error("no state or spool file written without a config")
	}
	privateTree(t, out)
	if n := privateTree(t, cfgRoot); n < 3 {
		t.Errorf("%d files under %s, want at least the job document, the log and the profile", n, cfgRoot)
	}
}

// A site's existing output_dir keeps its mode (it may be shared on
// purpose): the agent neither tightens nor loosens it; its job documents
// in it are 0600 all the same, an older world-readable one included.
func TestExistingOutputDirKeepsItsMode(t *testing.T) {
	root := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(root, "cache"))
	shared := filepath.Join(root, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, os.ModeSetgid|0o775); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if rc := run([]string{"run", "--output-dir", shared, "--", "true"}, &stdout, &stderr); rc != 0 {
		t.Fatalf("run: exit %d: %s", rc, stderr.String())
	}
	st, err := os.Stat(shared)
	if err != nil || st.Mode()&(os.ModePerm|os.ModeSetgid) != 0o775|os.ModeSetgid {
		t.Errorf("shared output_dir mode %v (%v), want it unchanged (setgid 0775)", st.Mode(), err)
	}
	docs, _ := filepath.Glob(filepath.Join(shared, "jobsight-*.json"))
	if len(docs) != 1 {
		t.Fatalf("job documents: %v", docs)
	}
	if st, _ := os.Stat(docs[0]); st.Mode().Perm() != 0o600 {
		t.Errorf("job document in a shared dir: mode %o, want 0600", st.Mode().Perm())
	}
}
