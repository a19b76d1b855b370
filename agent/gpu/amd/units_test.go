package amd

import (
	"encoding/json"
	"math"
	"testing"
)

func TestParseQuantity(t *testing.T) {
	tests := []struct {
		in   any
		v    float64
		unit string
		ok   bool
	}{
		{json.Number("383"), 383, "", true},
		{json.Number("15.259"), 15.259, "", true},
		{float64(12), 12, "", true},
		{map[string]any{"value": json.Number("383"), "unit": "W"}, 383, "W", true},
		{map[string]any{"value": "N/A", "unit": "W"}, 0, "", false},
		{map[string]any{"value": map[string]any{"value": json.Number("1")}}, 0, "", false},
		{map[string]any{"unit": "W"}, 0, "", false},
		{map[string]any{"value": json.Number("7"), "unit": json.Number("3")}, 7, "", true},
		{"123 W", 123, "W", true},
		{"123W", 123, "W", true},
		{" 45 % ", 45, "%", true},
		{"40 °C", 40, "°C", true},
		{"1.5GB", 1.5, "GB", true},
		{"-3", -3, "", true},
		{"1e3 MHz", 1000, "MHz", true},
		{"N/A", 0, "", false},
		{"n/a", 0, "", false},
		{"", 0, "", false},
		{"NaN", 0, "", false},
		{"Inf W", 0, "", false},
		{"1e999", 0, "", false},
		{"twelve", 0, "", false},
		{"W 12", 0, "", false},
		{nil, 0, "", false},
		{true, 0, "", false},
		{[]any{json.Number("1")}, 0, "", false},
		{math.NaN(), 0, "", false},
	}
	for _, tt := range tests {
		q := parseQuantity(tt.in)
		if q.ok != tt.ok || (tt.ok && (q.v != tt.v || q.unit != tt.unit)) {
			t.Errorf("parseQuantity(%#v) = %+v, want %v %q %v", tt.in, q, tt.v, tt.unit, tt.ok)
		}
	}
}

func TestQuantityUnits(t *testing.T) {
	tests := []struct {
		q     quantity
		table map[string]float64
		def   string
		want  float64
		ok    bool
	}{
		{quantity{v: 383, unit: "W", ok: true}, powerUnits, "W", 383, true},
		{quantity{v: 383000, unit: "mW", ok: true}, powerUnits, "W", 383, true},
		{quantity{v: 383, ok: true}, powerUnits, "W", 383, true},
		{quantity{v: 383, unit: "MW", ok: true}, powerUnits, "W", 0, false}, // unknown (megawatt?) → missing
		{quantity{v: 1700, unit: "MHz", ok: true}, clockUnits, "MHz", 1.7e9, true},
		{quantity{v: 1700, ok: true}, clockUnits, "MHz", 1.7e9, true},
		{quantity{v: 2.1, unit: "GHz", ok: true}, clockUnits, "MHz", 2.1e9, true},
		{quantity{v: 5321.5, unit: "J", ok: true}, energyUnits, "J", 5321.5, true},
		{quantity{v: 15259000, unit: "uJ", ok: true}, energyUnits, "J", 15.259, true},
		{quantity{v: 45, unit: "C", ok: true}, tempUnits, "C", 45, true},
		{quantity{v: 45, unit: "°C", ok: true}, tempUnits, "C", 45, true},
		{quantity{v: 45, unit: "F", ok: true}, tempUnits, "C", 0, false},
		{quantity{v: 97, unit: "%", ok: true}, percentUnits, "%", 97, true},
		{quantity{}, powerUnits, "W", 0, false},
	}
	for _, tt := range tests {
		got, ok := tt.q.in(tt.table, tt.def)
		if ok != tt.ok || (ok && math.Abs(got-tt.want) > 1e-9*tt.want) {
			t.Errorf("%+v.in(%q) = %v %v, want %v %v", tt.q, tt.def, got, ok, tt.want, tt.ok)
		}
	}
}

func TestQuantityBytes(t *testing.T) {
	tests := []struct {
		q    quantity
		def  string
		want uint64
		ok   bool
	}{
		{quantity{v: 65520, unit: "MB", ok: true}, "MB", 65520 << 20, true}, // amd-smi's MB is a MiB
		{quantity{v: 65520, ok: true}, "MB", 65520 << 20, true},
		{quantity{v: 17179869184, unit: "B", ok: true}, "MB", 17179869184, true},
		{quantity{v: 536870912, ok: true}, "B", 536870912, true},
		{quantity{v: 1.5, unit: "GiB", ok: true}, "B", 3 << 29, true},
		{quantity{v: -4480, unit: "MB", ok: true}, "MB", 0, false},
		{quantity{v: 1e30, unit: "B", ok: true}, "B", 0, false},
		{quantity{v: 12, unit: "bananas", ok: true}, "B", 0, false},
	}
	for _, tt := range tests {
		got, ok := tt.q.bytes(tt.def)
		if ok != tt.ok || got != tt.want {
			t.Errorf("%+v.bytes(%q) = %v %v, want %v %v", tt.q, tt.def, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseHexOrDecimal(t *testing.T) {
	tests := []struct {
		in   any
		want uint64
		ok   bool
	}{
		{"0x740c", 0x740c, true},
		{"0X740C", 0x740c, true},
		{"29708", 29708, true},
		{json.Number("29708"), 29708, true},
		{float64(29708), 29708, true},
		{"N/A", 0, false},
		{"0xzz", 0, false},
		{float64(-1), 0, false},
		{nil, 0, false},
	}
	for _, tt := range tests {
		got, ok := parseHexOrDecimal(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseHexOrDecimal(%#v) = %v %v", tt.in, got, ok)
		}
	}
}
