package alerting

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/grafana/dataplane/sdata"
	"github.com/grafana/dataplane/sdata/reader"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// IdentityLabels are the labels every number must carry with a non-empty
// value: together they name the job (DESIGN.md, "Job identity").
var IdentityLabels = []string{"cluster", "job_id"}

// HoggingLabels are the labels CheckDataplane requires: the job's identity
// and what the shipped hogging rules' annotations and instances read
// (user, account, partition, and the resource that one row is about).
// The package's tests check that every {{ $labels.X }} of
// provisioning/alerting/hogging.yaml is in this list.
var HoggingLabels = []string{"cluster", "job_id", "user", "account", "partition", "resource"}

// CheckDataplane checks frames against the data-plane contract for numeric
// data, which Grafana's alerting reads (see CheckDataplaneLabels), with
// HoggingLabels required on every number.
func CheckDataplane(frames data.Frames) error {
	return CheckDataplaneLabels(frames, HoggingLabels...)
}

// CheckDataplaneFor is CheckDataplane with the labels rule needs: the
// IdentityLabels and every label its templates read.
func CheckDataplaneFor(rule Rule, frames data.Frames) error {
	return CheckDataplaneLabels(frames, rule.TemplateLabels()...)
}

// CheckDataplaneLabels checks that frames are a valid numeric data-plane
// answer, as Grafana's alerting reads it, carrying the labels required (and
// IdentityLabels, always). The frames are read with sdata v0.0.9, Grafana's
// own reader, and must also meet what that reader leaves unchecked:
//
//   - The first frame is typed numeric-wide, numeric-long or numeric-multi
//     at a type version sdata reads (0.1): otherwise Grafana does not take
//     the data-plane path at all.
//   - One number per series: numeric-long has exactly one numeric field
//     (each row is one number; string fields are its labels); numeric-wide
//     is one frame of numeric fields with one row; numeric-multi is one
//     numeric field with one row per frame. Fields of other types
//     (time, bool, JSON, ...) are refused: sdata skips them silently.
//   - No string value columns: a numeric-long frame whose value came as
//     text would have no number (sdata makes every string a label, and the
//     answer reads as no data), and a string field holding numbers in every
//     row (outside the required labels) is a value sent as text; wide and
//     multi frames carry no string fields at all.
//   - No data the reader drops: extra frames after a numeric-long or
//     numeric-wide frame (only the first is read), labels on a numeric-long
//     value field (the reader replaces them with the row's strings), nulls
//     in a label column (the reader panics on them).
//   - Every number has the required labels, IdentityLabels non-empty.
//   - No two numbers have the same label set: Grafana identifies an alert
//     instance by its labels only (not the field name), and a duplicate
//     makes the whole rule's evaluation fail.
//
// "No data" is valid: no frames, a typed frame without fields, or a
// numeric-long frame with its fields and no rows (the plugin's empty
// answer). The error lists every problem found, each naming the frame,
// field or row.
func CheckDataplaneLabels(frames data.Frames, required ...string) error {
	req := union(IdentityLabels, required)
	var probs []string
	add := func(format string, a ...any) { probs = append(probs, fmt.Sprintf(format, a...)) }
	fail := func() error {
		if len(probs) == 0 {
			return nil
		}
		return fmt.Errorf("the frames break the numeric data-plane contract that alerting reads:\n  - %s", strings.Join(probs, "\n  - "))
	}
	if len(frames) == 0 {
		return nil // no frames: "no data"
	}
	for i, f := range frames {
		if f == nil {
			add("frame %d is nil", i)
		}
	}
	if len(probs) > 0 {
		return fail()
	}
	typ, err := reader.CanReadBasedOnMeta(frames)
	if err != nil {
		var vw *sdata.VersionWarning
		if errors.As(err, &vw) {
			add("frame 0 (%s) is %s at type version %s; sdata v0.0.9 reads version %s only, so Grafana would not take the data-plane path", frameName(frames[0]), typ, vw.DataVersion, vw.LibraryVersion)
		} else {
			add("frame 0 (%s) has no data-plane type Grafana reads (%v): set Meta.Type to numeric-long, numeric-wide or numeric-multi and Meta.TypeVersion to 0.1", frameName(frames[0]), err)
		}
		return fail()
	}
	if typ.Kind() != data.KindNumeric {
		add("frame 0 (%s) is %s, of kind %q: the alerting contract here is numeric (numeric-long, numeric-wide or numeric-multi)", frameName(frames[0]), typ, typ.Kind())
		return fail()
	}
	for i, f := range frames {
		if _, err := f.RowLen(); err != nil {
			add("frame %d (%s): %v", i, frameName(f), err)
		}
	}
	if len(probs) > 0 {
		return fail()
	}

	// where[i] names the place of the i-th number sdata reads.
	var where []string
	switch typ {
	case data.FrameTypeNumericLong:
		where = checkLong(frames, req, add)
	case data.FrameTypeNumericWide:
		where = checkWide(frames, add)
	case data.FrameTypeNumericMulti:
		where = checkMulti(frames, add)
	}
	if len(probs) > 0 {
		return fail()
	}

	vals, _, err := readFrames(frames)
	if err != nil {
		add("sdata (Grafana's data-plane reader) refuses the frames: %v", err)
		return fail()
	}
	seen := map[data.Fingerprint]int{}
	for i, v := range vals {
		if v.kind == kindNoData {
			continue
		}
		at := fmt.Sprintf("number %d", i)
		if i < len(where) {
			at = where[i]
		}
		var missing []string
		for _, l := range req {
			if _, ok := v.labels[l]; !ok {
				missing = append(missing, l)
			}
		}
		if len(missing) > 0 {
			add("%s {%s} lacks the label(s) %s", at, v.labels, strings.Join(missing, ", "))
		}
		for _, l := range IdentityLabels {
			if val, ok := v.labels[l]; ok && val == "" {
				add("%s {%s} has an empty %s label", at, v.labels, l)
			}
		}
		fp := v.labels.Fingerprint()
		if j, dup := seen[fp]; dup && vals[j].labels.Equals(v.labels) {
			other := fmt.Sprintf("number %d", j)
			if j < len(where) {
				other = where[j]
			}
			add("%s and %s have the same labels {%s}: Grafana identifies an alert instance by its labels only and fails the whole rule on duplicates", other, at, v.labels)
			continue
		}
		seen[fp] = i
	}
	return fail()
}

