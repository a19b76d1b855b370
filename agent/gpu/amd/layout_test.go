package amd

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

func words(w ...uint32) []byte {
	b := make([]byte, 24)
	for i, v := range w {
		binary.NativeEndian.PutUint32(b[4*i:], v)
	}
	return b
}

func TestParseLibVersion(t *testing.T) {
	tests := []struct {
		raw    []byte
		want   string
		layout string
		ok     bool
	}{
		{words(23, 4, 0, 0), "23.4.0.0", "ROCm 6.0", true},
		{words(24, 5, 2, 0), "24.5.2.0", "ROCm 6.1", true},
		{words(24, 6, 2, 0), "24.6.2.0", "ROCm 6.2/6.3", true},
		{words(24, 7, 1, 0), "24.7.1.0", "ROCm 6.2/6.3", true},
		{words(25, 25, 3, 0), "25.25.3.0", "ROCm 6.4/7.x", true},
		{words(26, 1, 0), "26.1.0", "ROCm 6.4/7.x", true},
		{words(25, 2, 0, 0), "25.2.0.0", "unknown", true}, // 6.4 pre-releases: layout unknown
		{words(27, 0, 0), "27.0.0", "unknown", true},      // a future ABI
		{words(0, 0, 0, 0), "", "unknown", false},
		{words(1000, 1, 1, 1), "", "unknown", false},
		{[]byte{1, 2, 3}, "", "unknown", false},
	}
	for _, tt := range tests {
		v, ok := parseLibVersion(tt.raw)
		if ok != tt.ok || (ok && v.String() != tt.want) {
			t.Errorf("parseLibVersion(%v) = %v %v, want %q %v", tt.raw[:min(len(tt.raw), 16)], v, ok, tt.want, tt.ok)
		}
		if l := layoutFor(v, ok); l.name != tt.layout {
			t.Errorf("layoutFor(%v) = %q, want %q", v, l.name, tt.layout)
		}
	}
}

// TestLayoutOffsets pins the offsets to the values offsetof gives on the
// amdsmi.h headers they were taken from (see layout.go); a change here
// must come with a new check against the headers.
func TestLayoutOffsets(t *testing.T) {
	tests := []struct {
		v    libVersion
		want layout
	}{
		{libVersion{year: 23, major: 4, hasYear: true}, layout{name: "ROCm 6.0", marketNameLen: 64, deviceIDOff: 136,
			powerCurOff: 0, powerAvgOff: 4, proc: procHandles, procStride: 224, procPidOff: 32, procVramOff: 128,
			boardSerialOff: 33, boardSerialLen: 32, umcOff: 4, xgmiReadOff: 184, xgmiWriteOff: 248}},
		{libVersion{year: 24, major: 5, hasYear: true}, layout{name: "ROCm 6.1", marketNameLen: 64, deviceIDOff: 136,
			powerCurOff: 0, powerAvgOff: 4, proc: procHandles, procStride: 224, procPidOff: 32, procVramOff: 128,
			boardSerialOff: 32, boardSerialLen: 32, umcOff: 4, xgmiReadOff: 184, xgmiWriteOff: 248}},
		{libVersion{year: 24, major: 6, minor: 2, hasYear: true}, layout{name: "ROCm 6.2/6.3", marketNameLen: 256,
			deviceIDOff: 328, powerCurOff: 0, powerAvgOff: 4, proc: procArray, procStride: 224, procPidOff: 32,
			procVramOff: 128, boardSerialOff: 256, boardSerialLen: 32, umcOff: 4, xgmiReadOff: 184, xgmiWriteOff: 248}},
		{libVersion{major: 26, minor: 1}, layout{name: "ROCm 6.4/7.x", marketNameLen: 256, deviceIDOff: 520,
			powerCurOff: 8, powerAvgOff: 12, proc: procArray, procStride: 704, procPidOff: 256, procVramOff: 352,
			boardSerialOff: 256, boardSerialLen: 256, umcOff: 4, xgmiReadOff: 184, xgmiWriteOff: 248}},
		{libVersion{major: 27}, layout{name: "unknown", marketNameLen: 64, deviceIDOff: -1, powerCurOff: -1,
			powerAvgOff: -1, proc: procNone, boardSerialOff: -1, umcOff: -1, xgmiReadOff: -1, xgmiWriteOff: -1}},
	}
	for _, tt := range tests {
		if got := layoutFor(tt.v, true); got != tt.want {
			t.Errorf("layoutFor(%v) = %+v\nwant %+v", tt.v, got, tt.want)
		}
		if l := tt.want; l.xgmiReadOff >= 0 && (l.xgmiWriteOff+8*xgmiLinks > gpuMetricsBuf || l.umcOff+4 > structBuf) {
			t.Errorf("%s: activity offsets beyond the buffers", l.name)
		}
		if tt.want.procStride > procEntryBuf {
			t.Errorf("%s: proc stride %d exceeds the per-entry buffer", tt.want.name, tt.want.procStride)
		}
	}
}

