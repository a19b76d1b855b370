package slurm

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Slurm's JSON changed shape between data_parser versions while keeping
// field names: v0.0.38 (Slurm 22.05) writes numbers and times as plain
// numbers (null for "not set"), job_state as a string and exit_code as the
// raw wait status; v0.0.39 and later (23.02 up to 26.05's v0.0.45) wrap
// numbers and times as {"set": true, "infinite": false, "number": 60},
// make job_state an array of words and exit_code an object. record reads a
// record field by field, accepting every shape a supported version
// writes. A field of a shape it does not know is not guessed at: it stays
// at its zero value and is named in unknown, so the caller can say the
// value is missing instead of taking the zero for a figure. An absent
// field is simply absent (older versions lack newer fields).

// record is one JSON object being read field by field.
type record struct {
	raw     map[string]json.RawMessage
	unknown []string
}

func (r *record) init(b []byte) error {
	r.raw, r.unknown = nil, nil
	return json.Unmarshal(b, &r.raw)
}

// bad names field as one whose shape was not understood.
func (r *record) bad(field string) {
	for _, f := range r.unknown {
		if f == field {
			return
		}
	}
	r.unknown = append(r.unknown, field)
}

// get returns field's raw value; ok is false when absent or null.
func (r *record) get(field string) (json.RawMessage, bool) {
	v := r.raw[field]
	if len(v) == 0 || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil, false
	}
	return v, true
}

// str reads a string field.
func (r *record) str(field string) string {
	v, ok := r.get(field)
	if !ok {
		return ""
	}
	// Most strings need no unescaping: taken as they are (the decoder
	// that cut v out has checked it is valid JSON).
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		r.bad(field)
		return ""
	}
	return s
}

// strs reads a list of strings; a single string is a list of one.
func (r *record) strs(field string) []string {
	v, ok := r.get(field)
	if !ok {
		return nil
	}
	var l []string
	if err := json.Unmarshal(v, &l); err == nil {
		return l
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return []string{s}
	}
	r.bad(field)
	return nil
}

// words reads a field that is a string in older versions and a list of
// words in newer ones (job_state: "RUNNING" or ["RUNNING", "COMPLETING"]),
// as one comma-separated string.
func (r *record) words(field string) string {
	return strings.Join(r.strs(field), ",")
}

// numKind says what a number field held.
type numKind int

const (
	numAbsent   numKind = iota // not in the record, or null, or of an unknown shape
	numUnset                   // {"set": false}: Slurm's NO_VAL
	numInfinite                // {"infinite": true}: Slurm's INFINITE
	numSet                     // a number
)

// num reads a number: a plain JSON number, or {"set", "infinite",
// "number"}. Fractions are truncated; a value beyond int64 is an unknown
// shape.
func (r *record) num(field string) (int64, numKind) {
	v, ok := r.get(field)
	if !ok {
		return 0, numAbsent
	}
	if n, ok := plainNumber(v); ok {
		return n, numSet
	}
	if n, k, ok := slurmNumber(v); ok {
		return n, k
	}
	var o struct {
		Set      *bool           `json:"set"`
		Infinite *bool           `json:"infinite"`
		Number   json.RawMessage `json:"number"`
	}
	if err := json.Unmarshal(v, &o); err != nil || (o.Set == nil && o.Infinite == nil && o.Number == nil) {
		r.bad(field)
		return 0, numAbsent
	}
	switch {
	case o.Infinite != nil && *o.Infinite:
		return 0, numInfinite
	case o.Set != nil && !*o.Set:
		return 0, numUnset
	}
	n, ok := plainNumber(o.Number)
	if !ok {
		r.bad(field)
		return 0, numAbsent
	}
	return n, numSet
}

// slurmNumber reads {"set": B, "infinite": B, "number": N} as Slurm
// prints it (those keys in that order, any spacing) without reflection;
// ok is false for anything else, which num then decodes in full.
func slurmNumber(v []byte) (int64, numKind, bool) {
	rest, ok := cutKey(v, '{', "set")
	if !ok {
		return 0, 0, false
	}
	set, rest, ok := cutBool(rest)
	if !ok {
		return 0, 0, false
	}
	if rest, ok = cutKey(rest, ',', "infinite"); !ok {
		return 0, 0, false
	}
	inf, rest, ok := cutBool(rest)
	if !ok {
		return 0, 0, false
	}
	if rest, ok = cutKey(rest, ',', "number"); !ok {
		return 0, 0, false
	}
	rest = bytes.TrimSpace(rest)
	if len(rest) < 2 || rest[len(rest)-1] != '}' {
		return 0, 0, false
	}
	n, ok := plainNumber(rest[:len(rest)-1])
	switch {
	case !ok:
		return 0, 0, false
	case inf:
		return 0, numInfinite, true
	case !set:
		return 0, numUnset, true
	}
	return n, numSet, true
}

