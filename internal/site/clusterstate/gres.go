package clusterstate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Gres is one entry of a Slurm gres string: "gpu:a100:4(IDX:0-3)" is
// name gpu, type a100, count 4, detail "IDX:0-3".
type Gres struct {
	Name   string
	Type   string // empty when untyped ("gpu:2")
	Count  int64
	Detail string // what the parentheses held (S:0-1, IDX:0-3, IDX:N/A), without them
}

// UntypedGPU is the type label of GPUs whose gres names no type ("gpu:2").
const UntypedGPU = "untyped"

// maxGresCount bounds a count so sums over thousands of nodes cannot
// overflow (no node has 2^40 of anything countable).
const maxGresCount = 1 << 40

// ParseGres parses a node's gres string as sinfo --json gives it in gres
// and gres_used: comma-separated entries name[:type][:count][(detail)],
// e.g. "gpu:rtx8000:8(S:0-1)", "gpu:a100:4(IDX:0-3)", "gpu:2",
// "gpu:a100:1(IDX:0),gpu:v100:0(IDX:N/A),mps:100". Commas inside the
// parentheses ("IDX:0,2-3") belong to the entry. Counts may carry a
// K/M/G/T/P suffix (powers of 1024, as Slurm prints them). "", "(null)"
// and "N/A" mean none. A malformed entry is an error quoting it.
func ParseGres(s string) ([]Gres, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "(null)" || s == "N/A" {
		return nil, nil
	}
	var out []Gres
	depth, start := 0, 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			switch s[i] {
			case '(':
				depth++
				continue
			case ')':
				if depth == 0 {
					return nil, fmt.Errorf("gres %q: unbalanced ')'", clip(s))
				}
				depth--
				continue
			case ',':
				if depth > 0 {
					continue
				}
			default:
				continue
			}
		}
		if depth != 0 {
			return nil, fmt.Errorf("gres %q: unbalanced '('", clip(s))
		}
		g, err := parseGresEntry(s[start:i])
		if err != nil {
			return nil, fmt.Errorf("gres %q: %w", clip(s), err)
		}
		out = append(out, g)
		start = i + 1
	}
	return out, nil
}

// parseGresEntry parses one entry, name[:type][:count][(detail)].
func parseGresEntry(e string) (Gres, error) {
	e = strings.TrimSpace(e)
	var g Gres
	if i := strings.IndexByte(e, '('); i >= 0 {
		if !strings.HasSuffix(e, ")") {
			return g, fmt.Errorf("entry %q: text after ')'", e)
		}
		g.Detail = e[i+1 : len(e)-1]
		e = e[:i]
	}
	if e == "" {
		return g, errors.New("empty entry")
	}
	parts := strings.Split(e, ":")
	for _, p := range parts {
		if p == "" {
			return g, fmt.Errorf("entry %q: empty field", e)
		}
		if strings.ContainsAny(p, " \t()") {
			return g, fmt.Errorf("entry %q: unexpected character in %q", e, p)
		}
	}
	g.Name, g.Count = parts[0], 1
	rest := parts[1:]
	// "gpu:a100:no_consume:4" (flags between type and count) is not
	// printed by 22.05, but a flag word is skipped rather than taken for a
	// type.
	if n := len(rest); n > 0 {
		if c, ok := parseCount(rest[n-1]); ok {
			g.Count = c
			rest = rest[:n-1]
		} else if n >= 2 {
			return g, fmt.Errorf("entry %q: count %q is not a number", e, rest[n-1])
		}
	}
	switch len(rest) {
	case 0:
	case 1:
		g.Type = rest[0]
	default:
		g.Type = rest[0]
		for _, f := range rest[1:] {
			if f != "no_consume" {
				return g, fmt.Errorf("entry %q: too many fields", e)
			}
		}
	}
	return g, nil
}

// parseCount parses a gres count: digits with an optional K/M/G/T/P
// multiplier.
func parseCount(s string) (int64, bool) {
	mult := int64(1)
	if n := len(s); n > 1 {
		switch s[n-1] {
		case 'K', 'k':
			mult = 1 << 10
		case 'M', 'm':
			mult = 1 << 20
		case 'G', 'g':
			mult = 1 << 30
		case 'T', 't':
			mult = 1 << 40
		case 'P', 'p':
			mult = 1 << 50
		}
		if mult > 1 {
			s = s[:n-1]
		}
	}
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > maxGresCount/mult {
		return 0, false
	}
	return v * mult, true
}

// GPUsByType sums the gpu entries of a gres list by type (UntypedGPU for
// untyped ones). Other gres (mps, shard, ...) are left out.
func GPUsByType(gres []Gres) map[string]int64 {
	var m map[string]int64
	for _, g := range gres {
		if g.Name != "gpu" {
			continue
		}
		if m == nil {
			m = map[string]int64{}
		}
		t := g.Type
		if t == "" {
			t = UntypedGPU
		}
		m[t] += g.Count
	}
	return m
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
