package models

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// The frontend offers exactly the cluster series the backend serves:
// CLUSTER_SERIES in src/types.ts is ClusterSeriesNames, in the same order.
func TestClusterSeriesNamesMatchTheFrontend(t *testing.T) {
	src, err := os.ReadFile("../../src/types.ts")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)export const CLUSTER_SERIES = \[(.*?)\] as const;`).FindSubmatch(src)
	if m == nil {
		t.Fatal("src/types.ts has no `export const CLUSTER_SERIES = [...] as const;`")
	}
	var ts []string
	for _, q := range regexp.MustCompile(`'([^']*)'`).FindAllSubmatch(m[1], -1) {
		ts = append(ts, string(q[1]))
	}
	if !slices.Equal(ts, ClusterSeriesNames) {
		t.Errorf("src/types.ts CLUSTER_SERIES\n%q\nis not ClusterSeriesNames\n%q", ts, ClusterSeriesNames)
	}
}
