package collector

import (
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/energy"
)

// The energy collector fills only Sample.Energy: node readings never make
// a gone job look present.
func TestEnergyCollectorFillsOnlyEnergy(t *testing.T) {
	t.Parallel()
	m := energy.Open(energy.Options{SysfsRoot: "../energy/testdata/powercap/intel-xeon-2s", ProcRoot: "../energy/testdata/proc"})
	defer m.Close()
	c := NewEnergyCollector(m)
	var s Sample
	s.Reset(time.Now())
	if err := c.Collect(&s); err != nil {
		t.Fatal(err)
	}
	if s.Missing != AllMetrics || c.Name() != "energy" {
		t.Errorf("job metrics touched: missing %v", s.Missing)
	}
	if !s.Energy.Has(energy.PartCPU|energy.PartDRAM|energy.PartNodeCPU) || s.Energy.Has(energy.PartNodePower) {
		t.Errorf("energy %+v: want cpu, dram and node cpu read, no node power", s.Energy)
	}
	if s.Energy.NodeCPUSeconds <= 0 {
		t.Errorf("node cpu %v", s.Energy.NodeCPUSeconds)
	}
}
