package demo

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxSpan is the longest history the generator makes (a year and a bit:
// the benchmark's year of jobs, with room).
const MaxSpan = 400 * 24 * time.Hour

// ParseSpan reads a history length: a whole number with a unit, h
// (hours), d (days) or w (weeks), e.g. "30d", "12h", "2w"; Go durations
// ("36h30m") are taken too. It refuses 0, negative lengths, lengths under
// an hour and over 400 days, with an error naming the value.
func ParseSpan(s string) (time.Duration, error) {
	v := strings.TrimSpace(s)
	if v == "" {
		return 0, fmt.Errorf("history length %q: empty; give e.g. 30d, 12h or 2w", s)
	}
	var d time.Duration
	unit := v[len(v)-1]
	switch unit {
	case 'd', 'w':
		n, err := strconv.ParseFloat(v[:len(v)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("history length %q: not a number of %s; give e.g. 30d, 12h or 2w", s, map[byte]string{'d': "days", 'w': "weeks"}[unit])
		}
		day := 24 * time.Hour
		if unit == 'w' {
			day *= 7
		}
		if n > float64(MaxSpan/day)+1 || n < -float64(MaxSpan/day)-1 {
			return 0, fmt.Errorf("history length %q: longer than %d days", s, int(MaxSpan.Hours()/24))
		}
		d = time.Duration(n * float64(day))
	default:
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, fmt.Errorf("history length %q: want a number with a unit h, d or w, e.g. 30d, 12h or 2w", s)
		}
	}
	switch {
	case d <= 0:
		return 0, fmt.Errorf("history length %q: must be positive", s)
	case d < time.Hour:
		return 0, fmt.Errorf("history length %q: at least an hour (1h)", s)
	case d > MaxSpan:
		return 0, fmt.Errorf("history length %q: longer than %d days", s, int(MaxSpan.Hours()/24))
	}
	return d, nil
}
