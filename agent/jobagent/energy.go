package jobagent

import (
	"context"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/emissions"
	"github.com/jobsight/jobsight/agent/monitor"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// addEnergy starts apportioning the node's energy to the job and appends
// the energy collector to its collectors (nothing when energy is off).
func (a *Agent) addEnergy(src collector.Collector, state *monitor.NodeState) collector.Collector {
	if a.Energy == nil {
		return src
	}
	state.EnableEnergy()
	switch s := src.(type) {
	case collector.Set:
		return append(s, collector.NewEnergyCollector(a.Energy))
	case nil:
		return nil
	default:
		return collector.Set{s, collector.NewEnergyCollector(a.Energy)}
	}
}

// applyEmissions adds the CO2e of the document's energy (nothing without an
// emissions zone or an energy total).
func (a *Agent) applyEmissions(ctx context.Context, u *jobmodel.Usage) {
	if a.Emissions == nil || u.Energy == nil {
		return
	}
	f := a.Emissions.Factor(ctx)
	if f.Fallback != "" {
		a.Log.Warn("live carbon intensity unavailable; using the static factor", "zone", f.Zone, "err", f.Fallback)
	}
	emissions.Apply(u, f)
}
