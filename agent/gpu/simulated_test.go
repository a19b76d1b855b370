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
	if r.Missing != 0 {
		t.Errorf("fields: missing %v, want every field simulated", r.Missing)
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

// TestSimulatedActivity checks that each profile's activity figures make
// the diagnosis it stands for, and that every figure is a fraction or a
// throughput, present, never NaN.
func TestSimulatedActivity(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	profiles := []Profile{ProfileIdle, ProfileSteady, ProfileMemoryHeavy, ProfileLaunchBound, ProfileInputBound, ProfileDropping}
	dev := map[int]Profile{}
	for i, p := range profiles {
		dev[i] = p
	}
	s, err := NewSimulated(SimConfig{Devices: len(profiles), DeviceProfiles: dev, DropAfter: time.Minute, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	held := make([]int, len(profiles))
	for i := range held {
		held[i] = i
	}
	s.Attach(held, []int32{300})
	readings := map[Profile]Reading{}
	for pass := range 40 { // the wobble stays within the bounds below
		clock.t = clock.t.Add(time.Second)
		for i, p := range profiles {
			var r Reading
			r.Reset()
			if err := s.Read(i, &r); err != nil {
				t.Fatal(err)
			}
			if r.Missing != 0 {
				t.Fatalf("%s: missing %v", p, r.Missing)
			}
			for name, v := range map[string]float64{"sm": r.SMActivity, "occupancy": r.SMOccupancy, "tensor": r.TensorActivity,
				"tensor fp64": r.TensorFP64Activity, "tensor fp16": r.TensorFP16Activity, "tensor int8": r.TensorINT8Activity,
				"fp64": r.FP64Activity, "fp32": r.FP32Activity, "fp16": r.FP16Activity, "dram": r.DRAMActivity} {
				if math.IsNaN(v) || v < 0 || v > 1 {
					t.Fatalf("%s pass %d: %s = %v", p, pass, name, v)
				}
			}
			if r.TensorFP64Activity+r.TensorFP16Activity+r.TensorINT8Activity > r.TensorActivity+1e-9 {
				t.Errorf("%s: precisions %v+%v+%v exceed the tensor activity %v", p, r.TensorFP64Activity,
					r.TensorFP16Activity, r.TensorINT8Activity, r.TensorActivity)
			}
			for _, v := range []float64{r.PCIeRxBytesPerSecond, r.PCIeTxBytesPerSecond, r.LinkRxBytesPerSecond, r.LinkTxBytesPerSecond} {
				if math.IsNaN(v) || v < 0 {
					t.Fatalf("%s: throughput %v", p, v)
				}
			}
			readings[p] = r
		}
		r := readings[ProfileIdle]
		if r.SMActivity != 0 || r.TensorActivity != 0 || r.DRAMActivity != 0 || r.PCIeRxBytesPerSecond != 0 || r.LinkRxBytesPerSecond != 0 {
			t.Errorf("idle: %+v", r)
		}
		r = readings[ProfileSteady]
		if r.UtilizationRatio < 0.85 || r.SMActivity < 0.7 || r.SMOccupancy < 0.4 || r.TensorActivity < 0.5 ||
			r.TensorFP16Activity < r.TensorActivity/2 || r.DRAMActivity < 0.3 || r.PCIeRxBytesPerSecond > 2e9 {
			t.Errorf("steady: %+v", r)
		}
		r = readings[ProfileMemoryHeavy]
		if r.UtilizationRatio > 0.05 || r.SMActivity > 0.05 || r.TensorActivity > 0.01 || r.DRAMActivity > 0.05 || r.MemoryUsedBytes == 0 {
			t.Errorf("memory-heavy: %+v", r)
		}
		// launch-bound: "busy" by utilisation, the SMs mostly idle.
		r = readings[ProfileLaunchBound]
		if r.UtilizationRatio < 0.9 || r.SMActivity > 0.15 || r.SMOccupancy > 0.1 || r.TensorActivity > 0.01 {
			t.Errorf("launch-bound: %+v", r)
		}
		// input-bound: partly busy, receiving ~20 GB/s from the host.
		r = readings[ProfileInputBound]
		if r.UtilizationRatio < 0.3 || r.UtilizationRatio > 0.4 || r.SMActivity < 0.2 || r.SMActivity > 0.3 ||
			r.PCIeRxBytesPerSecond < 18e9 || r.PCIeTxBytesPerSecond > r.PCIeRxBytesPerSecond/10 {
			t.Errorf("input-bound: %+v", r)
		}
	}
	// dropping, after drop_after: a trickle.
	clock.t = clock.t.Add(time.Minute)
	var r Reading
	r.Reset()
	if err := s.Read(5, &r); err != nil {
		t.Fatal(err)
	}
	if r.UtilizationRatio > 0.1 || r.SMActivity > 0.05 || r.TensorActivity > 0.02 || r.Missing != 0 {
		t.Errorf("dropping after drop_after: %+v", r)
	}
	// The new profiles have a job process on the device.
	for _, i := range []int{3, 4} {
		if p, err := s.Processes(i, nil); err != nil || len(p) != 1 || p[0].PID != 300 {
			t.Errorf("device %d processes %+v %v", i, p, err)
		}
	}
	for _, name := range []string{"launch-bound", "input-bound"} {
		if p, err := ParseProfile(name); err != nil || string(p) != name {
			t.Errorf("ParseProfile(%q) = %q, %v", name, p, err)
		}
	}
}
