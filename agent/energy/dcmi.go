package energy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxNodeWatts bounds a plausible node power reading; a BMC reporting more
// is misread, not measured.
const maxNodeWatts = 100_000

// ErrPowerInactive says the BMC answers DCMI but its power reading is
// switched off ("Power reading state is: deactivated"): its numbers are
// not measurements.
var ErrPowerInactive = errors.New("DCMI power reading is deactivated on this BMC")

// PowerReading is the output of `ipmitool dcmi power reading`.
type PowerReading struct {
	InstantWatts float64
	MinWatts     float64
	MaxWatts     float64
	// AvgWatts is the BMC's average over its sampling period.
	AvgWatts float64
	// SamplingSeconds is the BMC's sampling period (0 when not given).
	SamplingSeconds float64
	HaveInstant     bool
	HaveAvg         bool
}

// Watts is the power to use: the BMC's average over its sampling period
// when given (smoother than one instant), else the instantaneous reading.
func (p PowerReading) Watts() float64 {
	if p.HaveAvg {
		return p.AvgWatts
	}
	return p.InstantWatts
}

// ParseDCMIPowerReading parses the text `ipmitool dcmi power reading`
// prints:
//
//	Instantaneous power reading:                   220 Watts
//	Minimum during sampling period:                 84 Watts
//	Maximum during sampling period:                452 Watts
//	Average power reading over sample period:      217 Watts
//	IPMI timestamp:                           Thu Jan  1 00:00:00 1970
//	Sampling period:                          00000005 Seconds.
//	Power reading state is:                   activated
//
// Unknown lines are ignored; a missing power value, a value that is not a
// number of watts, or a deactivated reading is an error naming the line.
func ParseDCMIPowerReading(out []byte) (PowerReading, error) {
	var p PowerReading
	state := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 1024), 64*1024)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.Join(strings.Fields(key), " "))
		val = strings.TrimSpace(val)
		var dst *float64
		var have *bool
		switch {
		case strings.HasPrefix(key, "instantaneous power reading"):
			dst, have = &p.InstantWatts, &p.HaveInstant
		case strings.HasPrefix(key, "minimum during sampling period"):
			dst = &p.MinWatts
		case strings.HasPrefix(key, "maximum during sampling period"):
			dst = &p.MaxWatts
		case strings.HasPrefix(key, "average power reading over sample period"):
			dst, have = &p.AvgWatts, &p.HaveAvg
		case key == "sampling period":
			if s, err := parseQuantity(val, "second"); err == nil {
				p.SamplingSeconds = s
			}
			continue
		case key == "power reading state is":
			state = strings.ToLower(val)
			continue
		default:
			continue
		}
		w, err := parseQuantity(val, "watt")
		if err != nil {
			return PowerReading{}, fmt.Errorf("dcmi power reading: %q: %w", key, err)
		}
		if w > maxNodeWatts {
			return PowerReading{}, fmt.Errorf("dcmi power reading: %q: %v W is not a plausible node power", key, w)
		}
		*dst = w
		if have != nil {
			*have = true
		}
	}
	if err := sc.Err(); err != nil {
		return PowerReading{}, fmt.Errorf("dcmi power reading: %w", err)
	}
	if state != "" && state != "activated" {
		return PowerReading{}, fmt.Errorf("%w (state %q)", ErrPowerInactive, state)
	}
	if !p.HaveInstant && !p.HaveAvg {
		return PowerReading{}, fmt.Errorf("dcmi power reading: no power value in the output (%.80q)", out)
	}
	return p, nil
}

// parseQuantity parses "220 Watts" or "00000005 Seconds." with the given
// unit (singular, lower case), into a finite non-negative number.
func parseQuantity(s, unit string) (float64, error) {
	f := strings.Fields(s)
	if len(f) != 2 || !strings.HasPrefix(strings.ToLower(strings.TrimRight(f[1], ".")), unit) {
		return 0, fmt.Errorf("%q: want a number of %ss", s, unit)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q: want a non-negative number of %ss", s, unit)
	}
	return v, nil
}
