package monitor

import (
	"slices"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/aggregate"
	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/energy"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// energySample is a pass with the job's CPU and the node's readings.
func energySample(t time.Time, jobCPU float64, r energy.Reading) *collector.Sample {
	s := &collector.Sample{}
	s.Reset(t)
	s.CPUUsageNanos, s.Missing = uint64(jobCPU*1e9), collector.AllMetrics&^collector.MetricCPU
	s.Energy = r
	return s
}

func TestEnergyInTheNodeDocument(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	st := NewNodeState(t0, 5*time.Second, 0.05)
	st.EnableEnergy()
	noPower := energy.PartNodePower
	st.Add(energySample(t0, 0, energy.Reading{NodeCPUSeconds: 100, Missing: noPower}))
	st.Add(energySample(t0.Add(5*time.Second), 3, energy.Reading{CPUJoules: 600, DRAMJoules: 60, NodeCPUSeconds: 104, Missing: noPower}))
	var doc jobmodel.Node
	st.Fill(&doc, t0.Add(5*time.Second))
	e := doc.Energy
	if e == nil || e.Method != "cpu_time_share+gpu_direct" || e.TotalBasis != "cpu+dram" {
		t.Fatalf("energy %+v", e)
	}
	if *e.CPUJoules != 450 || *e.DRAMJoules != 45 || *e.TotalJoules != 495 || *e.TotalKWh != 495/3.6e6 || *e.CPUTimeShare != 0.75 {
		t.Errorf("energy %+v", e)
	}
	if e.NodeJoules != nil || e.GPUJoules != nil || *e.Node.CPUJoules != 600 {
		t.Errorf("node/gpu parts: %+v %+v", e, e.Node)
	}
	if !slices.Contains(doc.MissingMetrics, "energy_node") || slices.Contains(doc.MissingMetrics, "energy_gpu") || slices.Contains(doc.MissingMetrics, "energy") {
		t.Errorf("missing = %v, want energy_node only among the energy names", doc.MissingMetrics)
	}
}

// A node with no RAPL and no BMC (this VM): no energy object, and energy
// named missing — never a zero.
func TestNoEnergyIsNamedMissing(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	st := NewNodeState(t0, 5*time.Second, 0.05)
	st.EnableEnergy()
	only := energy.AllParts &^ energy.PartNodeCPU
	st.Add(energySample(t0, 0, energy.Reading{NodeCPUSeconds: 100, Missing: only}))
	st.Add(energySample(t0.Add(5*time.Second), 3, energy.Reading{NodeCPUSeconds: 104, Missing: only}))
	var doc jobmodel.Node
	st.Fill(&doc, t0.Add(5*time.Second))
	if doc.Energy != nil {
		t.Fatalf("energy %+v from a node that measures none", doc.Energy)
	}
	for _, m := range []string{"energy", "energy_cpu", "energy_dram", "energy_node"} {
		if !slices.Contains(doc.MissingMetrics, m) {
			t.Errorf("missing %v lacks %s", doc.MissingMetrics, m)
		}
	}
	// Energy off: nothing named.
	off := NewNodeState(t0, 5*time.Second, 0.05)
	off.Add(energySample(t0, 0, energy.Reading{Missing: energy.AllParts}))
	var d2 jobmodel.Node
	off.Fill(&d2, t0)
	for _, m := range d2.MissingMetrics {
		if m == "energy" || m == "energy_cpu" {
			t.Errorf("energy off but %s named missing", m)
		}
	}
}

// Without RAPL, the share of the node's wall energy is the total; the
// GPUs' energy, already inside it, is reported but not added.
func TestEnergyTotalFromWallPowerAndGPUs(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	st := NewNodeState(t0, 5*time.Second, 0.05)
	st.EnableEnergy()
	st.EnableGPU("simulated", "slurm", 1, 0.1)
	st.GPU.Devices = []GPUDeviceState{{EnergyMilli: energyCounter(1000, 51000)}}
	noRAPL := energy.PartCPU | energy.PartDRAM
	st.Add(energySample(t0, 0, energy.Reading{NodeCPUSeconds: 100, NodePowerWatts: 400, Missing: noRAPL}))
	st.Add(energySample(t0.Add(5*time.Second), 2, energy.Reading{NodeCPUSeconds: 104, NodePowerWatts: 400, Missing: noRAPL}))
	var doc jobmodel.Node
	st.Fill(&doc, t0.Add(5*time.Second))
	e := doc.Energy
	if e == nil || *e.NodeJoules != 1000 || *e.GPUJoules != 50 || *e.TotalJoules != 1000 || e.TotalBasis != "node" {
		t.Fatalf("energy %+v", e)
	}
	if *e.Node.WallJoules != 2000 {
		t.Errorf("node wall %v J, want 2000", *e.Node.WallJoules)
	}
}

func energyCounter(first, last uint64) (c aggregate.Counter) {
	c.Observe(first)
	c.Observe(last)
	return c
}
