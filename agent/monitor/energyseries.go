package monitor

// EnergyMetric is one of the job's energy series, labelled {cluster,
// job_id, node} like the other job series: the job's share of the node's
// energy so far (docs/energy.md), a counter in joules.
type EnergyMetric struct {
	Name string
	Type string
	Help string
	get  func(*energyTotals) (float64, bool)
}

// EnergyMetrics are the job's energy series; docs/metrics.md documents
// them and a test runs promtool over them.
var EnergyMetrics = []EnergyMetric{
	{"jobsight_job_energy_joules_total", "counter", "Energy of the job on this node: its CPU-time share of RAPL CPU and DRAM energy plus its GPUs' (else its share of the node's wall energy); energy.total_joules of the node document.",
		func(t *energyTotals) (float64, bool) { return t.total, t.haveTotal }},
	{"jobsight_job_cpu_energy_joules_total", "counter", "The job's CPU-time share of the node's RAPL CPU package energy.",
		func(t *energyTotals) (float64, bool) { return t.cpu, t.haveCPU }},
	{"jobsight_job_dram_energy_joules_total", "counter", "The job's CPU-time share of the node's RAPL DRAM energy.",
		func(t *energyTotals) (float64, bool) { return t.dram, t.haveDRAM }},
	{"jobsight_job_node_energy_joules_total", "counter", "The job's CPU-time share of the node's wall energy (IPMI DCMI power).",
		func(t *energyTotals) (float64, bool) { return t.node, t.haveNode }},
}

// addEnergy appends the job's energy so far at tsMs.
func (b *Buffer) addEnergy(tsMs int64, n *NodeState) {
	if b.Energy == nil {
		b.Energy = make([][]Point, len(EnergyMetrics))
		b.energyEver = make([]bool, len(EnergyMetrics))
	}
	t := n.energyTotals()
	for i := range EnergyMetrics {
		if v, ok := EnergyMetrics[i].get(&t); ok {
			b.Energy[i] = append(b.Energy[i], Point{TimestampMs: tsMs, Value: v})
			b.energyEver[i] = true
		}
	}
}

// energySeries appends the buffered energy points as series.
func (b *Buffer) energySeries(out []Series, labels []Label) []Series {
	for i, pts := range b.Energy {
		if len(pts) > 0 {
			out = append(out, Series{Name: EnergyMetrics[i].Name, Labels: labels, Samples: pts})
		}
	}
	return out
}
