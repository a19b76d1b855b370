package gpu

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseDeviceList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{"", nil, ""},
		{"NoDevFiles", nil, ""},
		{"0,1,2,3", []string{"0", "1", "2", "3"}, ""},
		{" 2 , 0 ", []string{"2", "0"}, ""},
		{"1,1", []string{"1"}, ""},
		{"GPU-5131a7ed-0000-4000-8000-000000000001,MIG-4f6d8f6e-2a8c-5d0e-9f77-2b7c3d1e0a11",
			[]string{"GPU-5131a7ed-0000-4000-8000-000000000001", "MIG-4f6d8f6e-2a8c-5d0e-9f77-2b7c3d1e0a11"}, ""},
		{"MIG-GPU-5131a7ed-0000-4000-8000-000000000001/1/0", []string{"MIG-GPU-5131a7ed-0000-4000-8000-000000000001/1/0"}, ""},
		{"0,,1", nil, "empty entry"},
		{"0;rm -rf /", nil, "neither an index nor a GPU UUID"},
		{"$(id)", nil, "neither"},
		{"-1", nil, "neither"},
		{strings.Repeat("0,", 9000), nil, "too long"},
	} {
		got, err := ParseDeviceList(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseDeviceList(%.40q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseDeviceList(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseDeviceList(f *testing.F) {
	for _, s := range []string{"0,1", "GPU-abc-def0", "NoDevFiles", ",", "MIG-GPU-x/1/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseDeviceList(s)
		if err != nil {
			return
		}
		for _, e := range got {
			if e == "" || strings.Contains(e, ",") || !(isIndex(e) || isUUID(e)) {
				t.Fatalf("ParseDeviceList(%q) accepted entry %q", s, e)
			}
		}
	})
}

func nodeWithMIG() []Device {
	return []Device{
		{Index: 0, Minor: 0, UUID: "GPU-aaaa0000", Vendor: VendorNVIDIA, Parent: -1},
		{Index: 1, Minor: 1, UUID: "GPU-aaaa0001", Vendor: VendorNVIDIA, Parent: -1},
		{Index: 2, Minor: 1, UUID: "MIG-bbbb0001", Vendor: VendorNVIDIA, Parent: 1, Partition: "1g.10gb"},
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	devs := nodeWithMIG()
	held, err := Resolve(devs, []string{"1", "0"})
	if err != nil || !reflect.DeepEqual(held, []int{0, 1}) {
		t.Errorf("indices: %v, %v", held, err)
	}
	// A number names a whole GPU, never a MIG instance's index.
	held, err = Resolve(devs, []string{"2"})
	if err == nil || len(held) != 0 {
		t.Errorf("index of a MIG instance resolved: %v, %v", held, err)
	}
	held, err = Resolve(devs, []string{"mig-BBBB0001"})
	if err != nil || !reflect.DeepEqual(held, []int{2}) {
		t.Errorf("MIG uuid: %v, %v", held, err)
	}
	held, err = Resolve(devs, []string{"0", "7"})
	if err == nil || !strings.Contains(err.Error(), "7") || !reflect.DeepEqual(held, []int{0}) {
		t.Errorf("unknown device: %v, %v", held, err)
	}
}

func TestDevicesList(t *testing.T) {
	t.Parallel()
	devs := nodeWithMIG()
	// Slurm's ConstrainDevices on a node with two GPUs, the job holding the second.
	list := "c 1:3 rwm\nc 1:5 rwm\nc 195:1 rwm\nc 195:255 rwm\nb 8:0 r\n"
	allowed, all, err := ParseDevicesList([]byte(list))
	if err != nil || all {
		t.Fatal(err, all)
	}
	held, ok := HeldByCgroup(devs, allowed, all)
	if !ok || !reflect.DeepEqual(held, []int{1}) {
		t.Errorf("held = %v, %v; want [1]", held, ok)
	}
	// No GPU device allowed: the job holds none.
	allowed, all, _ = ParseDevicesList([]byte("c 1:3 rwm\n"))
	if held, ok := HeldByCgroup(devs, allowed, all); !ok || len(held) != 0 {
		t.Errorf("no GPU allowed: %v, %v", held, ok)
	}
	// Unconstrained cgroups say nothing.
	allowed, all, _ = ParseDevicesList([]byte("a *:* rwm\n"))
	if _, ok := HeldByCgroup(devs, allowed, all); ok {
		t.Error("a *:* rwm taken as an allocation")
	}
	allowed, all, _ = ParseDevicesList([]byte("c 195:* rwm\n"))
	if _, ok := HeldByCgroup(devs, allowed, all); ok {
		t.Error("c 195:* taken as an allocation")
	}
	for _, bad := range []string{"c 195 rwm", "x 1:2 r", "c a:1 r", "c 1:99999999 r"} {
		if _, _, err := ParseDevicesList([]byte(bad)); err == nil {
			t.Errorf("ParseDevicesList(%q) accepted", bad)
		}
	}
}

func FuzzParseDevicesList(f *testing.F) {
	f.Add([]byte("c 195:0 rwm\na *:* rwm\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		devs, _, err := ParseDevicesList(b)
		if err == nil {
			HeldByCgroup(nodeWithMIG(), devs, false)
		}
	})
}

// Slurm's index n is the n-th GPU by device file (minor number), which
// need not be NVML's enumeration order.
func TestResolveUsesSlurmsDeviceFileOrder(t *testing.T) {
	t.Parallel()
	devs := []Device{
		{Index: 0, Minor: 2, UUID: "GPU-a", Parent: -1},
		{Index: 1, Minor: 0, UUID: "GPU-b", Parent: -1},
		{Index: 2, Minor: 1, UUID: "GPU-c", Parent: -1},
	}
	held, err := Resolve(devs, []string{"0"}) // /dev/nvidia0 = NVML index 1
	if err != nil || !reflect.DeepEqual(held, []int{1}) {
		t.Errorf("index 0 → %v, %v; want [1]", held, err)
	}
	held, _ = Resolve(devs, []string{"2", "1"})
	if !reflect.DeepEqual(held, []int{0, 2}) {
		t.Errorf("indices 2,1 → %v; want [0 2]", held)
	}
	devs[0].Minor = -1 // one minor unknown: enumeration order
	if held, _ := Resolve(devs, []string{"0"}); !reflect.DeepEqual(held, []int{0}) {
		t.Errorf("without minors: %v; want [0]", held)
	}
}
