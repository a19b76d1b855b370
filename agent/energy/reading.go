package energy

import "strings"

// Part names one node-wide quantity of a Reading.
type Part uint8

// The parts of a Reading. Their names are those used in documents'
// missing_metrics lists.
const (
	PartCPU       Part = 1 << iota // CPUJoules: RAPL package domains
	PartDRAM                       // DRAMJoules: RAPL dram domains
	PartNodeCPU                    // NodeCPUSeconds: /proc/stat
	PartNodePower                  // NodePowerWatts: IPMI DCMI
	partEnd
)

// AllParts is every part a Reading can carry.
const AllParts = partEnd - 1

var partNames = [...]string{"energy_cpu", "energy_dram", "node_cpu_time", "energy_node"}

// Names returns the names of the parts in the set, in a fixed order.
func (p Part) Names() []string {
	var out []string
	for i, n := range partNames {
		if p&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// String joins the names with "+".
func (p Part) String() string { return strings.Join(p.Names(), "+") }

// Reading is one pass's node-wide energy reading. Energies are cumulative
// since the Meter was opened (wrap-around corrected); NodeCPUSeconds is
// cumulative since boot. A part whose bit is set in Missing was not read and
// must not be used.
type Reading struct {
	CPUJoules      float64 `json:"cpu_j"`      // CPU package energy summed over sockets
	DRAMJoules     float64 `json:"dram_j"`     // DRAM energy summed over sockets
	NodeCPUSeconds float64 `json:"node_cpu_s"` // busy CPU time of the whole node (all CPUs)
	NodePowerWatts float64 `json:"node_w"`     // the latest DCMI power reading (whole node, at the wall)
	Missing        Part    `json:"missing"`
}

// Reset marks everything missing.
func (r *Reading) Reset() { *r = Reading{Missing: AllParts} }

// Has reports whether every part in p was read.
func (r *Reading) Has(p Part) bool { return r.Missing&p == 0 }