// checkLong checks a numeric-long answer's structure and returns where
// each row's number is.
func checkLong(frames data.Frames, req []string, add func(string, ...any)) []string {
	f := frames[0]
	for i := 1; i < len(frames); i++ {
		add("frame %d (%s) would be ignored: a numeric-long answer is read from its first frame only", i, frameName(frames[i]))
	}
	if len(f.Fields) == 0 {
		return nil // typed frame without fields: no data
	}
	rows := f.Rows()
	var nums, labels []string
	labelIdx := map[string]int{}
	for fi, fld := range f.Fields {
		name := fieldName(fi, fld)
		switch t := fld.Type(); {
		case t.Numeric():
			nums = append(nums, name)
			if len(fld.Labels) > 0 {
				add("numeric-long value field %s carries labels {%s}, which the reader drops (a long frame's labels are its string fields)", name, fld.Labels)
			}
		case t == data.FieldTypeString || t == data.FieldTypeNullableString:
			labels = append(labels, name)
			labelIdx[fld.Name] = fi
			for r := 0; r < rows; r++ {
				s, ok := f.ConcreteAt(fi, r)
				if !ok {
					add("label field %s is null at row %d: the numeric-long reader cannot make a label of it (sdata panics)", name, r)
					continue
				}
				if contains(IdentityLabels, fld.Name) && s.(string) == "" {
					add("label field %s is empty at row %d: %s identifies the job", name, r, fld.Name)
				}
			}
			if rows > 0 && !contains(req, fld.Name) && allNumbers(fld) {
				add("string field %s holds a number in every row: it is a value sent as text, which the reader would take as a label, not a value; send it as a numeric field", name)
			}
		case t == data.FieldTypeTime || t == data.FieldTypeNullableTime:
			add("field %s is a time: a numeric answer has no time (with one it is a time series, which alerting reduces differently); the reader ignores it", name)
		default:
			add("field %s is %s: a numeric-long frame holds string labels and numbers only; the reader ignores it", name, t)
		}
	}
	switch len(nums) {
	case 0:
		if len(labels) > 0 {
			add("no numeric value field: the string field(s) %s would all be read as labels, so Grafana would see no number at all (no data) and never alert", strings.Join(labels, ", "))
		} else {
			add("no numeric value field")
		}
	case 1:
	default:
		add("%d numeric fields (%s): each row would become %d numbers with the same labels; one number per series means one numeric field", len(nums), strings.Join(nums, ", "), len(nums))
	}
	for _, l := range req {
		if _, ok := labelIdx[l]; !ok {
			add("no string field %q: every number needs the label %s", l, l)
		}
	}
	where := make([]string, rows)
	for r := range where {
		where[r] = fmt.Sprintf("row %d", r)
	}
	return where
}

