package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ByteSize is a size in bytes written as a number or with a unit
// ("64MiB", "1G", "512KB").
type ByteSize int64

// UnmarshalYAML parses a size.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*b = ByteSize(v)
	return nil
}

var sizeRE = regexp.MustCompile(`^\s*([0-9]+)\s*([KMGT]?)(I?B?)\s*$`)

// ParseByteSize parses "123", "64MiB", "64M", "1GB" (binary multiples).
func ParseByteSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(strings.ToUpper(s))
	if m == nil {
		return 0, fmt.Errorf("size %q: want a number of bytes, optionally with K, M, G or T (e.g. 64MiB)", s)
	}
	v, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	shift := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[m[2]]
	if v > (1<<62)>>shift {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return v << shift, nil
}
