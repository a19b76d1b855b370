package slurm

// This file reads `sinfo --json` (Slurm's OpenAPI data parser, v0.0.38 in
// Slurm 22.05) for the cluster-state collector. Every value is a JSON
// value of its own: a node reason cannot forge a state, a count or a
// partition. Only the fields below are decoded.

// SinfoNode is the part of a v0.0.38 node record that is read.
type SinfoNode struct {
	Name        string   `json:"name"`
	State       string   `json:"state"`       // base state, lowercase: idle, mixed, allocated, down, ...
	StateFlags  []string `json:"state_flags"` // DRAIN, NOT_RESPONDING, MAINTENANCE, RESERVED, ...
	Reason      string   `json:"reason"`
	CPUs        int64    `json:"cpus"`
	AllocCPUs   int64    `json:"alloc_cpus"`
	RealMemory  int64    `json:"real_memory"`  // MiB
	AllocMemory int64    `json:"alloc_memory"` // MiB
	Gres        string   `json:"gres"`
	GresUsed    string   `json:"gres_used"`
	Partitions  []string `json:"partitions"`
}

// SinfoAnswer is a decoded `sinfo --json` answer.
type SinfoAnswer struct {
	Envelope
	Nodes []SinfoNode `json:"nodes"`
}

func (a *SinfoAnswer) listed() bool { return a.Nodes != nil }

// DecodeSinfo decodes `sinfo --json` output. Malformed JSON, or an answer
// without a nodes list (Slurm's errors instead), is an error naming the
// command.
func DecodeSinfo(out []byte) (*SinfoAnswer, error) {
	return decodeAnswer[SinfoAnswer]("sinfo --json", "nodes", out)
}
