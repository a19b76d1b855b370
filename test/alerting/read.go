package alerting

import (
	"errors"
	"fmt"
	"time"

	"github.com/grafana/dataplane/sdata"
	"github.com/grafana/dataplane/sdata/numeric"
	"github.com/grafana/dataplane/sdata/reader"
	"github.com/grafana/dataplane/sdata/timeseries"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// valueKind is what SSE calls a value's type: a number, a time series or
// "no data".
type valueKind int

const (
	kindNumber valueKind = iota
	kindSeries
	kindNoData
)

func (k valueKind) String() string {
	switch k {
	case kindNumber:
		return "number"
	case kindSeries:
		return "time series"
	default:
		return "no data"
	}
}

type point struct {
	t time.Time
	v *float64
}

// value is one SSE value: a labelled number, a labelled time series, or
// NoData.
type value struct {
	kind   valueKind
	name   string // the metric (field) name: shown in messages, not part of the identity
	labels data.Labels
	num    *float64
	points []point
}

func noData() value { return value{kind: kindNoData} }

// readFrames turns one datasource answer into SSE values the way
// Grafana's server-side expressions do for data-plane frames:
//
//   - no frames at all: NoData (SSE answers "no data" before looking at
//     types);
//   - frames whose first frame has a data-plane type sdata v0.0.9 reads
//     (reader.CanReadBasedOnMeta without error, including no
//     VersionWarning): numeric kinds through numeric.CollectionReader,
//     time series kinds through timeseries.CollectionReader; an empty
//     collection is NoData;
//   - anything else: SSE falls back to its legacy conversion, of which
//     this emulation reproduces only the two cases a numeric answer can
//     meet: one frame without fields is NoData, and one "number table"
//     (no time field, exactly one numeric field, every other field a
//     string) is one number per row labelled by the row's strings, which
//     is what numeric-long gives for the same frame. (Whether a Grafana
//     release reads a typed numeric-long frame through sdata or through
//     this legacy path depends on its release and feature toggles; for a
//     frame CheckDataplane accepts both give the same numbers.) Anything
//     else is an error saying it is not emulated.
//
// A panic inside sdata (it asserts label cells to string, so a null in a
// nullable string column of a numeric-long frame panics) comes back as an
// error.
func readFrames(frames data.Frames) (vals []value, typ data.FrameType, err error) {
	if len(frames) == 0 {
		return []value{noData()}, data.FrameTypeUnknown, nil
	}
	for i, f := range frames {
		if f == nil {
			return nil, data.FrameTypeUnknown, fmt.Errorf("frame %d is nil", i)
		}
	}
	defer func() {
		if p := recover(); p != nil {
			vals, err = nil, fmt.Errorf("the data-plane reader (sdata) panicked on these frames: %v", p)
		}
	}()
	typ, err = reader.CanReadBasedOnMeta(frames)
	if err != nil {
		if len(frames) == 1 && len(frames[0].Fields) == 0 {
			return []value{noData()}, data.FrameTypeUnknown, nil
		}
		if len(frames) == 1 && isNumberTable(frames[0]) {
			vals, err := numberTable(frames[0])
			return vals, data.FrameTypeUnknown, err
		}
		var vw *sdata.VersionWarning
		if errors.As(err, &vw) {
			return nil, typ, fmt.Errorf("frame 0 is %s at type version %s, which sdata v0.0.9 does not read (it reads %s): Grafana would warn and fall back to its legacy conversion, which is emulated only for a single number table", typ, vw.DataVersion, vw.LibraryVersion)
		}
		return nil, typ, fmt.Errorf("frame 0 is not a typed data-plane frame (%v): Grafana would read it with its legacy conversion, which is emulated only for a single number table", err)
	}
	switch typ.Kind() {
	case data.KindNumeric:
		vals, err = readNumeric(frames)
	case data.KindTimeSeries:
		vals, err = readSeries(frames)
	default:
		err = fmt.Errorf("frame type %s (kind %q) is not read by server-side expressions", typ, typ.Kind())
	}
	return vals, typ, err
}

// numericRefs is sdata's reading of numeric frames.
func numericRefs(frames data.Frames) (numeric.Collection, error) {
	cr, err := numeric.CollectionReaderFromFrames(frames)
	if err != nil {
		return numeric.Collection{}, err
	}
	c, err := cr.GetCollection(false)
	if err != nil {
		return c, err
	}
	if c.Warning != nil {
		return c, c.Warning
	}
	return c, nil
}

// readNumeric: each sdata metric ref becomes a Number with the ref's
// labels (SSE keeps the labels and not the metric name as the identity).
// A ref without a value (a zero-length numeric field) is an error here:
// the contract gives every numeric field exactly one value.
func readNumeric(frames data.Frames) ([]value, error) {
	c, err := numericRefs(frames)
	if err != nil {
		return nil, err
	}
	if len(c.Refs) == 0 {
		return []value{noData()}, nil
	}
	out := make([]value, 0, len(c.Refs))
	for _, ref := range c.Refs {
		f, empty, err := ref.NullableFloat64Value()
		if err != nil {
			return nil, fmt.Errorf("number %q {%s}: %w", ref.GetMetricName(), ref.GetLabels(), err)
		}
		if empty {
			return nil, fmt.Errorf("number %q {%s} has %d values, the numeric contract needs exactly 1", ref.GetMetricName(), ref.GetLabels(), ref.ValueField.Len())
		}
		out = append(out, value{kind: kindNumber, name: ref.GetMetricName(), labels: ref.GetLabels().Copy(), num: f})
	}
	return out, nil
}

// readSeries: each sdata time series ref becomes a Series; a collection
// with no refs, or only a ref without a time field, is NoData.
func readSeries(frames data.Frames) ([]value, error) {
	cr, err := timeseries.CollectionReaderFromFrames(frames)
	if err != nil {
		return nil, err
	}
	c, err := cr.GetCollection(false)
	if err != nil {
		return nil, err
	}
	if c.Warning != nil {
		return nil, c.Warning
	}
	if len(c.Refs) == 0 || (len(c.Refs) == 1 && c.Refs[0].TimeField == nil) {
		return []value{noData()}, nil
	}
	out := make([]value, 0, len(c.Refs))
	for _, ref := range c.Refs {
		if ref.TimeField == nil || ref.ValueField == nil {
			return nil, fmt.Errorf("time series %q has no time or value field", ref.GetMetricName())
		}
		n, err := ref.Len()
		if err != nil {
			return nil, err
		}
		v := value{kind: kindSeries, name: ref.GetMetricName(), labels: ref.GetLabels().Copy(), points: make([]point, 0, n)}
		for i := 0; i < n; i++ {
			t, f, err := ref.NullableFloat64Point(i)
			if err != nil {
				return nil, fmt.Errorf("time series %q {%s} point %d: %w", ref.GetMetricName(), ref.GetLabels(), i, err)
			}
			v.points = append(v.points, point{t: t, v: f})
		}
		out = append(out, v)
	}
	return out, nil
}

// isNumberTable: one frame, no time field, exactly one numeric field, every
// other field a string: SSE's legacy "number set" shape.
func isNumberTable(f *data.Frame) bool {
	nums := 0
	for _, fld := range f.Fields {
		switch t := fld.Type(); {
		case t.Numeric():
			nums++
		case t == data.FieldTypeString || t == data.FieldTypeNullableString:
		default:
			return false
		}
	}
	return nums == 1
}

// numberTable reads a number table: each row one number, its labels the
// row's string fields (field name = label name).
func numberTable(f *data.Frame) ([]value, error) {
	rows, err := f.RowLen()
	if err != nil {
		return nil, err
	}
	if rows == 0 {
		return nil, nil // no numbers: nothing reaches the condition, which is NoData
	}
	out := make([]value, 0, rows)
	for r := 0; r < rows; r++ {
		v := value{kind: kindNumber, labels: data.Labels{}}
		for fi, fld := range f.Fields {
			if fld.Type().Numeric() {
				v.name = fld.Name
				x, err := fld.NullableFloatAt(r)
				if err != nil {
					return nil, fmt.Errorf("row %d field %q: %w", r, fld.Name, err)
				}
				v.num = copyNum(x)
				continue
			}
			s, ok := f.ConcreteAt(fi, r)
			if !ok {
				return nil, fmt.Errorf("row %d: label field %q is null", r, fld.Name)
			}
			v.labels[fld.Name] = s.(string)
		}
		out = append(out, v)
	}
	return out, nil
}
