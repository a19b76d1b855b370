//go:build !cgo

package amd

import (
	"fmt"

	"github.com/jobsight/jobsight/agent/gpu"
)

// openBinding cannot load a C library in an agent built without cgo.
func openBinding(candidates []string) (binding, string, error) {
	return nil, "", fmt.Errorf("amd: loading the AMD SMI library (libamd_smi.so) needs an agent built with cgo: %w",
		gpu.ErrUnavailable)
}
