package slurm

import (
	"encoding/json"
	"fmt"
	"slices"
)

// This file reads `sinfo --json -N` for the cluster-state collector, in
// both shapes Slurm has written: v0.0.38 (22.05) lists "nodes", one record
// per node; v0.0.40 and later (23.11 up to 26.05's v0.0.45) list "sinfo",
// one record per group of nodes sharing a partition and a state, which -N
// (node-oriented) makes one record per node and partition. Every value is
// a JSON value of its own: a node reason cannot forge a state, a count or
// a partition. Only the fields below are decoded; a field of an unknown
// shape is named in the node's Unknown, never taken as zero.

// SinfoNode is one node as the collector reads it, the same for every
// data parser version.
type SinfoNode struct {
	Name        string
	State       string   // base state: idle, mixed, allocated, down, ... (any case)
	StateFlags  []string // DRAIN, NOT_RESPONDING, MAINTENANCE, RESERVED, ...
	Reason      string
	CPUs        int64
	AllocCPUs   int64
	RealMemory  int64 // MiB
	AllocMemory int64 // MiB
	Gres        string
	GresUsed    string
	Partitions  []string
	// Unknown names the fields of a shape this reader does not know (their
	// values above are absent, not zero).
	Unknown []string
}

// SinfoAnswer is a decoded `sinfo --json` answer.
type SinfoAnswer struct {
	Envelope
	Nodes []SinfoNode
	// Grouped is true when a v0.0.40+ record held several nodes (sinfo ran
	// without -N): their figures could not be split and are named in
	// Unknown.
	Grouped bool

	listedNodes bool
}

func (a *SinfoAnswer) listed() bool { return a.listedNodes }

// UnmarshalJSON reads either shape (see decode).
func (a *SinfoAnswer) UnmarshalJSON(b []byte) error { return a.decode(b) }

