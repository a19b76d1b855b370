package energy

import "testing"

// The energy collector's cost per sample: RAPL on the two-socket fixture
// (4 counters) ...
func BenchmarkRAPLRead(b *testing.B) {
	r := NewRAPL(copyTree(b, "testdata/powercap/intel-xeon-2s"))
	defer r.Close()
	var rd Reading
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset()
		if err := r.Read(&rd); err != nil {
			b.Fatal(err)
		}
	}
}

// ... the node's CPU time from this machine's /proc/stat ...
func BenchmarkNodeCPURead(b *testing.B) {
	n, err := NewNodeCPU("/proc")
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := n.Read(); err != nil {
			b.Fatal(err)
		}
	}
}

// ... and the whole pass (RAPL + /proc/stat + the last power reading).
func BenchmarkMeterRead(b *testing.B) {
	m := Open(Options{SysfsRoot: copyTree(b, "testdata/powercap/intel-xeon-2s"), ProcRoot: "/proc"})
	defer m.Close()
	var rd Reading
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Read(&rd); err != nil {
			b.Fatal(err)
		}
	}
}
