//go:build cgo

package nvidia

import "time"

// SetClock replaces the clock of the energy estimate.
func (b *Backend) SetClock(now func() time.Time) { b.now = now }
