package energy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// node is a shared node on fixture files: RAPL from the two-socket tree,
// /proc/stat rewritten per pass, a BMC reading 300 W.
type node struct {
	t     *testing.T
	sys   string
	proc  string
	meter *Meter
}

func newNode(t *testing.T) *node {
	n := &node{t: t, sys: copyTree(t, "testdata/powercap/intel-xeon-2s"), proc: t.TempDir()}
	n.setStat(1000)
	n.setRAPL("intel-rapl:0", raplRange-700_000_000) // 700 J below its range
	power := NewPowerMeter(func(context.Context) ([]byte, error) {
		return []byte("Instantaneous power reading: 300 Watts\n"), nil
	}, PowerOptions{Interval: time.Minute, Timeout: time.Second})
	power.ReadOnce(context.Background())
	n.meter = Open(Options{SysfsRoot: n.sys, ProcRoot: n.proc, Power: power})
	t.Cleanup(func() { n.meter.Close() })
	return n
}

// setStat writes /proc/stat with busy seconds of CPU time (user only).
func (n *node) setStat(busySeconds float64) {
	line := fmt.Sprintf("cpu  %d 0 0 999999 0 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n", int64(busySeconds*userHZ))
	if err := os.WriteFile(filepath.Join(n.proc, "stat"), []byte(line), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// raplRange is the packages' max_energy_range_uj in the fixture.
const raplRange = 262143328850

// setRAPL writes a zone's energy_uj.
func (n *node) setRAPL(zone string, uj uint64) {
	p := filepath.Join(n.sys, "class/powercap", zone, "energy_uj")
	if err := os.WriteFile(p, []byte(fmt.Sprintf("%d\n", uj)), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// Two jobs share a node. Over each interval each gets the fraction of the
// node's RAPL and wall energy that its CPU time is of the node's busy CPU
// time; what neither job used (the system's share) is left unattributed.
func TestTwoJobsShareANode(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	var a, b Split
	var r Reading
	t0 := time.Unix(1_700_000_000, 0)
	pass := func(t time.Time, jobA, jobB float64) {
		if err := n.meter.Read(&r); err != nil {
			n.t.Fatal(err)
		}
		a.Add(t, uint64(jobA*1e9), true, &r)
		b.Add(t, uint64(jobB*1e9), true, &r)
	}
	// Pass 0: the baseline.
	pass(t0, 100, 50)
	// Interval 1 (5 s): the node busy 20 CPU-seconds, A 15, B 5.
	// Package energy +1000 J (600 + 400), DRAM +100 J.
	n.setStat(1020)
	n.setRAPL("intel-rapl:0", raplRange-100_000_000)
	n.setRAPL("intel-rapl:1", 5_000_000+400_000_000)
	n.setRAPL("intel-rapl:0:0", 40_000_000_000+60_000_000)
	n.setRAPL("intel-rapl:1:0", 41_000_000_000+40_000_000)
	pass(t0.Add(5*time.Second), 115, 55)
	// Interval 2 (5 s): package 0 wraps; the node busy 10, A 4, B 4 (the
	// system 2). Package energy +500 J, DRAM +50 J.
	n.setStat(1030)
	n.setRAPL("intel-rapl:0", 200_000_000) // wrapped: 100 J up to its range, then 200 J
	n.setRAPL("intel-rapl:1", 5_000_000+400_000_000+200_000_000)
	n.setRAPL("intel-rapl:0:0", 40_000_000_000+60_000_000+25_000_000)
	n.setRAPL("intel-rapl:1:0", 41_000_000_000+40_000_000+25_000_000)
	pass(t0.Add(10*time.Second), 119, 59)

	const pkg1, pkg2, dram1, dram2, wall = 1000, 500, 100, 50, 300 * 5
	for _, c := range []struct {
		name           string
		s              *Split
		share1, share2 float64
	}{{"A", &a, 0.75, 0.4}, {"B", &b, 0.25, 0.4}} {
		s := c.s
		if s.Intervals != 2 || !near(s.Seconds, 10) {
			t.Errorf("%s: %d intervals over %v s", c.name, s.Intervals, s.Seconds)
		}
		if want := c.share1*pkg1 + c.share2*pkg2; !approx(s.CPUJoules, want) {
			t.Errorf("%s: cpu %v J, want %v", c.name, s.CPUJoules, want)
		}
		if want := c.share1*dram1 + c.share2*dram2; !approx(s.DRAMJoules, want) {
			t.Errorf("%s: dram %v J, want %v", c.name, s.DRAMJoules, want)
		}
		if want := (c.share1 + c.share2) * wall; !approx(s.NodeJoules, want) {
			t.Errorf("%s: node %v J, want %v", c.name, s.NodeJoules, want)
		}
		if !near(s.NodeCPUSeconds, 30) || s.Attributed != PartCPU|PartDRAM|PartNodePower {
			t.Errorf("%s: node cpu %v s, attributed %v", c.name, s.NodeCPUSeconds, s.Attributed)
		}
	}
	// The shares never exceed the node; the system's 2 CPU-seconds of
	// interval 2 keep 20 % of its energy unattributed.
	if sum, node := a.CPUJoules+b.CPUJoules, a.NodeCPUJoules; !approx(node, pkg1+pkg2) || !approx(sum, node-0.2*pkg2) {
		t.Errorf("jobs' cpu energy %v J, node's %v J", sum, node)
	}
}

func approx(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

// An interval without the job's or the node's CPU time is skipped, not
// guessed; a job CPU counter that went back (a recreated cgroup) too.
func TestSplitSkipsIntervalsItCannotApportion(t *testing.T) {
	t.Parallel()
	var s Split
	t0 := time.Unix(0, 0)
	r := Reading{CPUJoules: 0, NodeCPUSeconds: 0}
	s.Add(t0, 0, true, &r)
	r = Reading{CPUJoules: 100, NodeCPUSeconds: 10}
	s.Add(t0.Add(time.Second), 0, false, &r) // job CPU unread
	r = Reading{CPUJoules: 200, NodeCPUSeconds: 20}
	s.Add(t0.Add(2*time.Second), 5e9, true, &r) // no valid previous point
	r = Reading{CPUJoules: 300, NodeCPUSeconds: 30}
	s.Add(t0.Add(3*time.Second), 1e9, true, &r) // counter went back
	r = Reading{CPUJoules: 400, NodeCPUSeconds: 40, Missing: PartNodePower | PartDRAM}
	s.Add(t0.Add(4*time.Second), 6e9, true, &r)
	if s.Intervals != 1 || !near(s.CPUJoules, 50) {
		t.Errorf("intervals %d, cpu %v J; want 1 interval and 50 J", s.Intervals, s.CPUJoules)
	}
	if s.Attributed != PartCPU {
		t.Errorf("attributed %v, want energy_cpu only", s.Attributed)
	}
}

func TestShare(t *testing.T) {
	t.Parallel()
	for _, c := range [][3]float64{{0, 0, 0}, {0, 5, 0}, {1, 4, 0.25}, {5, 4, 1}, {0.01, 0, 1}} {
		if got := Share(c[0], c[1]); got != c[2] {
			t.Errorf("Share(%v, %v) = %v, want %v", c[0], c[1], got, c[2])
		}
	}
}
