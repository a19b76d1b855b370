//go:build cgo

package nvidia

import "time"

// SetClock replaces the clock of the energy estimate.
func (b *Backend) SetClock(now func() time.Time) { b.now = now }

// GPMSupported says whether GPM is on for the device (after a Read).
func GPMSupported(b *Backend, index int) bool {
	h, err := b.handle(index)
	return err == nil && h.gpm.checked && !h.gpm.off
}

// EnergyEvery is how often the energy counter is read.
const EnergyEvery = energyEvery