// checkWide checks a numeric-wide answer: one frame of numeric fields, one
// row.
func checkWide(frames data.Frames, add func(string, ...any)) []string {
	f := frames[0]
	for i := 1; i < len(frames); i++ {
		add("frame %d (%s) would be ignored: a numeric-wide answer is read from its first frame only", i, frameName(frames[i]))
	}
	if len(f.Fields) == 0 {
		return nil
	}
	if r := f.Rows(); r != 1 {
		add("numeric-wide frame %s has %d rows: each field is one number, so it has exactly 1 row", frameName(f), r)
	}
	var where []string
	for fi, fld := range f.Fields {
		name := fieldName(fi, fld)
		switch t := fld.Type(); {
		case t.Numeric():
			where = append(where, "field "+name)
		case t == data.FieldTypeString || t == data.FieldTypeNullableString:
			add("string field %s in a numeric-wide frame: the reader skips it, so it is neither a value nor a label (labels go on the numeric fields' Labels)", name)
		default:
			add("field %s is %s: a numeric-wide frame holds numeric fields only; the reader skips it", name, t)
		}
	}
	return where
}

// checkMulti checks a numeric-multi answer: each frame one numeric field
// with one row.
func checkMulti(frames data.Frames, add func(string, ...any)) []string {
	if len(frames[0].Fields) == 0 {
		for i := 1; i < len(frames); i++ {
			if len(frames[i].Fields) > 0 {
				add("frame %d (%s) would be ignored: the first frame has no fields, which makes the answer no data", i, frameName(frames[i]))
			}
		}
		return nil
	}
	var where []string
	for i, f := range frames {
		if f.Meta == nil || f.Meta.Type != data.FrameTypeNumericMulti {
			add("frame %d (%s) is not typed numeric-multi like frame 0", i, frameName(f))
		}
		if len(f.Fields) != 1 {
			add("numeric-multi frame %d (%s) has %d fields: each frame is one numeric field", i, frameName(f), len(f.Fields))
		}
		for fi, fld := range f.Fields {
			name := fieldName(fi, fld)
			switch t := fld.Type(); {
			case t.Numeric():
				if fld.Len() != 1 {
					add("numeric-multi frame %d field %s has %d values, not 1", i, name, fld.Len())
				}
			case t == data.FieldTypeString || t == data.FieldTypeNullableString:
				add("string field %s in numeric-multi frame %d: the reader skips it (labels go on the numeric field's Labels)", name, i)
			default:
				add("field %s of numeric-multi frame %d is %s, not a number", name, i, t)
			}
		}
		where = append(where, fmt.Sprintf("frame %d (%s)", i, frameName(f)))
	}
	return where
}

func frameName(f *data.Frame) string {
	if f.Name == "" {
		return "unnamed"
	}
	return strconv.Quote(f.Name)
}

func fieldName(i int, f *data.Field) string {
	return fmt.Sprintf("%d %q", i, f.Name)
}

// allNumbers: every non-null cell of a string field parses as a number.
func allNumbers(f *data.Field) bool {
	n := 0
	for i := 0; i < f.Len(); i++ {
		v, ok := f.ConcreteAt(i)
		if !ok {
			continue
		}
		if _, err := strconv.ParseFloat(strings.TrimSpace(v.(string)), 64); err != nil {
			return false
		}
		n++
	}
	return n > 0
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range append(append([]string{}, a...), b...) {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}
