package jobmodel

import (
	"sort"
	"strings"
)

// assembleEnergy sums the nodes' energy and emissions: joules, CPU seconds
// and grams add up; the CPU-time share and the emission factor are
// recomputed from the sums; methods, bases, zones and sources that differ
// between nodes are "+"-joined. A node without energy adds nothing (its
// missing_metrics name what it lacked).
func assembleEnergy(nodes []Node) (*EnergyUsage, *Emissions) {
	var e EnergyUsage
	var node NodeEnergy
	var methods, bases []string
	var em Emissions
	var zones, sources, providers, fallbacks []string
	found, foundEm := false, false
	for i := range nodes {
		n := nodes[i].Energy
		if n == nil {
			continue
		}
		found = true
		methods = appendNew(methods, n.Method)
		for _, b := range strings.Split(n.TotalBasis, "+") {
			bases = appendNew(bases, b)
		}
		e.CPUJoules = addPtr(e.CPUJoules, n.CPUJoules)
		e.DRAMJoules = addPtr(e.DRAMJoules, n.DRAMJoules)
		e.GPUJoules = addPtr(e.GPUJoules, n.GPUJoules)
		e.NodeJoules = addPtr(e.NodeJoules, n.NodeJoules)
		e.TotalJoules = addPtr(e.TotalJoules, n.TotalJoules)
		e.CPUSeconds = addPtr(e.CPUSeconds, n.CPUSeconds)
		e.AttributedSeconds = addPtr(e.AttributedSeconds, n.AttributedSeconds)
		if nn := n.Node; nn != nil {
			node.CPUJoules = addPtr(node.CPUJoules, nn.CPUJoules)
			node.DRAMJoules = addPtr(node.DRAMJoules, nn.DRAMJoules)
			node.WallJoules = addPtr(node.WallJoules, nn.WallJoules)
			node.CPUSeconds = addPtr(node.CPUSeconds, nn.CPUSeconds)
		}
		if m := nodes[i].Emissions; m != nil && m.CO2eGrams != nil {
			foundEm = true
			em.CO2eGrams = addPtr(em.CO2eGrams, m.CO2eGrams)
			zones = appendNew(zones, m.Zone)
			sources = appendNew(sources, m.Source)
			providers = appendNew(providers, m.Provider)
			fallbacks = appendNew(fallbacks, m.Fallback)
		}
	}
	if !found {
		return nil, nil
	}
	e.Method = joinSorted(methods)
	e.TotalBasis = joinSorted(bases)
	if e.TotalJoules != nil {
		e.TotalKWh = Ptr(*e.TotalJoules / 3.6e6)
	}
	if node != (NodeEnergy{}) {
		e.Node = &node
		if e.CPUSeconds != nil && node.CPUSeconds != nil && *node.CPUSeconds > 0 {
			e.CPUTimeShare = Ptr(Clamp01(*e.CPUSeconds / *node.CPUSeconds))
		}
	}
	if !foundEm {
		return &e, nil
	}
	if e.TotalKWh != nil && *e.TotalKWh > 0 {
		em.FactorGPerKWh = Ptr(*em.CO2eGrams / *e.TotalKWh)
	} else if len(nodes) > 0 {
		for i := range nodes {
			if m := nodes[i].Emissions; m != nil && m.FactorGPerKWh != nil {
				em.FactorGPerKWh = Ptr(*m.FactorGPerKWh)
				break
			}
		}
	}
	em.Zone, em.Source, em.Provider = joinSorted(zones), strings.Join(sources, "; "), joinSorted(providers)
	em.Fallback = strings.Join(fallbacks, "; ")
	return &e, &em
}

func joinSorted(list []string) string {
	sort.Strings(list)
	return strings.Join(list, "+")
}
