package jobmodel

import (
	"fmt"
	"time"
)

// Time is a UTC instant stored with millisecond precision in the format
// every Elasticsearch date mapping accepts ("2006-01-02T15:04:05.000Z").
type Time struct{ time.Time }

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// At returns t as a document time, or nil for the zero time.
func At(t time.Time) *Time {
	if t.IsZero() {
		return nil
	}
	return &Time{t.UTC().Truncate(time.Millisecond)}
}

// MarshalJSON writes the time in UTC with milliseconds.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format(timeLayout) + `"`), nil
}

// UnmarshalJSON reads an RFC 3339 time.
func (t *Time) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("time %s: want an RFC 3339 string", b)
	}
	v, err := time.Parse(time.RFC3339Nano, string(b[1:len(b)-1]))
	if err != nil {
		return fmt.Errorf("time %s: %w", b, err)
	}
	t.Time = v.UTC()
	return nil
}
