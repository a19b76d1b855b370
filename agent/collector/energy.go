package collector

import "github.com/jobsight/jobsight/agent/energy"

// EnergyCollector reads the node's energy sources (RAPL, /proc/stat, the
// BMC's last power reading) into Sample.Energy. The readings are the
// node's, not the job's: the monitor apportions them to the job by its CPU
// time (docs/energy.md).
type EnergyCollector struct {
	meter *energy.Meter
}

// NewEnergyCollector reads through meter, which the node's agent opened and
// closes.
func NewEnergyCollector(meter *energy.Meter) *EnergyCollector {
	return &EnergyCollector{meter: meter}
}

// Name implements Collector.
func (c *EnergyCollector) Name() string { return "energy" }

// Collect implements Collector.
func (c *EnergyCollector) Collect(s *Sample) error { return c.meter.Read(&s.Energy) }

// Close implements Collector; the meter is closed by whoever opened it.
func (c *EnergyCollector) Close() error { return nil }
