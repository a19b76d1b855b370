package amd

import (
	"context"
	"errors"
	"fmt"
	"os/exec"

	"github.com/jobsight/jobsight/agent/gpu"
)

// OpenSystem opens the best AMD backend of this host: the AMD SMI library,
// else the amd-smi tool found on PATH. When neither is there, or the
// library is there and finds no AMD GPU (so the tool would not either), the
// error wraps gpu.ErrUnavailable; an amd-smi that is there but fails gives
// an error that does not.
func OpenSystem(ctx context.Context) (gpu.Backend, error) {
	return openSystem(ctx, OpenLibrary, exec.LookPath, ExecRunner)
}

func openSystem(ctx context.Context, openLib func(string) (*LibBackend, error),
	lookPath func(string) (string, error), run Runner) (gpu.Backend, error) {
	lib, libErr := openLib("")
	if libErr == nil {
		return lib, nil
	}
	if errors.Is(libErr, errNoDevices) {
		return nil, libErr
	}
	path, err := lookPath("amd-smi")
	if err != nil {
		return nil, fmt.Errorf("amd: no AMD SMI library (%v) and no amd-smi tool (%v): %w", libErr, err, gpu.ErrUnavailable)
	}
	cli, err := OpenCLI(ctx, run, CLIOptions{Path: path})
	if err != nil {
		return nil, fmt.Errorf("amd: no AMD SMI library (%v); amd-smi tool: %w", libErr, err)
	}
	return cli, nil
}
