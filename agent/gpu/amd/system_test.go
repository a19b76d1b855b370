package amd

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jobsight/jobsight/agent/gpu"
)

func TestLibraryAbsent(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libamd_smi.so")
	_, _, err := openBinding([]string{missing})
	if !errors.Is(err, gpu.ErrUnavailable) {
		t.Fatalf("openBinding(%s): %v, want ErrUnavailable", missing, err)
	}
	if errors.Is(err, errNoDevices) {
		t.Error("an absent library must not say 'no GPU' (the amd-smi tool may still work)")
	}
	// OpenLibrary also tries the standard places; on a host with ROCm and
	// an AMD GPU it may succeed.
	b, err := OpenLibrary(missing)
	if err == nil {
		b.Close()
		t.Skip("a real AMD SMI library is installed")
	}
	if !errors.Is(err, gpu.ErrUnavailable) || !strings.Contains(err.Error(), "libamd_smi.so") {
		t.Errorf("OpenLibrary: %v", err)
	}
}

func TestOpenSystem(t *testing.T) {
	absent := func(string) (*LibBackend, error) {
		return nil, errors.New("amd: load AMD SMI library: " + gpu.ErrUnavailable.Error())
	}
	absentWrapped := func(string) (*LibBackend, error) {
		return nil, errors.Join(errors.New("amd: load AMD SMI library (no such file)"), gpu.ErrUnavailable)
	}
	noGPU := func(string) (*LibBackend, error) {
		return nil, errors.Join(errNoDevices, gpu.ErrUnavailable)
	}
	noTool := func(string) (string, error) { return "", exec.ErrNotFound }
	tool := func(string) (string, error) { return "/opt/rocm/bin/amd-smi", nil }
	ctx := context.Background()

	_, err := openSystem(ctx, absentWrapped, noTool, nil)
	if !errors.Is(err, gpu.ErrUnavailable) || !strings.Contains(err.Error(), "no amd-smi tool") {
		t.Errorf("neither: %v", err)
	}

	lookedUp := false
	_, err = openSystem(ctx, noGPU, func(string) (string, error) { lookedUp = true; return "", nil }, nil)
	if !errors.Is(err, gpu.ErrUnavailable) || lookedUp {
		t.Errorf("library says no GPU: %v (tool looked up: %v)", err, lookedUp)
	}

	f := newFakeCLI(t, "mi250x")
	var path string
	run := func(ctx context.Context, name string, args ...string) ([]byte, error) {
		path = name
		return f.run(ctx, name, args...)
	}
	b, err := openSystem(ctx, absent, tool, run)
	if err != nil {
		t.Fatalf("fallback to the tool: %v", err)
	}
	defer b.Close()
	if b.Name() != "amd-smi-cli" || len(b.Devices()) != 8 || path != "/opt/rocm/bin/amd-smi" {
		t.Errorf("backend %s with %d devices, ran %q", b.Name(), len(b.Devices()), path)
	}

	broken := newFakeCLI(t, "mi250x")
	broken.fail["static"] = errors.New("exit status 1: Traceback (most recent call last)")
	_, err = openSystem(ctx, absentWrapped, tool, broken.run)
	if err == nil || errors.Is(err, gpu.ErrUnavailable) || !strings.Contains(err.Error(), "amd-smi static") {
		t.Errorf("a failing tool: %v (want an error that is not 'unavailable')", err)
	}
}
