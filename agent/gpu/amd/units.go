package amd

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// quantity is one value of amd-smi's JSON output with its unit. amd-smi
// writes values in three shapes depending on its version: a bare number
// (ROCm 6.0), an object {"value": 123, "unit": "W"} (ROCm 6.1 and later),
// or a string "123 W" (human-readable leftovers); "N/A" and friends mean
// the value was not read.
type quantity struct {
	v    float64
	unit string
	ok   bool
}

// maxQuantityString bounds the strings parseQuantity looks at: no value
// amd-smi prints is longer, and the bound keeps parsing linear.
const maxQuantityString = 64

// parseQuantity reads a value decoded by encoding/json (with UseNumber or
// without). Anything that is not a finite number in one of the shapes above
// gives a quantity with ok false.
func parseQuantity(v any) quantity {
	switch x := v.(type) {
	case json.Number:
		return numberQuantity(string(x), "")
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return quantity{}
		}
		return quantity{v: x, ok: true}
	case string:
		return parseQuantityString(x)
	case map[string]any:
		raw, found := x["value"]
		if !found {
			return quantity{}
		}
		if _, nested := raw.(map[string]any); nested {
			return quantity{} // {"value": {"value": …}} is not a shape amd-smi writes
		}
		q := parseQuantity(raw)
		if unit, isString := x["unit"].(string); isString && q.ok && q.unit == "" {
			q.unit = strings.TrimSpace(unit)
		}
		return q
	default:
		return quantity{}
	}
}

// notAvailable reports whether s is one of the words amd-smi (and the
// library's Python layer) prints for a value it could not read.
func notAvailable(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "n/a", "na", "none", "null", "unknown", "not supported", "unsupported",
		"not available", "-", "no data":
		return true
	}
	return false
}

// parseQuantityString reads "123", "123 W", "45%", "40 °C" or "1.5GB".
func parseQuantityString(s string) quantity {
	s = strings.TrimSpace(s)
	if len(s) > maxQuantityString || notAvailable(s) {
		return quantity{}
	}
	num, unit := s, ""
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	} else if i := strings.IndexFunc(s, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r == '.' || r == '-' || r == '+' || r == 'e' || r == 'E')
	}); i >= 0 {
		num, unit = s[:i], s[i:]
	}
	return numberQuantity(num, unit)
}

func numberQuantity(num, unit string) quantity {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return quantity{}
	}
	return quantity{v: f, unit: unit, ok: true}
}

// Unit tables: the factor that turns a value in the unit into the base
// unit of the table (W, J, °C, Hz, bytes, %). amd-smi's "MB" is a MiB: the
// tool divides byte counts by 1024*1024 and labels the result MB.
var (
	powerUnits  = map[string]float64{"W": 1, "mW": 1e-3, "uW": 1e-6, "µW": 1e-6, "μW": 1e-6, "kW": 1e3}
	energyUnits = map[string]float64{"J": 1, "mJ": 1e-3, "uJ": 1e-6, "µJ": 1e-6, "μJ": 1e-6,
		"kJ": 1e3}
	tempUnits  = map[string]float64{"C": 1, "°C": 1, "℃": 1, "degC": 1, "celsius": 1}
	clockUnits = map[string]float64{"Hz": 1, "kHz": 1e3, "KHz": 1e3, "MHz": 1e6, "GHz": 1e9}
	byteUnits  = map[string]float64{"B": 1, "KB": 1 << 10, "kB": 1 << 10, "KiB": 1 << 10,
		"MB": 1 << 20, "MiB": 1 << 20, "GB": 1 << 30, "GiB": 1 << 30, "TB": 1 << 40, "TiB": 1 << 40}
	percentUnits = map[string]float64{"%": 1}
)

// in converts q to the base unit of table; a quantity without a unit is
// taken to be in def. An unknown unit gives ok false: a number whose unit
// cannot be trusted is not reported.
func (q quantity) in(table map[string]float64, def string) (float64, bool) {
	if !q.ok {
		return 0, false
	}
	unit := q.unit
	if unit == "" {
		unit = def
	}
	factor, known := table[unit]
	if !known {
		return 0, false
	}
	v := q.v * factor
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// bytes converts q to a byte count; negative or absurd sizes give ok false.
func (q quantity) bytes(def string) (uint64, bool) {
	v, ok := q.in(byteUnits, def)
	if !ok || v < 0 || v >= 1<<62 {
		return 0, false
	}
	return uint64(math.Round(v)), true
}

// parseHexOrDecimal reads an integer written "0x740c", "29708" or as a JSON
// number (amd-smi writes PCI ids as hex strings).
func parseHexOrDecimal(v any) (uint64, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := strconv.ParseUint(string(x), 10, 64)
		return n, err == nil
	case float64:
		if x < 0 || x >= 1<<63 || x != math.Trunc(x) {
			return 0, false
		}
		return uint64(x), true
	case string:
		s := strings.TrimSpace(x)
		if len(s) > maxQuantityString {
			return 0, false
		}
		if rest, found := strings.CutPrefix(strings.ToLower(s), "0x"); found {
			n, err := strconv.ParseUint(rest, 16, 64)
			return n, err == nil
		}
		n, err := strconv.ParseUint(s, 10, 64)
		return n, err == nil
	}
	return 0, false
}
