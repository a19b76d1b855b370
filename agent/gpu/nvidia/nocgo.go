//go:build !cgo

package nvidia

import (
	"fmt"
	"time"

	"github.com/jobsight/jobsight/agent/gpu"
)

// errNoCgo is what every call fails with in a build without cgo.
var errNoCgo = fmt.Errorf("nvidia: built without cgo: %w", gpu.ErrUnavailable)

// Backend is the NVML backend. This build has no cgo, so no Backend can be
// opened: OpenSystem always fails with gpu.ErrUnavailable. The type and
// its methods exist so that callers compile in both builds.
type Backend struct{}

var _ gpu.Backend = (*Backend)(nil)

// OpenSystem fails with an error wrapping gpu.ErrUnavailable: NVML needs
// cgo.
func OpenSystem() (*Backend, error) { return nil, errNoCgo }

// Name returns "nvml".
func (*Backend) Name() string { return backendName }

// Devices returns no device.
func (*Backend) Devices() []gpu.Device { return nil }

// EnumerationErrors returns nil.
func (*Backend) EnumerationErrors() []error { return nil }

// Read fails: built without cgo.
func (*Backend) Read(int, *gpu.Reading) error { return errNoCgo }

// Processes fails: built without cgo.
func (*Backend) Processes(_ int, buf []gpu.Process) ([]gpu.Process, error) { return buf, errNoCgo }

// Close does nothing.
func (*Backend) Close() error { return nil }

// Skip does nothing.
func (*Backend) Skip(gpu.Field) {}

// DefaultActivityInterval is the default GPM window (unused without cgo).
const DefaultActivityInterval = 2 * time.Second

// MinActivityInterval is NVML's refresh interval.
const MinActivityInterval = 100 * time.Millisecond

// SetActivityInterval does nothing.
func (*Backend) SetActivityInterval(time.Duration) {}
