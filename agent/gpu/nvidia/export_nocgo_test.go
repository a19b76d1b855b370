//go:build !cgo

package nvidia

import "time"

// SetClock does nothing in a build without cgo (no backend opens there).
func (*Backend) SetClock(func() time.Time) {}

// GPMSupported is false in a build without cgo.
func GPMSupported(*Backend, int) bool { return false }