// cutKey expects sep, then "key" and a colon, spaces allowed between.
func cutKey(v []byte, sep byte, key string) ([]byte, bool) {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 || v[0] != sep {
		return nil, false
	}
	v = bytes.TrimLeft(v[1:], " \t\r\n")
	if len(v) < len(key)+2 || v[0] != '"' || string(v[1:1+len(key)]) != key || v[1+len(key)] != '"' {
		return nil, false
	}
	v = bytes.TrimLeft(v[2+len(key):], " \t\r\n")
	if len(v) == 0 || v[0] != ':' {
		return nil, false
	}
	return v[1:], true
}

// cutBool reads true or false.
func cutBool(v []byte) (bool, []byte, bool) {
	v = bytes.TrimLeft(v, " \t\r\n")
	switch {
	case bytes.HasPrefix(v, []byte("true")):
		return true, v[4:], true
	case bytes.HasPrefix(v, []byte("false")):
		return false, v[5:], true
	}
	return false, nil, false
}

// plainNumber reads a JSON number within int64.
func plainNumber(v json.RawMessage) (int64, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsNaN(f) || f >= math.MaxInt64 || f <= math.MinInt64 {
		return 0, false
	}
	return int64(f), true
}

// count reads a number that is 0 when Slurm has none (unset, infinite
// and absent alike: counts, ids, times).
func (r *record) count(field string) int64 {
	n, k := r.num(field)
	switch {
	case k != numSet:
		return 0
	case n == noVal32 || n == infinite32:
		return 0 // v0.0.38 writes NO_VAL and INFINITE as plain numbers
	case n < 0:
		r.bad(field)
		return 0
	}
	return n
}

// Slurm's NO_VAL and INFINITE of a 32-bit field, as v0.0.38 prints them.
const (
	noVal32    = 0xfffffffe
	infinite32 = 0xffffffff
)

// opt reads a number that may be unset: nil unless set.
func (r *record) opt(field string) *int64 {
	n, k := r.num(field)
	if k != numSet {
		return nil
	}
	return &n
}

// id reads a uint32 id (job ids): 0 when absent, unset or out of range
// (the latter named as unknown).
func (r *record) id(field string) uint32 {
	n, k := r.num(field)
	if k != numSet {
		return 0
	}
	if n < 0 || n > math.MaxUint32 {
		r.bad(field)
		return 0
	}
	return uint32(n)
}

// waitStatus reads an exit code as a wait status (the signal in the low
// 7 bits, else the exit code in the next 8): v0.0.38 writes it raw;
// later versions write {"status": ["EXITED"|"SIGNALED"|...],
// "return_code": <num>, "signal": {"id": <num>, "name": "KILL"}}.
func (r *record) waitStatus(field string) *int64 {
	v, ok := r.get(field)
	if !ok {
		return nil
	}
	if n, ok := plainNumber(v); ok {
		switch {
		case n == noVal32 || n == infinite32:
			return nil // not set
		case n < 0 || n > 0xffff:
			r.bad(field)
			return nil
		}
		return &n
	}
	var o struct {
		Status     json.RawMessage `json:"status"`
		ReturnCode json.RawMessage `json:"return_code"`
		Signal     *struct {
			ID json.RawMessage `json:"id"`
		} `json:"signal"`
	}
	if err := json.Unmarshal(v, &o); err != nil || (o.Status == nil && o.ReturnCode == nil && o.Signal == nil) {
		r.bad(field)
		return nil
	}
	sub := record{raw: map[string]json.RawMessage{"status": o.Status, "return_code": o.ReturnCode}}
	if o.Signal != nil {
		sub.raw["signal"] = o.Signal.ID
	}
	status := sub.words("status")
	sig, sigKind := sub.num("signal")
	rc, rcKind := sub.num("return_code")
	if len(sub.unknown) > 0 {
		r.bad(field)
		return nil
	}
	var ws int64
	switch {
	case strings.Contains(status, "PENDING"):
		return nil // the job has not ended
	case strings.Contains(status, "INVALID"):
		// Neither exited nor signalled (return_code is then the raw
		// status): no exit code to tell.
		r.bad(field)
		return nil
	case sigKind == numSet && sig > 0:
		if sig > 127 {
			r.bad(field)
			return nil
		}
		ws = sig
	case rcKind == numSet && rc >= 0 && rc <= 255:
		ws = rc << 8
	default:
		r.bad(field)
		return nil
	}
	return &ws
}

// sub returns the object field as a record of its own (nil when absent
// or not an object; the latter is named as unknown).
func (r *record) sub(field string) *record {
	v, ok := r.get(field)
	if !ok {
		return nil
	}
	s := &record{}
	if err := s.init(v); err != nil {
		r.bad(field)
		return nil
	}
	return s
}

// null reports whether field is present and null.
func (r *record) null(field string) bool {
	return bytes.Equal(bytes.TrimSpace(r.raw[field]), []byte("null"))
}
