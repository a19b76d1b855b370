package amd

import (
	"math"
	"slices"
	"testing"

	"github.com/jobsight/jobsight/agent/gpu"
)

func TestPartitionOf(t *testing.T) {
	tests := []struct {
		d    devInfo
		want string
	}{
		{devInfo{model: "AMD Instinct MI250X", deviceID: 0x740c}, "GCD"},
		{devInfo{model: "Aldebaran/MI200 [Instinct MI250X/MI250]"}, "GCD"},
		{devInfo{deviceID: 0x740c}, "GCD"},
		{devInfo{model: "AMD Instinct MI210", deviceID: 0x740f}, ""},
		{devInfo{model: "AMD Instinct MI300X", mode: "SPX"}, ""},
		{devInfo{model: "AMD Instinct MI300X", mode: "CPX"}, "CPX"},
		{devInfo{model: "AMD Instinct MI300X", mode: "dpx"}, "DPX"},
		{devInfo{model: "AMD Instinct MI300A", mode: "AMDSMI_COMPUTE_PARTITION_TPX"}, "TPX"},
		{devInfo{model: "AMD Instinct MI325X", mode: "QPX"}, "QPX"},
		{devInfo{model: "AMD Instinct MI300X", mode: "N/A"}, ""},
	}
	for _, tt := range tests {
		if got := partitionOf(tt.d); got != tt.want {
			t.Errorf("partitionOf(%+v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	if memoryMode(" nps4 ") != "NPS4" || memoryMode("N/A") != "" {
		t.Error("memoryMode")
	}
}

func TestPCIDevice(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"0000:0c:00.3", "0000:0c:00", true},
		{"0000:C1:00.0", "0000:c1:00", true},
		{"0001:01:1f.7", "0001:01:1f", true},
		{"0000:0c:00", "", false},
		{"0c:00.0", "", false},
		{"0000:0c:00.10", "", false},
		{"0000:zz:00.0", "", false},
		{"N/A", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := pciDevice(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("pciDevice(%q) = %q %v", tt.in, got, ok)
		}
	}
}

func mi250x(serials ...string) []devInfo {
	var d []devInfo
	for i, s := range serials {
		d = append(d, devInfo{model: "AMD Instinct MI250X", deviceID: mi200DeviceID,
			bdf: []string{"0000:c1:00.0", "0000:c6:00.0", "0000:c9:00.0", "0000:ce:00.0"}[i%4], serial: s})
	}
	return d
}

func TestPowerGroups(t *testing.T) {
	tests := []struct {
		name string
		devs []devInfo
		want [][]int
	}{
		{"MI250X by serial", mi250x("A", "B", "A", "B"), [][]int{{0, 2}, {1, 3}}},
		{"MI250X serials missing: pairs", mi250x("A", "N/A", "B", "B"), [][]int{{0, 1}, {2, 3}}},
		{"MI250X one serial for all: pairs", mi250x("X", "X", "X", "X"), [][]int{{0, 1}, {2, 3}}},
		{"MI250X zero serials: pairs", mi250x("0", "0", "0x0", "0x0"), [][]int{{0, 1}, {2, 3}}},
		{"MI250X odd count", mi250x("", "", ""), [][]int{{0, 1}, {2}}},
		{"MI300X CPX by PCI device", []devInfo{
			{mode: "CPX", bdf: "0000:0c:00.0"}, {mode: "CPX", bdf: "0000:0c:00.1"},
			{mode: "CPX", bdf: "0000:22:00.0"}, {mode: "CPX", bdf: "0000:0c:00.2"},
			{mode: "CPX", bdf: "N/A"}, {mode: "CPX", bdf: "0000:22:00.1"},
		}, [][]int{{0, 1, 3}, {2, 5}, {4}}},
		{"whole GPUs", []devInfo{{model: "AMD Instinct MI210"}, {mode: "SPX", bdf: "0000:0c:00.0"}, {model: "MI300X"}},
			[][]int{{0}, {1}, {2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			groupOf, members := powerGroups(tt.devs)
			if !slices.EqualFunc(members, tt.want, slices.Equal) {
				t.Errorf("members %v, want %v", members, tt.want)
			}
			for g, m := range members {
				for _, pos := range m {
					if groupOf[pos] != g {
						t.Errorf("groupOf[%d] = %d, want %d", pos, groupOf[pos], g)
					}
				}
			}
		})
	}
}

func reading(set func(r *gpu.Reading)) gpu.Reading {
	var r gpu.Reading
	r.Reset()
	set(&r)
	return r
}

func withPower(w float64) func(*gpu.Reading) {
	return func(r *gpu.Reading) { r.PowerWatts = w; r.Set(gpu.FieldPower) }
}

func withEnergy(j float64) func(*gpu.Reading) {
	return func(r *gpu.Reading) { r.EnergyJoules = j; r.Set(gpu.FieldEnergy) }
}

func TestSanitize(t *testing.T) {
	tests := []struct {
		name    string
		set     func(r *gpu.Reading)
		missing gpu.Field // among the fields set
	}{
		{"ok", func(r *gpu.Reading) {
			r.UtilizationRatio, r.MemoryUsedBytes, r.MemoryTotalBytes = 0.5, 10, 20
			r.PowerWatts, r.EnergyJoules, r.TemperatureCelsius, r.SMClockHz, r.MemClockHz = 300, 1e6, 45, 1.7e9, 1.6e9
			r.Missing = gpu.FieldPCIe
		}, 0},
		{"utilisation above 100 %", func(r *gpu.Reading) { r.UtilizationRatio = 1.5; r.Set(gpu.FieldUtilization) }, gpu.FieldUtilization},
		{"utilisation negative", func(r *gpu.Reading) { r.UtilizationRatio = -0.1; r.Set(gpu.FieldUtilization) }, gpu.FieldUtilization},
		{"utilisation NaN", func(r *gpu.Reading) { r.UtilizationRatio = math.NaN(); r.Set(gpu.FieldUtilization) }, gpu.FieldUtilization},
		{"utilisation 0 and 1 are fine", func(r *gpu.Reading) { r.UtilizationRatio = 1; r.Set(gpu.FieldUtilization) }, 0},
		{"used above total", func(r *gpu.Reading) {
			r.MemoryUsedBytes, r.MemoryTotalBytes = 21, 20
			r.Set(gpu.FieldMemoryUsed | gpu.FieldMemoryTotal)
		}, gpu.FieldMemoryUsed | gpu.FieldMemoryTotal},
		{"used equal to total", func(r *gpu.Reading) {
			r.MemoryUsedBytes, r.MemoryTotalBytes = 20, 20
			r.Set(gpu.FieldMemoryUsed | gpu.FieldMemoryTotal)
		}, 0},
		{"total 0", func(r *gpu.Reading) { r.Set(gpu.FieldMemoryTotal) }, gpu.FieldMemoryTotal},
		{"used without total", func(r *gpu.Reading) { r.MemoryUsedBytes = 5; r.Set(gpu.FieldMemoryUsed) }, 0},
		{"0 W", withPower(0), gpu.FieldPower},
		{"65535 W", withPower(65535), gpu.FieldPower},
		{"0 J", withEnergy(0), gpu.FieldEnergy},
		{"0 °C", func(r *gpu.Reading) { r.Set(gpu.FieldTemperature) }, gpu.FieldTemperature},
		{"255 °C", func(r *gpu.Reading) { r.TemperatureCelsius = 255; r.Set(gpu.FieldTemperature) }, gpu.FieldTemperature},
		{"0 Hz", func(r *gpu.Reading) { r.Set(gpu.FieldSMClock | gpu.FieldMemClock) }, gpu.FieldSMClock | gpu.FieldMemClock},
	}
	for _, tt := range tests {
		r := reading(tt.set)
		set := ^r.Missing & gpu.AllFields
		sanitize(&r)
		if got := r.Missing & set; got != tt.missing {
			t.Errorf("%s: marked missing %v, want %v", tt.name, got, tt.missing)
		}
		if r.Missing&gpu.FieldPower != 0 && r.PowerWatts != 0 || r.Missing&gpu.FieldMemoryTotal != 0 && r.MemoryTotalBytes != 0 {
			t.Errorf("%s: a missing field kept its value: %+v", tt.name, r)
		}
	}
}

func TestCheckerAttributesOnce(t *testing.T) {
	// One MI250X package (GCDs 0, 1) and one whole GPU (2).
	devs := append(mi250x("S", "S"), devInfo{model: "AMD Instinct MI210"})
	c := newChecker(devs)
	if !c.shared(0) || !c.shared(1) || c.shared(2) {
		t.Fatal("shared")
	}

	// The second GCD is read first and says 0 W; the first reports the
	// package. The owner becomes GCD 0, and GCD 1 stays without power.
	r1 := reading(withPower(0))
	c.apply(1, &r1)
	r0 := reading(func(r *gpu.Reading) { withPower(500)(r); withEnergy(100)(r) })
	c.apply(0, &r0)
	if r1.Has(gpu.FieldPower) || !r0.Has(gpu.FieldPower|gpu.FieldEnergy) || c.owner[c.groupOf[0]] != 0 {
		t.Fatalf("r0 %v r1 %v owner %v", r0.Missing, r1.Missing, c.owner)
	}
	if !c.skipPower(1) || c.skipPower(0) || c.skipPower(2) {
		t.Error("skipPower")
	}
	// Both GCDs report the package (duplicated): only the owner keeps it.
	r1 = reading(func(r *gpu.Reading) { withPower(500)(r); withEnergy(100)(r) })
	c.apply(1, &r1)
	if r1.Has(gpu.FieldPower) || r1.Has(gpu.FieldEnergy) || r1.PowerWatts != 0 {
		t.Errorf("duplicate package power kept on GCD 1: %+v", r1)
	}
	// A whole GPU is its own domain.
	r2 := reading(withPower(250))
	c.apply(2, &r2)
	if !r2.Has(gpu.FieldPower) {
		t.Error("whole GPU lost its power")
	}
}

func TestCheckerPrime(t *testing.T) {
	devs := []devInfo{
		{mode: "CPX", bdf: "0000:0c:00.0"}, {mode: "CPX", bdf: "0000:0c:00.1"},
		{mode: "CPX", bdf: "0000:22:00.0"}, {mode: "CPX", bdf: "0000:22:00.1"},
		{mode: "CPX", bdf: "0000:33:00.0"}, {mode: "CPX", bdf: "0000:33:00.1"},
	}
	c := newChecker(devs)
	c.prime([]gpu.Reading{
		reading(func(*gpu.Reading) {}), reading(withPower(200)), // power on the second partition
		reading(withEnergy(5)), reading(withPower(300)), // power wins over energy
		reading(func(*gpu.Reading) {}), reading(func(*gpu.Reading) {}), // nothing: undecided
	})
	if !slices.Equal(c.owner, []int{1, 3, -1}) {
		t.Errorf("owners %v", c.owner)
	}
}

func TestCheckerEnergyMonotonic(t *testing.T) {
	c := newChecker([]devInfo{{model: "AMD Instinct MI210"}})
	for i, step := range []struct {
		joules float64
		ok     bool
	}{
		{1000, true},
		{1500, true},
		{1500, true}, // equal is not backwards
		{1200, false},
		{1300, true}, // the reset value is the new reference
		{10, false},
	} {
		r := reading(withEnergy(step.joules))
		c.apply(0, &r)
		if r.Has(gpu.FieldEnergy) != step.ok {
			t.Errorf("step %d (%v J): reported %v, want %v", i, step.joules, r.Has(gpu.FieldEnergy), step.ok)
		}
		if !step.ok && r.EnergyJoules != 0 {
			t.Errorf("step %d: missing energy holds %v", i, r.EnergyJoules)
		}
	}
}
