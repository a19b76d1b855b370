package plugin

import (
	"testing"

	"github.com/jobsight/jobsight/pkg/models"
)

// The contention weight is what other jobs want of the partition: pending
// demand weighs 1; otherwise the share of the partition other running jobs
// hold, the job's own allocation left out.
func TestContentionWeighsOthersDemand(t *testing.T) {
	cases := []struct {
		name string
		dm   demand
		own  float64
		want float64
		sig  string
	}{
		{"alone on an idle partition", demand{res: "cpu", signal: SignalClusterState, allocated: 2, capacity: 2}, 2, 0, SignalClusterState},
		{"someone waits", demand{res: "cpu", signal: SignalClusterState, pending: 1, allocated: 2, capacity: 2}, 2, 1, SignalClusterState},
		{"others hold half", demand{res: "gpu", signal: SignalClusterState, allocated: 6, capacity: 8}, 2, 0.5, SignalClusterState},
		{"series read apart", demand{res: "cpu", signal: SignalClusterState, allocated: 1, capacity: 4}, 2, 0, SignalClusterState},
		{"capacity: alone", demand{res: "gpu", signal: SignalCapacity, allocated: 4, capacity: 8, pendingUnknown: true}, 4, 0, SignalCapacity},
		{"capacity: others hold a quarter", demand{res: "gpu", signal: SignalCapacity, allocated: 4, capacity: 8, pendingUnknown: true}, 2, 0.25, SignalCapacity},
		{"no signal", demand{res: "cpu", signal: SignalNone, noneSignal: true}, 2, 1, SignalNone},
	}
	for _, c := range cases {
		got := c.dm.weigh(c.own)
		if got.weight != c.want || got.signal != c.sig {
			t.Errorf("%s: weight %g (%s, %q), want %g (%s)", c.name, got.weight, got.signal, got.detail, c.want, c.sig)
		}
	}
}

// Every series the model accepts has an expression, and no other.
func TestClusterSeriesCatalogueIsTheModelsList(t *testing.T) {
	for _, n := range models.ClusterSeriesNames {
		if _, ok := clusterSeriesCatalogue[n]; !ok {
			t.Errorf("series %s has no expression", n)
		}
	}
	if len(models.ClusterSeriesNames) != len(clusterSeriesCatalogue) {
		t.Errorf("%d expressions for %d names", len(clusterSeriesCatalogue), len(models.ClusterSeriesNames))
	}
}
