package jobmodel

import (
	"math"
	"slices"
	"testing"
)

func TestAssembleSumsEnergyAndEmissions(t *testing.T) {
	t.Parallel()
	n1 := node("n1", 10, 1, 10, 100)
	n1.Energy = &EnergyUsage{Method: EnergyMethod, CPUJoules: Ptr(3.6e6), GPUJoules: Ptr(3.6e6), TotalJoules: Ptr(7.2e6), TotalKWh: Ptr(2.0),
		TotalBasis: "cpu+gpu", CPUSeconds: Ptr(30.0), Node: &NodeEnergy{CPUJoules: Ptr(7.2e6), CPUSeconds: Ptr(60.0)}}
	n1.Emissions = &Emissions{CO2eGrams: Ptr(200.0), FactorGPerKWh: Ptr(100.0), Zone: "DE", Source: "s", Provider: "static"}
	n2 := node("n2", 10, 1, 10, 100)
	n2.Energy = &EnergyUsage{Method: EnergyMethod, CPUJoules: Ptr(3.6e6), TotalJoules: Ptr(3.6e6), TotalKWh: Ptr(1.0),
		TotalBasis: "cpu", CPUSeconds: Ptr(10.0), Node: &NodeEnergy{CPUJoules: Ptr(3.6e6), CPUSeconds: Ptr(40.0)}}
	n2.Emissions = &Emissions{CO2eGrams: Ptr(400.0), FactorGPerKWh: Ptr(400.0), Zone: "DE", Source: "s", Provider: "static"}
	n3 := node("n3", 10, 1, 10, 100)
	n3.MissingMetrics = []string{"energy", "energy_cpu"}
	job := Job{Nodes: []string{"n1", "n2", "n3"}}
	Assemble(&job, []Node{n1, n2, n3})
	e := job.Energy
	if e == nil || *e.TotalJoules != 10.8e6 || *e.TotalKWh != 3 || *e.CPUJoules != 7.2e6 || *e.GPUJoules != 3.6e6 {
		t.Fatalf("energy %+v", e)
	}
	if e.Method != EnergyMethod || e.TotalBasis != "cpu+gpu" || math.Abs(*e.CPUTimeShare-0.4) > 1e-12 {
		t.Errorf("method %q basis %q share %v", e.Method, e.TotalBasis, *e.CPUTimeShare)
	}
	m := job.Emissions
	if m == nil || *m.CO2eGrams != 600 || *m.FactorGPerKWh != 200 || m.Zone != "DE" || m.Provider != "static" {
		t.Fatalf("emissions %+v", m)
	}
	if !slices.Contains(job.MissingMetrics, "energy_cpu") {
		t.Errorf("missing %v: n3's energy must stay named", job.MissingMetrics)
	}
	none := Job{}
	Assemble(&none, []Node{node("n1", 1, 1, 1, 1)})
	if none.Energy != nil || none.Emissions != nil {
		t.Error("energy from nodes that had none")
	}
}
