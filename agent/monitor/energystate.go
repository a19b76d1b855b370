package monitor

import (
	"github.com/jobsight/jobsight/agent/energy"
	"github.com/jobsight/jobsight/internal/jobmodel"
)

// EnableEnergy starts apportioning the node's energy to the job
// (docs/energy.md); the energy collector must run in the job's set.
func (n *NodeState) EnableEnergy() {
	if n.Energy == nil {
		n.Energy = &energy.Split{}
	}
}

// energyTotals are the job's energy parts on this node so far.
type energyTotals struct {
	cpu, dram, node, gpu, total          float64
	haveCPU, haveDRAM, haveNode, haveGPU bool
	haveTotal                            bool
}

// energyTotals sums what the split apportioned and the job's own GPUs'
// energy. The total is cpu + dram + gpu when RAPL was read; else the share
// of the node's wall energy (which holds the GPUs' power already); else the
// GPUs' alone.
func (n *NodeState) energyTotals() energyTotals {
	var t energyTotals
	if s := n.Energy; s != nil {
		t.cpu, t.haveCPU = s.CPUJoules, s.Attributed&energy.PartCPU != 0
		t.dram, t.haveDRAM = s.DRAMJoules, s.Attributed&energy.PartDRAM != 0
		t.node, t.haveNode = s.NodeJoules, s.Attributed&energy.PartNodePower != 0
	}
	t.gpu, t.haveGPU = n.gpuEnergy()
	switch {
	case t.haveCPU:
		t.total, t.haveTotal = t.cpu, true
		if t.haveDRAM {
			t.total += t.dram
		}
		if t.haveGPU {
			t.total += t.gpu
		}
	case t.haveNode:
		t.total, t.haveTotal = t.node, true
	case t.haveGPU:
		t.total, t.haveTotal = t.gpu, true
	}
	return t
}

// gpuEnergy is the energy of the job's own GPUs while watched, as in the
// GPU entries of the document.
func (n *NodeState) gpuEnergy() (float64, bool) {
	if n.GPU == nil {
		return 0, false
	}
	var sum float64
	have := false
	for i := range n.GPU.Devices {
		c := &n.GPU.Devices[i].EnergyMilli
		if inc, ok := c.Increase(); ok && c.Observations > 1 {
			sum += float64(inc) / 1000
			have = true
		}
	}
	return sum, have
}

// fillEnergy writes the job's energy on this node into doc and names what
// could not be measured.
func (n *NodeState) fillEnergy(doc *jobmodel.Node) {
	s := n.Energy
	t := n.energyTotals()
	hasGPUs := n.GPU != nil && (len(n.GPU.Devices) > 0 || n.GPU.Held > 0)
	for _, m := range []struct {
		name string
		have bool
	}{{"energy_cpu", t.haveCPU}, {"energy_dram", t.haveDRAM}, {"energy_node", t.haveNode}, {"energy_gpu", t.haveGPU || !hasGPUs}, {"energy", t.haveTotal}} {
		if !m.have {
			doc.MissingMetrics = appendUnique(doc.MissingMetrics, m.name)
		}
	}
	if s.Seen&energy.PartNodeCPU == 0 {
		doc.MissingMetrics = appendUnique(doc.MissingMetrics, "node_cpu_time")
	}
	if !t.haveTotal {
		return
	}
	e := jobmodel.EnergyUsage{Method: jobmodel.EnergyMethod, TotalJoules: jobmodel.Ptr(t.total), TotalKWh: jobmodel.Ptr(t.total / 3.6e6)}
	var basis []string
	node := jobmodel.NodeEnergy{}
	if t.haveCPU {
		e.CPUJoules, node.CPUJoules = jobmodel.Ptr(t.cpu), jobmodel.Ptr(s.NodeCPUJoules)
		basis = append(basis, "cpu")
	}
	if t.haveDRAM {
		e.DRAMJoules, node.DRAMJoules = jobmodel.Ptr(t.dram), jobmodel.Ptr(s.NodeDRAMJoules)
		if t.haveCPU {
			basis = append(basis, "dram")
		}
	}
	if t.haveNode {
		e.NodeJoules, node.WallJoules = jobmodel.Ptr(t.node), jobmodel.Ptr(s.NodeWallJoules)
		if !t.haveCPU {
			basis = append(basis, "node")
		}
	}
	if t.haveGPU {
		e.GPUJoules = jobmodel.Ptr(t.gpu)
		if t.haveCPU || !t.haveNode {
			basis = append(basis, "gpu")
		}
	}
	for i, b := range basis {
		if i > 0 {
			e.TotalBasis += "+"
		}
		e.TotalBasis += b
	}
	if s.Intervals > 0 {
		e.CPUSeconds = jobmodel.Ptr(s.JobCPUSeconds)
		e.AttributedSeconds = jobmodel.Ptr(s.Seconds)
		node.CPUSeconds = jobmodel.Ptr(s.NodeCPUSeconds)
		if s.NodeCPUSeconds > 0 {
			e.CPUTimeShare = jobmodel.Ptr(min(1, s.JobCPUSeconds/s.NodeCPUSeconds))
		}
		e.Node = &node
	}
	doc.Energy = &e
}
