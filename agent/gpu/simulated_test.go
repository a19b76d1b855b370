package gpu

import (
	"math"
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestSimulatedProfiles(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	s, err := NewSimulated(SimConfig{Devices: 8, MemoryBytes: 40 << 30, Profile: ProfileOneOfN,
		DeviceProfiles: map[int]Profile{4: ProfileSteady, 5: ProfileDropping, 6: ProfileMemoryHeavy}, DropAfter: 30 * time.Second, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range s.Devices() {
		if !d.Simulated || d.Model != SimulatedModel {
			t.Fatalf("device %d not labelled simulated: %+v", d.Index, d)
		}
	}
	// A job holding 0-3 (one-of-n) and one holding 4-7.
	s.Attach([]int{2, 0, 1, 3}, []int32{100, 105, 101})
	s.Attach([]int{4, 5, 6, 7}, []int32{200})
	read := func(i int) (Reading, []Process) {
		var r Reading
		r.Reset()
		if err := s.Read(i, &r); err != nil {
			t.Fatal(err)
		}
		p, err := s.Processes(i, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r, p
	}
	r, p := read(0)
	if r.UtilizationRatio < 0.8 || len(p) != 1 || p[0].PID != 105 || p[0].MemoryBytes == 0 {
		t.Errorf("one-of-n busy device: util %v procs %+v", r.UtilizationRatio, p)
	}
	for _, i := range []int{1, 2, 3, 7} {
		if r, p := read(i); r.UtilizationRatio != 0 || len(p) != 0 || r.MemoryUsedBytes != 0 {
			t.Errorf("device %d should be held and idle: util %v procs %v", i, r.UtilizationRatio, p)
		}
	}
	if r, p := read(6); r.UtilizationRatio > 0.1 || r.MemoryUsedBytes < 36<<30 || len(p) != 1 {
		t.Errorf("memory-heavy: util %v mem %d procs %v", r.UtilizationRatio, r.MemoryUsedBytes, p)
	}
	if r, _ := read(5); r.UtilizationRatio < 0.8 {
		t.Errorf("dropping before drop_after: %v", r.UtilizationRatio)
	}
	e0, _ := read(4)
	clock.t = clock.t.Add(time.Minute)
	if r, p := read(5); r.UtilizationRatio > 0.1 || len(p) != 1 {
		t.Errorf("dropping after drop_after: %v %v", r.UtilizationRatio, p)
	}
	e1, _ := read(4)
	// A minute at ~90 %: ~366 W → ~22 kJ.
	if d := e1.EnergyJoules - e0.EnergyJoules; d < 18000 || d > 26000 {
		t.Errorf("energy over a minute of steady load = %v J", d)
	}
	if r.Has(FieldPCIe) || !r.Has(FieldUtilization|FieldEnergy|FieldPower) {
		t.Errorf("fields: missing %v", r.Missing)
	}
	if math.IsNaN(r.PowerWatts) {
		t.Error("NaN power")
	}
	// A device no job attached to is idle.
	s2, _ := NewSimulated(SimConfig{Devices: 1, Profile: ProfileSteady, Now: clock.now})
	var r2 Reading
	r2.Reset()
	_ = s2.Read(0, &r2)
	if r2.UtilizationRatio != 0 {
		t.Errorf("unattached steady device busy: %v", r2.UtilizationRatio)
	}
	if err := s.Read(8, &r2); err == nil {
		t.Error("reading device 8 of 8 succeeded")
	}
}

func TestSimulatedConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  SimConfig
		want string
	}{
		{SimConfig{Devices: 0}, "devices 0"},
		{SimConfig{Devices: 65}, "devices 65"},
		{SimConfig{Devices: 2, Profile: "busy"}, `unknown simulated GPU profile "busy"`},
		{SimConfig{Devices: 2, DeviceProfiles: map[int]Profile{2: ProfileIdle}}, "device 2"},
		{SimConfig{Devices: 2, DeviceProfiles: map[int]Profile{1: "x"}}, "device 1"},
	} {
		if _, err := NewSimulated(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSimulated(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
