package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/jobsight/jobsight/test/stack"
)

// spank-release reads the release a plugin built against the cluster's
// Slurm headers says it is for, and names a file that is not a plugin.
func TestSpankReleaseReadsThePluginVersion(t *testing.T) {
	stack.Require(t, "cc", "make")
	in, err := stack.FindSlurm(context.Background(), "")
	if err != nil {
		stack.Unavailable(t, "Slurm headers: %v", err)
	}
	dir := t.TempDir()
	if out, err := exec.Command("make", "-s", "-B", "-C", "../../agent/spank", "OUT="+dir, "SLURM_INCLUDE="+in.Include()).CombinedOutput(); err != nil {
		t.Fatalf("building the plugin: %v\n%s", err, out)
	}
	var out, errb bytes.Buffer
	if code := spankRelease(filepath.Join(dir, "jobsight.so"), &out, &errb); code != 0 || out.String() != in.Release+"\n" {
		t.Errorf("spank-release: %d %q %q, want %s", code, out.String(), errb.String(), in.Release)
	}
	notPlugin := filepath.Join(dir, "x.so")
	if err := os.WriteFile(notPlugin, []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := spankRelease(notPlugin, &out, &errb); code != 1 || out.Len() != 0 || errb.Len() == 0 {
		t.Errorf("spank-release of junk: %d %q %q, want an error", code, out.String(), errb.String())
	}
}
