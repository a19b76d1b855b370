package stack_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jobsight/jobsight/test/stack"
)

// FindGrafana uses a Grafana a site or developer installed and never
// builds one: none on PATH is ErrNoGrafana (the stack then starts without
// it); a release archive's layout gives its home beside the binary.
func TestFindGrafana(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, _, err := stack.FindGrafana("", ""); !errors.Is(err, stack.ErrNoGrafana) {
		t.Fatalf("no grafana on PATH: %v, want ErrNoGrafana", err)
	}

	// A release archive: grafana-v12/bin/grafana and grafana-v12/public.
	home := filepath.Join(t.TempDir(), "grafana-v12")
	bin := filepath.Join(home, "bin", "grafana")
	for _, d := range []string{filepath.Dir(bin), filepath.Join(home, "public")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Dir(bin))
	gotBin, gotHome, err := stack.FindGrafana("", "")
	if err != nil || gotBin != bin || gotHome != home {
		t.Errorf("grafana on PATH: %q %q %v, want %q %q", gotBin, gotHome, err, bin, home)
	}
	if _, gotHome, err := stack.FindGrafana(bin, "/elsewhere"); err != nil || gotHome != "/elsewhere" {
		t.Errorf("an explicit home: %q %v", gotHome, err)
	}
	if _, _, err := stack.FindGrafana(filepath.Join(home, "nope"), ""); err == nil || errors.Is(err, stack.ErrNoGrafana) {
		t.Errorf("a given binary that does not exist: %v", err)
	}
	// A binary with no home beside it and none given: an error naming it
	// (unless the packages' /usr/share/grafana exists on this machine).
	if _, err := os.Stat("/usr/share/grafana/public"); err != nil {
		lone := filepath.Join(t.TempDir(), "grafana")
		if err := os.WriteFile(lone, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, _, err := stack.FindGrafana(lone, ""); err == nil {
			t.Errorf("a binary without a home path: no error")
		}
	}
}