func TestFormatBDF(t *testing.T) {
	// amdsmi_bdf_t as GCC lays out its bit fields: function 0–2, device
	// 3–7, bus 8–15, domain 16–63.
	tests := []struct {
		v    uint64
		want string
		ok   bool
	}{
		{0x12c1fb, "0012:c1:1f.3", true},
		{0xc100, "0000:c1:00.0", true},
		{0x0c03, "0000:0c:00.3", true},
		{^uint64(0), "", false},
	}
	for _, tt := range tests {
		got, ok := formatBDF(tt.v)
		if got != tt.want || ok != tt.ok {
			t.Errorf("formatBDF(%#x) = %q %v", tt.v, got, ok)
		}
	}
}

func TestCString(t *testing.T) {
	b := make([]byte, 300)
	copy(b, "AMD Instinct MI250X")
	copy(b[256:], "PCB046982-0071\x00garbage")
	if s := cString(b, 0, 256); s != "AMD Instinct MI250X" {
		t.Errorf("%q", s)
	}
	if s := cString(b, 256, 32); s != "PCB046982-0071" {
		t.Errorf("%q", s)
	}
	full := []byte(strings.Repeat("x", 64) + "yyyy")
	if s := cString(full, 0, 64); len(s) != 64 {
		t.Errorf("unterminated string not cut at its field: %d bytes", len(s))
	}
	if cString(b, 400, 10) != "" || cString(b, -1, 10) != "" || cString([]byte{0xff, 0xfe, 'a'}, 0, 3) != "a" {
		t.Error("out of range or invalid UTF-8")
	}
	if u32(b, 298) != 0 || u64(b, 295) != 0 || u32(b, -4) != 0 {
		t.Error("short reads must give 0")
	}
}

func TestSocketPowerAndEnergy(t *testing.T) {
	tests := []struct {
		cur, avg uint32
		want     float64
		ok       bool
	}{
		{550, 0xFFFF, 550, true},           // MI300: current
		{0xFFFF, 383, 383, true},           // MI250X: average
		{0xFFFFFFFF, 0xFFFFFFFF, 0, false}, // 7.x "unsupported"
		{0, 0, 0, false},                   // second GCD
		{0, 412, 412, true},
	}
	for _, tt := range tests {
		got, ok := socketPower(tt.cur, tt.avg)
		if got != tt.want || ok != tt.ok {
			t.Errorf("socketPower(%#x, %#x) = %v %v", tt.cur, tt.avg, got, ok)
		}
	}
	if j, ok := energyJoules(1_000_000, 15.259); !ok || !approx(j, float64(float32(15.259))) {
		t.Errorf("energyJoules = %v %v", j, ok)
	}
	for _, res := range []float32{0, -1, float32(nanF())} {
		if _, ok := energyJoules(1, res); ok {
			t.Errorf("resolution %v accepted", res)
		}
	}
}

func nanF() float64 { return math.NaN() }

func TestStatus(t *testing.T) {
	if statusNotSupported.String() != "AMDSMI_STATUS_NOT_SUPPORTED" || status(77).String() != "AMDSMI_STATUS_77" {
		t.Error("names")
	}
	for _, s := range []status{statusNotSupported, statusNotYetImplemented, statusNoSymbol, statusNoData} {
		if !s.unsupported() || !errors.Is(check("f", s), errNotSupported) {
			t.Errorf("%v should leave the field missing without error", s)
		}
	}
	for _, s := range []status{statusInval, statusNoPerm, statusDriverNotLoaded, statusUnknownError} {
		if s.unsupported() || errors.Is(check("f", s), errNotSupported) {
			t.Errorf("%v is a failure", s)
		}
	}
	if check("f", statusSuccess) != nil {
		t.Error("success")
	}
	if got := check("amdsmi_get_power_info", statusNoPerm).Error(); got != "amdsmi_get_power_info: AMDSMI_STATUS_NO_PERM (10)" {
		t.Errorf("%q", got)
	}
}
