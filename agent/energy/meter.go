package energy

import (
	"errors"
	"log/slog"
)

// Meter bundles a node's energy sources; any of them may be nil (not
// configured, or not available on the node). It is opened once per agent
// process and read once per sampling pass.
type Meter struct {
	RAPL    *RAPL
	NodeCPU *NodeCPU
	Power   *PowerMeter
}

// Options say where a Meter reads.
type Options struct {
	SysfsRoot string // normally /sys
	ProcRoot  string // normally /proc
	// Power, when not nil, reads the node's wall power (IPMI DCMI).
	Power *PowerMeter
	Log   *slog.Logger
}

// Open opens what the node offers. It never fails: what is missing is
// missing from every Reading, and Unavailable says why.
func Open(o Options) *Meter {
	m := &Meter{RAPL: NewRAPL(o.SysfsRoot), Power: o.Power}
	if c, err := NewNodeCPU(o.ProcRoot); err == nil {
		m.NodeCPU = c
	} else if o.Log != nil {
		o.Log.Warn("node CPU time unreadable; no energy can be split between jobs", "err", err)
	}
	if m.Power != nil {
		m.Power.Start()
	}
	return m
}

// Read fills r (which it resets first) with this pass's readings.
func (m *Meter) Read(r *Reading) error {
	r.Reset()
	var errs []error
	if m.RAPL != nil {
		if err := m.RAPL.Read(r); err != nil {
			errs = append(errs, err)
		}
	}
	if m.NodeCPU != nil {
		if s, err := m.NodeCPU.Read(); err == nil {
			r.NodeCPUSeconds = s
			r.Missing &^= PartNodeCPU
		} else {
			errs = append(errs, err)
		}
	}
	if m.Power != nil {
		if w, ok := m.Power.Latest(m.Power.MaxAge()); ok {
			r.NodePowerWatts = w
			r.Missing &^= PartNodePower
		}
	}
	return errors.Join(errs...)
}

// Unavailable says why parts of the node's energy cannot be read.
func (m *Meter) Unavailable() []string {
	var out []string
	if m.RAPL != nil {
		out = append(out, m.RAPL.Unavailable()...)
	}
	if m.NodeCPU == nil {
		out = append(out, "node cpu time: /proc/stat unreadable")
	}
	if m.Power == nil {
		out = append(out, "node power: energy.ipmitool is not set")
	} else if why := m.Power.Unavailable(); why != "" {
		out = append(out, "node power: "+why)
	}
	return out
}

// Close releases the files and stops the power meter.
func (m *Meter) Close() error {
	var errs []error
	if m.RAPL != nil {
		errs = append(errs, m.RAPL.Close())
	}
	if m.NodeCPU != nil {
		errs = append(errs, m.NodeCPU.Close())
	}
	if m.Power != nil {
		errs = append(errs, m.Power.Close())
	}
	return errors.Join(errs...)
}
