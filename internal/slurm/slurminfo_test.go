package slurm

import (
	"reflect"
	"strings"
	"testing"
)

func TestExpandHostlist(t *testing.T) {
	for in, want := range map[string][]string{
		"vm":                 {"vm"},
		"node[01-03,7],gpu1": {"node01", "node02", "node03", "node7", "gpu1"},
		"rack[1-2]-n[1-2]":   {"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"},
		"a[8-10]":            {"a8", "a9", "a10"},
		"x[001-002],y[9]":    {"x001", "x002", "y9"},
	} {
		got, err := ExpandHostlist(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ExpandHostlist(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"n[1-", "n[a-b]", "n]", "n[5-1]", "n[0-99999999]"} {
		if _, err := ExpandHostlist(bad); err == nil {
			t.Errorf("ExpandHostlist(%q) gave no error", bad)
		}
	}
}

func TestParseTRES(t *testing.T) {
	got, err := ParseTRES("cpu=2,mem=1.50G,node=1,billing=2,gres/gpu=1,gres/gpu:a100=1")
	want := TRES{CPUs: 2, MemoryBytes: 3 << 29, Nodes: 1, Billing: 2, GPUs: 1, GRES: map[string]int64{"gpu": 1, "gpu:a100": 1}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseTRES = %+v, %v; want %+v", got, err, want)
	}
	if _, err := ParseTRES("cpu=two"); err == nil || !strings.Contains(err.Error(), "cpu") {
		t.Errorf("ParseTRES(cpu=two) error %v", err)
	}
}