// decode reads either shape; decodeAnswer calls it directly.
func (a *SinfoAnswer) decode(b []byte) error {
	var raw struct {
		Envelope
		Nodes []json.RawMessage `json:"nodes"`
		Sinfo []json.RawMessage `json:"sinfo"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*a = SinfoAnswer{Envelope: raw.Envelope, listedNodes: raw.Nodes != nil || raw.Sinfo != nil}
	for _, n := range raw.Nodes {
		node, err := sinfoNodeV38(n)
		if err != nil {
			return err
		}
		a.Nodes = append(a.Nodes, node)
	}
	byName := map[string]int{}
	for _, e := range raw.Sinfo {
		if err := a.addGroup(e, byName); err != nil {
			return err
		}
	}
	return nil
}

// sinfoFields are the fields of a v0.0.38 node record that are read,
// undecoded (the other fields are skipped without being built).
type sinfoFields struct {
	Name        json.RawMessage `json:"name"`
	State       json.RawMessage `json:"state"`
	StateFlags  json.RawMessage `json:"state_flags"`
	Reason      json.RawMessage `json:"reason"`
	CPUs        json.RawMessage `json:"cpus"`
	AllocCPUs   json.RawMessage `json:"alloc_cpus"`
	RealMemory  json.RawMessage `json:"real_memory"`
	AllocMemory json.RawMessage `json:"alloc_memory"`
	Gres        json.RawMessage `json:"gres"`
	GresUsed    json.RawMessage `json:"gres_used"`
	Partitions  json.RawMessage `json:"partitions"`
}

// sinfoNodeV38 reads a v0.0.38 node record.
func sinfoNodeV38(b []byte) (SinfoNode, error) {
	var f sinfoFields
	if err := json.Unmarshal(b, &f); err != nil {
		return SinfoNode{}, fmt.Errorf("node record: %w", err)
	}
	r := record{raw: map[string]json.RawMessage{
		"name": f.Name, "state": f.State, "state_flags": f.StateFlags, "reason": f.Reason, "cpus": f.CPUs,
		"alloc_cpus": f.AllocCPUs, "real_memory": f.RealMemory, "alloc_memory": f.AllocMemory, "gres": f.Gres,
		"gres_used": f.GresUsed, "partitions": f.Partitions,
	}}
	n := SinfoNode{
		Name: r.str("name"), State: r.str("state"), StateFlags: r.strs("state_flags"), Reason: r.str("reason"),
		CPUs: r.count("cpus"), AllocCPUs: r.count("alloc_cpus"), RealMemory: r.count("real_memory"),
		AllocMemory: r.count("alloc_memory"), Gres: r.str("gres"), GresUsed: r.str("gres_used"), Partitions: r.strs("partitions"),
	}
	// 23.02 on write state as a list of words: the first is the state.
	if n.State == "" && slices.Contains(r.unknown, "state") {
		r.unknown = slices.DeleteFunc(r.unknown, func(f string) bool { return f == "state" })
		if l := r.strs("state"); len(l) > 0 {
			n.State, n.StateFlags = l[0], append(n.StateFlags, l[1:]...)
		}
	}
	n.Unknown = r.unknown
	return n, nil
}

// addGroup reads one v0.0.40+ sinfo record into the node(s) it holds,
// merging a node's records of several partitions.
func (a *SinfoAnswer) addGroup(b []byte, byName map[string]int) error {
	var r record
	if err := r.init(b); err != nil {
		return fmt.Errorf("sinfo record: %w", err)
	}
	var names []string
	if ns := r.sub("nodes"); ns != nil {
		names = ns.strs("nodes")
		for _, f := range ns.unknown {
			r.bad("nodes." + f)
		}
	}
	var n SinfoNode
	if st := r.sub("node"); st != nil {
		if l := st.strs("state"); len(l) > 0 {
			n.State, n.StateFlags = l[0], l[1:]
		}
		for _, f := range st.unknown {
			r.bad("node." + f)
		}
	}
	if rs := r.sub("reason"); rs != nil {
		n.Reason = rs.str("description")
	} else if !r.null("reason") {
		n.Reason = r.str("reason")
	}
	if c := r.sub("cpus"); c != nil {
		n.CPUs, n.AllocCPUs = c.count("total"), c.count("allocated")
		for _, f := range c.unknown {
			r.bad("cpus." + f)
		}
	}
	if m := r.sub("memory"); m != nil {
		n.RealMemory, n.AllocMemory = m.count("maximum"), m.count("allocated")
		for _, f := range m.unknown {
			r.bad("memory." + f)
		}
	}
	if g := r.sub("gres"); g != nil {
		n.Gres, n.GresUsed = g.str("total"), g.str("used")
	}
	var part string
	if p := r.sub("partition"); p != nil {
		part = p.str("name")
	}
	if len(names) > 1 {
		// Figures of a group are its nodes' together: not split.
		a.Grouped = true
		n.CPUs, n.AllocCPUs, n.RealMemory, n.AllocMemory, n.Gres, n.GresUsed = 0, 0, 0, 0, "", ""
		r.bad("cpus")
		r.bad("memory")
		r.bad("gres")
	}
	for _, name := range names {
		if i, ok := byName[name]; ok {
			if part != "" && !slices.Contains(a.Nodes[i].Partitions, part) {
				a.Nodes[i].Partitions = append(a.Nodes[i].Partitions, part)
			}
			continue
		}
		node := n
		node.Name = name
		node.StateFlags = slices.Clone(n.StateFlags)
		node.Unknown = slices.Clone(r.unknown)
		if part != "" {
			node.Partitions = []string{part}
		}
		byName[name] = len(a.Nodes)
		a.Nodes = append(a.Nodes, node)
	}
	return nil
}

// DecodeSinfo decodes `sinfo --json` output. Malformed JSON, or an answer
// without a node list (Slurm's errors instead), is an error naming the
// command.
func DecodeSinfo(out []byte) (*SinfoAnswer, error) {
	return decodeAnswer[SinfoAnswer]("sinfo --json", "nodes", out)
}
